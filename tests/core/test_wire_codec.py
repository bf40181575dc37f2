"""The lanes' JSON codec (`upstreams.wire`): orjson on the hot path, and a line means exactly what the
standard library's `json` makes of it, including what orjson would read or write differently."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from toolreel.upstreams.wire import BadMessage, encode_json, parse_line

JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**80), max_value=2**80)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=20,
)


def _same(a: Any, b: Any) -> bool:
    """Equal, and of the same types all the way down (an int read as a float would compare equal)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


@given(JSON_VALUES)
def test_a_line_reads_as_json_reads_it_and_is_written_back_to_the_same_value(value: Any) -> None:
    line = json.dumps(value, ensure_ascii=False).encode()
    read = parse_line(line)
    assert _same(read, json.loads(line))
    assert _same(json.loads(encode_json(read)), read)


@pytest.mark.parametrize(
    "line",
    [
        b'{"id":18446744073709551616}',  # past 64 bits: orjson would read a float
        b'{"id":-9223372036854775809}',
        b'{"n":123456789012345678901234567890}',
        b'{"s":"12345678901234567890 in a string"}',
    ],
)
def test_integers_past_64_bits_stay_exact_integers(line: bytes) -> None:
    assert _same(parse_line(line), json.loads(line))
    assert encode_json(parse_line(line)) == line


def test_nan_and_infinity_are_written_back_as_they_came() -> None:
    line = b"[NaN,Infinity,-Infinity,1e400]"
    assert encode_json(parse_line(line)) == b"[NaN,Infinity,-Infinity,Infinity]"


def test_a_lone_surrogate_is_kept_and_written_back_as_its_escape() -> None:
    line = b'{"text":"cut \\ud83d"}'
    value = parse_line(line)
    assert value == {"text": "cut \ud83d"}
    assert encode_json(value) == line


def test_what_is_not_json_is_refused_in_json_s_words() -> None:
    with pytest.raises(BadMessage) as caught:
        parse_line(b'{"a":')
    assert caught.value.code == -32700
    assert "Expecting value" in caught.value.message


def test_a_line_past_the_depth_limit_is_refused_naming_its_id_when_json_reads_it() -> None:
    line = b'{"jsonrpc":"2.0","id":7,"params":' + b"[" * 200 + b"]" * 200 + b"}"
    with pytest.raises(BadMessage) as caught:
        parse_line(line)
    assert caught.value.code == -32600
    assert caught.value.request_id == 7


def test_keys_that_are_not_strings_are_written_as_json_writes_them() -> None:
    assert encode_json({1: "a", "b": (1, 2)}) == b'{"1":"a","b":[1,2]}'
