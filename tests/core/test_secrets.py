"""Secret redaction: by key, by known value inside strings, at any depth, never mutating the input."""

from __future__ import annotations

import copy
import io
import json
import logging
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toolreel.core.model import StepKind, StepRecord, StepStatus
from toolreel.core.secrets import (
    REDACTED,
    LogRedaction,
    Redactor,
    is_redacted,
    is_secret_key,
    redact_logs,
    url_secrets,
)

FAST = settings(max_examples=200, deadline=None)


@pytest.mark.parametrize(
    "key",
    ["password", "Password", "passwd", "api_key", "apiKey", "APIKey", "X-Api-Key", "apikey", "Authorization", "auth",
     "client_secret", "clientSecret", "accessToken", "refresh_token", "session_token", "sessionId", "Cookie",
     "Set-Cookie", "private_key", "AWS_SECRET_ACCESS_KEY", "GITHUB_TOKEN", "token", "credentials", "secret"],
)  # fmt: skip
def test_secret_looking_keys(key: str) -> None:
    assert is_secret_key(key)


@pytest.mark.parametrize(
    "key",
    ["max_tokens", "maxTokens", "token_count", "tokens_used", "input_tokens", "total_tokens", "tokenizer", "author",
     "authored_by", "nextPageToken", "page_token", "progressToken", "auth_type", "secret_name", "token_type",
     "keyboard", "passage", "monkey", "description", "key", "path"],
)  # fmt: skip
def test_keys_that_only_mention_a_secret_word_are_kept(key: str) -> None:
    assert not is_secret_key(key)


def test_values_under_secret_keys_are_replaced_whole_at_any_depth() -> None:
    value = {
        "headers": {"Authorization": "Bearer abc", "Accept": "application/json"},
        "items": [{"name": "a", "token": "t-1"}, {"name": "b", "credentials": {"user": "bob", "password": "pw"}}],
        "usage": {"max_tokens": 100, "input_tokens": 12},
    }
    redacted, paths = Redactor().redact(value)
    assert redacted == {
        "headers": {"Authorization": REDACTED, "Accept": "application/json"},
        "items": [{"name": "a", "token": REDACTED}, {"name": "b", "credentials": REDACTED}],
        "usage": {"max_tokens": 100, "input_tokens": 12},
    }
    assert paths == ("$.headers.Authorization", "$.items[0].token", "$.items[1].credentials")


def test_known_values_are_replaced_inside_longer_strings() -> None:
    redactor = Redactor(["Bearer sk-live-0123456789", "hunter22", "abc"])
    value = {"log": ["connected with sk-live-0123456789 ok", "pw=hunter22;pw2=hunter22"], "note": "abc is short"}
    redacted, paths = redactor.redact(value)
    log = [f"connected with {REDACTED} ok", f"pw={REDACTED};pw2={REDACTED}"]
    assert redacted == {"log": log, "note": "abc is short"}
    assert paths == ("$.log[0]", "$.log[1]")
    header, _ = redactor.redact({"h": "Bearer sk-live-0123456789"})
    assert header == {"h": REDACTED}  # the whole header value, not "Bearer «redacted»"


def test_paths_quote_keys_that_are_not_identifiers() -> None:
    _, paths = Redactor(["s3cr3t-value"]).redact({"x-api-key": "k", "a b": ["s3cr3t-value"]})
    assert paths == ('$["x-api-key"]', '$["a b"][0]')


def test_null_booleans_and_empty_values_under_secret_keys_are_kept() -> None:
    value = {"password": None, "token": "", "auth": False, "secret": REDACTED}
    redacted, paths = Redactor().redact(value)
    assert redacted is value and paths == ()


def test_nothing_to_redact_returns_the_same_object() -> None:
    value = {"a": [1, {"b": "text", "max_tokens": 5}], "c": None}
    redacted, paths = Redactor(["not-present-value"]).redact(value)
    assert redacted is value and paths == ()


json_values = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=20), st.just("xx-SECRET-xx")),
    lambda children: st.one_of(
        st.lists(children, max_size=4),
        st.dictionaries(st.sampled_from(["a", "token", "max_tokens", "Password", "b"]), children, max_size=4),
    ),
    max_leaves=16,
)


@FAST
@given(json_values)
def test_redaction_never_mutates_and_leaves_no_secret(value: Any) -> None:
    before = copy.deepcopy(value)
    redacted, paths = Redactor(["SECRET"]).redact(value)
    assert value == before
    assert "SECRET" not in repr(redacted)
    assert bool(paths) == (redacted != value)
    assert is_redacted(redacted) == bool(paths) or is_redacted(value)


def test_is_redacted_finds_redacted_material_anywhere() -> None:
    assert is_redacted(REDACTED)
    assert is_redacted({"a": [f"Bearer {REDACTED}"]})
    assert not is_redacted({"a": ["Bearer x", 1, None]})


_WORDS = st.sampled_from(["message", "apiKey", "password", "name", "max_tokens", "s3cr3t-value-42", "hello", "id"])
_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | _WORDS | st.text(max_size=12),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_WORDS | st.text(max_size=8), inner, max_size=4),
    max_leaves=20,
)


@settings(max_examples=300, deadline=None)
@given(_VALUES)
def test_the_quick_check_never_clears_a_value_that_holds_a_secret(value: Any) -> None:
    redactor = Redactor(["s3cr3t-value-42", 'quote"d-secret'])
    plain = Redactor(["s3cr3t-value-42"])
    for each in (redactor, plain):
        if not each.might_hold_secrets(value):
            redacted, paths = each.redact(value)
            assert redacted is value and paths == ()


def test_the_quick_check_clears_ordinary_values_and_flags_secrets() -> None:
    redactor = Redactor(["s3cr3t-value-42"])
    ordinary = {"content": [{"type": "text", "text": "Echo: hello"}], "isError": False}
    assert not redactor.might_hold_secrets([{"message": "hello"}, ordinary])
    assert redactor.might_hold_secrets({"apiKey": "x"})
    assert redactor.might_hold_secrets({"note": "uses s3cr3t-value-42 inside"})
    assert Redactor(['with "quotes" inside']).might_hold_secrets({"message": "hello"})  # cannot vouch: says maybe


def test_a_value_redacted_by_key_is_redacted_wherever_it_reappears() -> None:
    redactor = Redactor()
    first, _ = redactor.redact({"api_key": "sk-copied-0001"})
    assert first == {"api_key": REDACTED}
    copied, paths = redactor.redact({"copy": "sk-copied-0001", "note": "has sk-copied-0001 inside"})
    assert copied == {"copy": REDACTED, "note": f"has {REDACTED} inside"}
    assert paths == ("$.copy", "$.note")
    short, _ = redactor.redact({"token": "abc"})  # too short to look for everywhere
    assert short == {"token": REDACTED} and redactor.redact({"x": "abc"})[0] == {"x": "abc"}


@pytest.mark.parametrize(
    "ref", ["@login_1.session_token", "@input.api_key", "Bearer {{@login_1.token}}", "{{@a.b}}:{{@c.d}}"]
)
def test_a_ref_under_a_secret_key_is_structure_and_is_kept(ref: str) -> None:
    value = {"session_token": ref}
    assert Redactor().redact(value) == (value, ())


@pytest.mark.parametrize("value", ["@Passw0rd", "my password is {{@x.y}} and more words here"])
def test_a_secret_that_only_looks_like_a_ref_is_redacted(value: str) -> None:
    assert Redactor().redact({"password": value})[0] == {"password": REDACTED}


def test_json_inside_a_text_item_is_redacted_inside() -> None:
    text = '{"user": "ada", "password": "pw-in-text-0001"}'
    result = {"content": [{"type": "text", "text": text}]}
    redacted, paths = Redactor().redact(result)
    assert json.loads(redacted["content"][0]["text"]) == {"user": "ada", "password": REDACTED}
    assert paths == ("$.content[0].text",)
    assert Redactor().redact({"text": '{"broken": "password'}) == ({"text": '{"broken": "password'}, ())


def _large(document: dict[str, Any], **dump: Any) -> str:
    text = json.dumps({**document, "padding": "x" * (1 << 20)}, **dump)
    assert len(text) > 1 << 20  # past the size the redactor parses: it scans
    return text


LARGE_DOCUMENT: dict[str, Any] = {
    "items": [{"id": 1, "auth": {"user": "ada", "password": "pw-object-0001"}}, {"token": 123456}],
    "quoted": 'she wrote \\"token\\" and "secret" here',  # key words in a value, escaped quotes around them
    "kept": {"password": None, "secret": True, "api_key": "", "session_token": "@login_1.token"},
    "counters": {"max_tokens": 5, "next_page_token": "p-0001", "token_count": 3},
    "password": "pw-top-level-0001",
    'escaped "api_key"': "pw-escaped-key-0001",
}


@pytest.mark.parametrize("dump", [{}, {"indent": 2}, {"ensure_ascii": False, "separators": (",", ":")}])
def test_a_json_text_past_1_mib_is_redacted_by_key_as_a_parsed_one_is(dump: dict[str, Any]) -> None:
    text = _large(LARGE_DOCUMENT, **dump)
    redactor = Redactor()
    redacted, paths = redactor.redact(text)
    assert isinstance(redacted, str) and paths == ("$",)
    assert json.loads(redacted) == Redactor().clean(json.loads(text))
    assert "pw-" not in redacted.replace("p-0001", "")
    if "indent" not in dump:  # only the secret values change: the rest of the text is kept as it was
        expected = text
        for secret in (
            {"user": "ada", "password": "pw-object-0001"},
            "pw-top-level-0001",
            "pw-escaped-key-0001",
            123456,
        ):
            expected = expected.replace(json.dumps(secret, **dump), json.dumps(REDACTED, ensure_ascii=False))
        assert redacted == expected
    assert redactor.redact({"copied": "pw-top-level-0001"})[0] == {"copied": REDACTED}  # learned, as by a parse


def test_json_text_held_in_a_string_of_a_large_text_is_redacted_inside() -> None:
    text = _large({"body": json.dumps({"user": "ada", "password": "pw-nested-0001"})})
    cleaned = Redactor().clean(text)
    assert isinstance(cleaned, str)
    redacted = json.loads(cleaned)
    assert json.loads(redacted["body"]) == {"user": "ada", "password": REDACTED}


@pytest.mark.parametrize("text", ['{"user": "ada", "password": "pw-cut-0001', '\n {"password": "pw-lead-0001"}'])
def test_json_text_cut_off_or_after_whitespace_is_redacted_by_key(text: str) -> None:
    redacted = Redactor().clean(text)
    assert isinstance(redacted, str) and "pw-" not in redacted and REDACTED in redacted


def test_free_text_loses_url_credentials_and_known_values() -> None:
    redactor = Redactor(["known-secret-0001"])
    line = "POST https://bob:hunter2@api.test/mcp?token=abc123&page=2 with known-secret-0001"
    assert redactor.redact_text(line) == (
        f"POST https://bob:{REDACTED}@api.test/mcp?token={REDACTED}&page=2 with {REDACTED}"
    )
    assert url_secrets("https://bob:hunter2@api.test/mcp?api_key=k1&page=2") == ["hunter2", "k1"]


def test_log_lines_leave_redacted() -> None:
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.addFilter(LogRedaction(Redactor(["header-secret-0001"])))
    logger = logging.getLogger("toolreel.test.redaction")
    logger.addHandler(handler)
    try:
        logger.warning("HTTP Request: POST %s (%s)", "http://h/mcp?token=t-0001", "Bearer header-secret-0001")
    finally:
        logger.removeHandler(handler)
    assert stream.getvalue() == f"HTTP Request: POST http://h/mcp?token={REDACTED} (Bearer {REDACTED})\n"


def test_a_step_row_is_redacted_in_every_column() -> None:
    record = StepRecord(
        execution_id="e",
        name="echo_1",
        seq=1,
        kind=StepKind.TOOL,
        status=StepStatus.FAILED,
        input={"token": "@login_1.token", "copy": "@echo_0.api_key"},
        resolved_input={"token": "tok-row-0001", "copy": "key-row-0001"},
        result={"content": [{"type": "text", "text": '{"api_key": "key-row-0001"}'}], "isError": True},
        error='{"api_key": "key-row-0001"} and tok-row-0001',
        is_error=True,
    )
    redactor = Redactor()
    redactor.redact({"api_key": "key-row-0001"})  # seen earlier under a secret key
    clean = redactor.step(record)
    assert clean.input == record.input
    assert clean.resolved_input == {"token": REDACTED, "copy": REDACTED}
    assert "row-0001" not in repr([clean.result, clean.error])
    assert clean.redacted == ("$.token", "$.copy")


def test_values_learned_across_compiled_batches_are_all_found() -> None:
    redactor = Redactor(["config-secret-0001"])
    learned = [f"learned-secret-{i:04d}" for i in range(100)]  # several batches, some still waiting
    for value in learned:
        redactor.redact({"token": value})
    text = " ".join([*learned, "config-secret-0001", "plain"])
    assert redactor.redact({"log": text})[0] == {"log": " ".join([REDACTED] * 101 + ["plain"])}
    assert redactor.might_hold_secrets({"x": learned[-1]}) and not redactor.might_hold_secrets({"x": "plain"})


def test_warnings_printed_without_logging_configured_leave_redacted(capsys: pytest.CaptureFixture[str]) -> None:
    """`toolreel run` configures no logging: Python's handler of last resort prints its warnings."""
    root = logging.getLogger()
    handlers, root.handlers = root.handlers, []
    redaction = redact_logs(Redactor(["run-secret-0001"]))
    try:
        logging.getLogger("toolreel.test.lastresort").warning("store refused a write of run-secret-0001")
    finally:
        root.handlers = handlers
        assert logging.lastResort is not None
        logging.lastResort.removeFilter(redaction)
    assert capsys.readouterr().err == f"store refused a write of {REDACTED}\n"
