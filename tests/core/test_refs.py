"""The ref grammar and resolver: literals stay literals, refs resolve at any depth, errors explain."""

from __future__ import annotations

import copy
import json
import re
import time
from typing import Any

import mcp_types
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jsonpath_ng.ext.parser import parse as jsonpath_parse

from toolreel.core.errors import RefError
from toolreel.core.refs import (
    RESERVED_ROOTS,
    STEP_NAME_RE,
    MappingScope,
    Ref,
    Scope,
    escape_literal,
    evaluate,
    format_ref,
    is_ref,
    parse_ref,
    ref_roots,
    refs_in,
    resolve,
    step_name_for,
    step_output,
    unescape_literal,
)

FAST = settings(max_examples=200, deadline=None)
INTERPOLATION_START = re.compile(r"\{\{[ \t]*@")

LIST_OUTPUT = {"items": [{"id": 1, "state": "open"}, {"id": 2, "state": "closed"}, {"id": 3, "state": "open"}]}
SCOPE = MappingScope(
    steps={"list_issues": LIST_OUTPUT, "read_file_1": "hello", "count_1": 3, "meta_1": {"a": 1, "b": None, "c": [1]}},
    failed={"broken_1": "server 'fs' crashed"},
    skipped={"maybe_1"},
    inputs={"repo": "owner/name", "limit": 10, "flags": {"dry": True}},
)
EMPTY = MappingScope()


def _json_text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def _is_literal(text: str) -> bool:
    return parse_ref(text) is None and not text.startswith("@@") and not INTERPOLATION_START.search(text)


# --------------------------------------------------------------------------- strategies

words = st.text(alphabet="abcdefghijklmnopqrstuvwxyz_0123456789", min_size=1, max_size=8)
emails = st.builds(lambda user, host: f"{user}@{host}.com", words, words)
at_phrases = st.builds(lambda w, rest: f"@{w} {rest}", words, st.text(max_size=20))
ref_like_alphabet = st.text(alphabet="@{} \t.[]*?()'\"\\:,-ab_x01", max_size=24)
literal_texts = st.one_of(st.text(), emails, at_phrases, ref_like_alphabet).filter(_is_literal)
json_scalars = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False, allow_infinity=False), literal_texts
)
json_values = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False, allow_infinity=False), st.text()),
    lambda children: st.one_of(
        st.lists(children, max_size=4), st.dictionaries(st.text(max_size=6), children, max_size=4)
    ),
    max_leaves=12,
)

# (as written, what it resolves to in SCOPE)
REF_CASES = [
    ("@list_issues", LIST_OUTPUT),
    ("@list_issues.items[1].id", 2),
    ("@list_issues.items[-1].state", "open"),
    ('@list_issues["items"][0]["id"]', 1),
    ("@list_issues.items[*].id", [1, 2, 3]),
    ("@list_issues.items[?(@.state == 'open')].id", [1, 3]),
    ("@input.repo", "owner/name"),
    ("@input.flags.dry", True),
    ("@read_file_1", "hello"),
    ("@maybe_1.anything", None),
    ("@@channel", "@channel"),
    ("Triaged {{@count_1}} issues in {{ @input.repo }}", "Triaged 3 issues in owner/name"),
    ("ids={{@list_issues.items[*].id}}", "ids=[1,2,3]"),
]
leaves = st.one_of(json_scalars.map(lambda v: (v, v)), st.sampled_from(REF_CASES))
trees = st.recursive(
    leaves,
    lambda children: st.one_of(
        st.lists(children, max_size=4).map(lambda pairs: ([w for w, _ in pairs], [r for _, r in pairs])),
        st.dictionaries(st.text(max_size=6), children, max_size=4).map(
            lambda d: ({k: w for k, (w, _) in d.items()}, {k: r for k, (_, r) in d.items()})
        ),
    ),
    max_leaves=20,
)


# --------------------------------------------------------------------------- properties


@FAST
@given(literal_texts)
def test_a_string_that_is_not_a_ref_resolves_to_itself(text: str) -> None:
    assert resolve(text, SCOPE) == text
    assert refs_in(text) == []


@FAST
@given(st.one_of(st.text(), ref_like_alphabet, emails, at_phrases, st.sampled_from([w for w, _ in REF_CASES])))
def test_an_escaped_literal_reads_back_as_itself(text: str) -> None:
    escaped = escape_literal(text)
    assert unescape_literal(escaped) == text
    assert refs_in(escaped) == []
    assert resolve(escaped, EMPTY) == text


@FAST
@given(trees)
def test_refs_resolve_at_any_depth_and_the_input_is_not_mutated(pair: tuple[Any, Any]) -> None:
    written, expected = pair
    before = copy.deepcopy(written)
    assert resolve(written, SCOPE) == expected
    assert written == before
    assert LIST_OUTPUT["items"][0] == {"id": 1, "state": "open"}


@FAST
@given(json_values)
def test_a_whole_string_ref_keeps_the_value_and_its_type(value: Any) -> None:
    scope = MappingScope(steps={"s_1": {"v": value}}, inputs={"v": value})
    assert resolve("@input.v", scope) is value
    assert resolve("@s_1.v", scope) is value
    assert resolve({"deep": ["@s_1.v"]}, scope) == {"deep": [value]}


@FAST
@given(json_values)
def test_interpolation_writes_any_json_value_as_text(value: Any) -> None:
    scope = MappingScope(inputs={"v": value})
    assert resolve("<{{@input.v}}>", scope) == f"<{_json_text(value)}>"


@pytest.mark.parametrize(
    ("value", "text"),
    [("abc", "abc"), (42, "42"), (1.5, "1.5"), (True, "true"), (False, "false"), (None, "null"),
     ([1, "a"], '[1,"a"]'), ({"k": "é"}, '{"k":"é"}'), ("{{@input.v}}", "{{@input.v}}")],
)  # fmt: skip
def test_interpolation_of_each_json_type(value: Any, text: str) -> None:
    assert resolve("v={{@input.v}}!", MappingScope(inputs={"v": value})) == f"v={text}!"


def test_an_interpolation_alone_is_text_not_the_value() -> None:
    assert resolve("{{@input.limit}}", SCOPE) == "10"


# --------------------------------------------------------------------------- grammar


@pytest.mark.parametrize(
    "text",
    ["alice@example.com", "@channel hi", "@ foo", "email me @ 5", "a@b", "@", "@1abc", "@x.", "@x[", "@x.a .b",
     "@x[ 0 ]", "@x...", "@x[?(@.a >)]", "{{@ x}}", "{{@x y}}", "{{@x", "@x}}", "@user's", "@here!"],
)  # fmt: skip
def test_literals_are_not_refs(text: str) -> None:
    assert not is_ref(text)
    assert resolve(text, EMPTY) == text


@pytest.mark.parametrize(
    ("text", "root", "path"),
    [("@channel", "channel", None), ("@input.repo", "input", "repo"), ("@item", "item", None),
     ("@index", "index", None), ("@list_issues.items[0].id", "list_issues", "items[0].id"),
     ("@x[2]", "x", "[2]"), ('@x["a b"].c', "x", '["a b"].c'), ("@x.*", "x", "*"), ("@x..id", "x", "..id"),
     ("@x.items[?(@.n > 1)]", "x", "items[?(@.n > 1)]"), ("@x.content-type", "x", "content-type"),
     ("@_", "_", None), ("@x[1:3]", "x", "[1:3]"), ("@x[0,2]", "x", "[0,2]")],
)  # fmt: skip
def test_parse_ref_splits_root_and_path(text: str, root: str, path: str | None) -> None:
    assert parse_ref(text) == Ref(root=root, path=path, text=text)


def test_refs_in_lists_every_ref_in_order_and_ref_roots_names_them() -> None:
    value = {"a": "@input.repo", "b": ["x {{@list_issues.items[0]}} {{@@not}} {{@count_1}}", {"c": "@item.id"}],
             "d": "@@literal {{@index}}", "e": "alice@example.com"}  # fmt: skip
    assert [ref.text for ref in refs_in(value)] == [
        "@input.repo", "@list_issues.items[0]", "@count_1", "@item.id", "@index"
    ]  # fmt: skip
    assert ref_roots(value) == {"input", "list_issues", "count_1", "item", "index"}


def test_escapes_and_literals() -> None:
    assert escape_literal("@channel") == "@@channel"
    assert escape_literal("@@x") == "@@@x"
    assert escape_literal("@channel hi") == "@channel hi"
    assert escape_literal("a {{@x}} b") == "a {{@@x}} b"
    assert resolve("@@@x", EMPTY) == "@@x"
    assert resolve("@@{{@input.repo}}", SCOPE) == "@owner/name"


def test_format_ref_writes_refs_that_parse_back_to_the_same_keys() -> None:
    keys: list[str | int] = ["items", 0, "content-type x", 'q"\\', "where", "ok"]
    text = format_ref("step_1", keys)
    value: dict[str, Any] = {"items": [{"content-type x": {'q"\\': {"where": {"ok": 7}}}}]}
    assert resolve(text, MappingScope(steps={"step_1": value})) == 7


KEYS = ["a", "b", "0", "a-b", "x y"]
plain_keys = st.lists(st.one_of(st.sampled_from(KEYS), st.integers(-3, 3)), min_size=1, max_size=4)
addressable = st.recursive(
    st.one_of(st.none(), st.integers(), st.text(max_size=3)),
    lambda children: st.one_of(st.lists(children, max_size=4), st.dictionaries(st.sampled_from(KEYS), children)),
    max_leaves=16,
)


@FAST
@given(addressable, plain_keys)
def test_plain_paths_are_walked_with_the_semantics_of_jsonpath_ng(value: Any, keys: list[str | int]) -> None:
    ref = parse_ref(format_ref("s_1", ["v", *keys]))  # under "v": a null step output is null at any path
    assert ref is not None and ref.path is not None
    matches = [match.value for match in jsonpath_parse("$." + ref.path).find({"v": value})]
    scope = MappingScope(steps={"s_1": {"v": value}})
    if matches:
        assert evaluate(ref, scope) == matches[0]
    else:
        with pytest.raises(RefError, match=re.escape(ref.text)):
            evaluate(ref, scope)


# --------------------------------------------------------------------------- multi-match paths


def test_wildcards_and_filters_yield_lists() -> None:
    assert resolve("@list_issues.items[*].state", SCOPE) == ["open", "closed", "open"]
    assert resolve("@list_issues.items[?(@.id > 1)].id", SCOPE) == [2, 3]
    assert resolve("@list_issues..id", SCOPE) == [1, 2, 3]
    assert resolve("@list_issues.items[0:2].id", SCOPE) == [1, 2]
    assert resolve("@meta_1.*", SCOPE) == [1, None, [1]]


def test_a_filter_that_selects_nothing_is_an_empty_list_but_a_missing_container_is_an_error() -> None:
    assert resolve("@list_issues.items[?(@.state == 'merged')]", SCOPE) == []
    with pytest.raises(RefError, match=r"has no key `issues`; keys: items"):
        resolve("@list_issues.issues[*].id", SCOPE)


# --------------------------------------------------------------------------- errors


def _error(text: str, scope: Scope = SCOPE) -> RefError:
    with pytest.raises(RefError) as info:
        resolve({"arg": [text]}, scope)
    assert info.value.ref == text
    assert str(info.value).startswith(f"`{text}`")
    return info.value


def test_an_unknown_step_is_named_with_the_steps_that_exist() -> None:
    scope = MappingScope(steps={"list_directory_1": [], "read_file_1": "x"})
    message = str(_error("@read_fil_1.path", scope))
    assert message.startswith("`@read_fil_1.path` names no step; steps so far: list_directory_1, read_file_1")
    assert "did you mean @read_file_1?" in message
    assert "@input.<name>" in message and "'@@'" in message


def test_an_index_past_the_end_says_how_many_items_there_are() -> None:
    scope = MappingScope(steps={"list_dir_1": {"files": ["a", "b"]}})
    assert str(_error("@list_dir_1.files[3]", scope)) == "`@list_dir_1.files[3]`: `files` has 2 items (indexes 0–1)"


def test_a_missing_key_lists_the_keys_that_exist() -> None:
    scope = MappingScope(steps={"x_1": {"foo": {"a": 1, "b": 2, "c": 3}}})
    assert str(_error("@x_1.foo.bar", scope)) == "`@x_1.foo.bar`: `foo` has no key `bar`; keys: a, b, c"
    assert "the output of step x_1 has no key `nope`; keys: foo" in str(_error("@x_1.nope", scope))


def test_a_wrong_type_says_what_the_value_is() -> None:
    message = str(_error("@read_file_1.path"))
    assert message == "`@read_file_1.path`: the output of step read_file_1 is a string, not an object"
    assert str(_error("@meta_1.b.x")) == "`@meta_1.b.x`: `b` is null, not an object"
    assert str(_error("@meta_1.a[0]")) == "`@meta_1.a[0]`: `a` is a number, not a list"
    assert "index a list with [0]" in str(_error("@list_issues.items.0"))


def test_a_failed_step_has_no_output() -> None:
    message = str(_error("@broken_1.path"))
    assert message == "`@broken_1.path`: step broken_1 failed (server 'fs' crashed); a failed step has no output"


def test_an_unknown_input_names_the_declared_inputs() -> None:
    assert str(_error("@input.repos")) == "`@input.repos`: no input `repos`; declared inputs: repo, limit, flags"
    assert "`@input.flags` has no key `wet`; keys: dry" in str(_error("@input.flags.wet"))


def test_item_and_index_exist_only_inside_for_each() -> None:
    assert "only defined inside a for_each step" in str(_error("@item.id"))
    assert "only defined inside a for_each step" in str(_error("@index"))
    loop = MappingScope(item={"id": 7}, index=2, in_loop=True)
    assert resolve(["@item.id", "@index", "n{{@index}}"], loop) == [7, 2, "n2"]
    assert "`@item` has no key `name`; keys: id" in str(_error("@item.name", loop))


def test_evaluate_resolves_one_ref() -> None:
    assert evaluate(Ref("list_issues", "items[2].id", "@list_issues.items[2].id"), SCOPE) == 3


def test_a_skipped_step_gives_null_at_any_path() -> None:
    assert resolve({"a": "@maybe_1", "b": "@maybe_1.x[3].y", "c": "{{@maybe_1}}"}, SCOPE) == {
        "a": None, "b": None, "c": "null"
    }  # fmt: skip


# --------------------------------------------------------------------------- size


def test_a_10_mb_output_is_addressed_without_copying() -> None:
    big = {"items": [{"id": i, "text": "x" * 90} for i in range(100_000)]}
    scope = MappingScope(steps={"big_1": big})
    arguments = {"all": "@big_1", "items": "@big_1.items", "last": "@big_1.items[99999].id"}
    resolved = resolve(arguments, scope)
    assert resolved["all"] is big and resolved["items"] is big["items"] and resolved["last"] == 99999
    assert resolve(big, scope) is big  # a large literal with no refs comes back as is
    assert len(resolve("@big_1.items[*].id", scope)) == 100_000


def test_a_10_mb_text_result_is_parsed_once_into_its_value() -> None:
    big = {"rows": ["y" * 100] * 100_000}
    result = _wire(content=[mcp_types.TextContent(type="text", text=json.dumps(big))])
    assert step_output(result) == big
    text = "z" * 10_000_000
    assert resolve("<{{@t_1}}>", MappingScope(steps={"t_1": text})) == f"<{text}>"


# --------------------------------------------------------------------------- step outputs


def _wire(**fields: Any) -> dict[str, Any]:
    return mcp_types.CallToolResult(**fields).model_dump(by_alias=True, mode="json", exclude_none=True)


TEXT = mcp_types.TextContent
IMAGE = mcp_types.ImageContent(type="image", data="iVBORw0KGgo=", mime_type="image/png")


def test_structured_content_comes_first() -> None:
    result = _wire(content=[TEXT(type="text", text='{"a": 2}')], structured_content={"a": 1})
    assert step_output(result) == {"a": 1}


def test_text_that_parses_as_json_is_that_value() -> None:
    assert step_output(_wire(content=[TEXT(type="text", text='[1, {"b": null}]')])) == [1, {"b": None}]
    assert step_output(_wire(content=[TEXT(type="text", text="42")])) == 42
    several = [TEXT(type="text", text='{"id": 1}'), TEXT(type="text", text='{"id": 2}')]
    assert step_output(_wire(content=several)) == [{"id": 1}, {"id": 2}]


def test_one_text_that_is_not_json_is_that_string() -> None:
    assert step_output(_wire(content=[TEXT(type="text", text="hello world")])) == "hello world"
    assert step_output(_wire(content=[TEXT(type="text", text="NaN")])) == "NaN"


def test_other_content_is_the_list_of_items() -> None:
    image_only = _wire(content=[IMAGE])
    assert step_output(image_only) == [{"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"}]
    mixed = _wire(content=[TEXT(type="text", text="{}"), IMAGE])
    assert step_output(mixed) == mixed["content"]
    two_texts = _wire(content=[TEXT(type="text", text="a"), TEXT(type="text", text="b")])
    assert step_output(two_texts) == [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]
    assert step_output(_wire(content=[])) == []


def test_a_failed_result_has_no_output() -> None:
    with pytest.raises(RefError, match="isError"):
        step_output(_wire(content=[TEXT(type="text", text="boom")], is_error=True))


# --------------------------------------------------------------------------- step names


def test_step_names_follow_the_naming_rule() -> None:
    counts: dict[str, int] = {}
    tools = ["read_file", "get-tiny-image", "read_file", "get_tiny_image", "9lives", "input", "a.b/c", ""]
    names = [step_name_for(tool, counts) for tool in tools]
    assert names == ["read_file_1", "get_tiny_image_1", "read_file_2", "get_tiny_image_2", "_9lives_1", "input_1",
                     "a_b_c_1", "__1"]  # fmt: skip
    assert all(STEP_NAME_RE.fullmatch(name) and name not in RESERVED_ROOTS for name in names)


@FAST
@given(st.lists(st.text(max_size=12), max_size=8))
def test_step_names_are_unique_and_addressable(tools: list[str]) -> None:
    counts: dict[str, int] = {}
    names = [step_name_for(tool, counts) for tool in tools]
    assert len(set(names)) == len(names)
    for name in names:
        assert STEP_NAME_RE.fullmatch(name) and name not in RESERVED_ROOTS
        assert parse_ref("@" + name) == Ref(name, None, "@" + name)


# --------------------------------------------------------------------------- regex filters run in linear time


def test_a_catastrophic_regex_filter_answers_at_once() -> None:
    """`(a+)+$` backtracks exponentially on Python's `re` (26 characters: about 5 s, 40: hours); RE2 is
    linear (a 100,000-character text: milliseconds)."""
    for size in (26, 100_000):
        scope = MappingScope(steps={"rx": [{"s": "a" * size + "b"}, {"s": "aaa"}]})
        started = time.perf_counter()
        assert resolve('@rx[?(@.s =~ "(a+)+$")].s', scope) == ["aaa"]
        assert time.perf_counter() - started < 0.5, size


def test_a_regex_filter_re2_cannot_run_is_not_a_ref() -> None:
    assert parse_ref('@rx[?(@.s =~ "(?=a)b")].s') is None  # lookahead: RE2 has none
    assert parse_ref('@rx[?(@.s =~ "^a{3}$")].s') is not None
    assert resolve('@rx[?(@.s =~ "^a{3}$")].s', MappingScope(steps={"rx": [{"s": "aaa"}, {"s": "aaaa"}]})) == ["aaa"]


# --------------------------------------------------------------------------- a broken ref to a step that exists


@pytest.mark.parametrize(
    "text",
    [
        "@list_issues.",
        "@list_issues[",
        "@list_issues.items[0",
        "@list_issues.items[x]",
        "@list_issues..",
        "@list_issues .items",
        "@list_issues.items[?(@.id ==",
        '@list_issues["items"',
        "@list_issues.items[0]]",
        "@count_1 please",
        "@read_file_1/etc",
    ],
)
def test_a_string_starting_as_a_ref_to_an_existing_step_that_does_not_parse_is_an_error(text: str) -> None:
    with pytest.raises(RefError, match="is not a valid path") as caught:
        resolve({"deep": [{"value": text}]}, SCOPE)
    assert caught.value.ref is not None and caught.value.ref.startswith("@")


@pytest.mark.parametrize("text", ["@nobody.", "@channel hi", "@@list_issues.", "@list_issuesX.", "@nobody["])
def test_broken_looking_strings_that_name_no_step_stay_literals(text: str) -> None:
    assert resolve(text, SCOPE) == (text[1:] if text.startswith("@@") else text)
