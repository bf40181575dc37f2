"""What a hostile template or argument cannot do: run a backtracking regex, pass a malformed ref to a step off
as text, crash the loader with bytes that are not text; and what a large honest template can (10,000+ steps)."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from tests.gw import fixture_entry, text_of
from tests.inproc import gateway_in_process
from toolreel.core.errors import ExecutionError, RefError, TemplateError
from toolreel.core.refs import MappingScope, resolve
from toolreel.core.template_io import load_template_file, load_template_text, parse_template
from toolreel.replayer._inputs import bind_inputs

STEPS = {"list_1": {"items": [{"name": "a", "s": "ab"}, {"name": "b", "s": "cd"}]}}

# Each starts as a ref to the existing step list_1 and does not parse.
MALFORMED = [
    "@list_1.items[0",
    "@list_1 .items",
    "@list_1.items[0]]",
    "@list_1.items.",
    "@list_1..",
    '@list_1.items[?(@.s =~ "(?=a)")]',
    "@list_1.items[?(@.s == )]",
    '@list_1.items["a]',
    "@list_1[",
    "@list_1.items[0][",
    "@list_1.items[-]",
    "@list_1 please",
    "@list_1.items[?(@.s == 'x'",
    "{{@list_1.items[0}} and more",
    "see {{@list_1 .items}}",
]


@pytest.mark.parametrize("text", MALFORMED)
def test_a_malformed_ref_to_an_existing_step_is_an_error_naming_it(text: str) -> None:
    with pytest.raises(RefError, match="list_1"):
        resolve({"text": text}, MappingScope(steps=STEPS))
    assert resolve({"text": text.replace("list_1", "nosuch_1")}, MappingScope(steps=STEPS)) is not None


def test_a_ref_path_past_the_length_limit_is_refused_by_name() -> None:
    long_filter = " && ".join(f"@.s != 'x{i}'" for i in range(300))
    with pytest.raises(RefError, match="past the 2,048 a ref's path may have"):
        resolve(f"@list_1.items[?({long_filter})]", MappingScope(steps=STEPS))


def _template(steps: list[dict[str, Any]], inputs: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"name": "t", "inputs": inputs or {}, "steps": steps}


@pytest.mark.parametrize("text", MALFORMED)
def test_a_template_holding_a_malformed_ref_is_refused_when_saved(text: str) -> None:
    steps: list[dict[str, Any]] = [
        {"name": "list_1", "tool": "a__list"},
        {"name": "use", "tool": "a__use", "input": {"v": text}},
    ]
    with pytest.raises(TemplateError, match="list_1") as refused:
        parse_template(_template(steps))
    assert "input.v" in str(refused.value)


def test_an_input_pattern_runs_in_linear_time() -> None:
    template = parse_template(
        _template([{"name": "s", "tool": "a__b"}], {"word": {"type": "string", "pattern": "^(a+)+$"}})
    )
    started = time.perf_counter()
    with pytest.raises(ExecutionError, match="does not match"):
        bind_inputs(template, {"word": "a" * 5000 + "b"})
    assert time.perf_counter() - started < 0.5  # Python's re: seconds at 26 characters, doubling every two
    assert bind_inputs(template, {"word": "aaaa"}) == {"word": "aaaa"}


def test_an_input_pattern_re2_cannot_run_is_refused_when_saved() -> None:
    with pytest.raises(TemplateError, match="no lookahead"):
        parse_template(_template([{"name": "s", "tool": "a__b"}], {"w": {"type": "string", "pattern": "^(?!x)"}}))


def test_binary_and_non_utf8_template_files_are_named_errors(tmp_path: Path) -> None:
    binary = tmp_path / "t.bin"
    binary.write_bytes(b"name: t\nsteps: []\n\x00\x01\x02")
    with pytest.raises(TemplateError, match=r"t\.bin: byte 18 is NUL: a binary file"):
        load_template_file(binary)
    latin = tmp_path / "t.yaml"
    latin.write_bytes("name: t\ndescription: caf\xe9\nsteps: []\n".encode("latin-1"))
    with pytest.raises(TemplateError, match=r"t\.yaml: byte 24 \(0xe9\) is not UTF-8"):
        load_template_file(latin)


@pytest.mark.slow
def test_a_template_of_20000_steps_loads() -> None:
    steps = [
        {"name": f"s{i}", "tool": "a__b", "input": {"i": i, "prev": f"@s{i - 1}" if i else 0}} for i in range(20000)
    ]
    template = load_template_text(json.dumps(_template(steps)), source="big.json")
    assert len(template.steps) == 20000


@pytest.mark.slow
@pytest.mark.anyio
async def test_the_gateway_refuses_a_malformed_ref_when_no_valid_ref_is_there(tmp_path: Path) -> None:
    servers = {"feat": fixture_entry("features")}
    async with gateway_in_process(servers, db=f"sqlite:///{tmp_path / 's.db'}") as gw:
        assert text_of(await gw.client.call_tool("feat__echo", {"text": "first"})) == "first"
        for text in ("@echo_1 .x", "@echo_1[0", "{{@echo_1 .x}}"):
            refused = await gw.client.call_tool("feat__echo", {"text": text})
            assert refused.is_error and "echo_1" in text_of(refused) and "nothing was sent" in text_of(refused)
        kept = await gw.client.call_tool("feat__echo", {"text": "@nobody here"})
        assert text_of(kept) == "@nobody here"
