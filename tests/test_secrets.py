"""Secret redaction: by key, by known value inside strings, at any depth, never mutating the input."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toolreel.core.secrets import REDACTED, Redactor, is_redacted, is_secret_key

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
