"""Secret redaction before anything reaches the store (SPEC §3 "Secrets").

`Redactor.redact(value)` returns a copy in which values under secret-looking keys are replaced
whole by `REDACTED`, and known secret values (from the config's `env` and `headers`) are replaced
wherever they occur inside a string; it also returns the JSON paths of what it replaced. The input
is never mutated, and when nothing matches the very same object comes back (no copy).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from functools import lru_cache
from typing import Final

from toolreel.core.model import JSON

__all__ = ["REDACTED", "SECRET_KEY_RE", "Redactor", "is_redacted", "is_secret_key"]

REDACTED: Final = "«redacted»"
"""What a secret is stored as. Distinctive enough not to occur in real data, so `is_redacted` can trust it."""

# Matched against a key normalised to `_word_word_` (camelCase and separators split, lower case):
# `apiKey`, `X-Api-Key` and `API_KEY` all become `_api_key_`.
SECRET_KEY_RE: Final = re.compile(
    r"_(?:password|passwd|pwd|passphrase|secrets?|token|api_?key|private_?key|access_?key|secret_?key"
    r"|signing_?key|encryption_?key|client_?secret|authorization|authentication|auth|credentials?|cookies?|sessionid"
    r"|session_(?:id|key|token)|bearer|jwt)_"
)
# Keys that mention a secret word but hold no secret: counters and settings (`max_tokens`,
# `token_count`, `auth_type`, `secret_name`) and the pagination/progress tokens that workflows
# must be able to pass between steps (`next_page_token`, `progressToken`).
_NOT_SECRET_RE: Final = re.compile(
    r"^_(?:max|min|num|total|n)_"
    r"|_(?:page|next|prev|previous|continuation|sync|cursor|pagination|resume|progress)_token_"
    r"|_(?:count|counts|limit|limits|ids|type|types|usage|used|url|uri|endpoint|method|mode|scheme|provider"
    r"|required|enabled|length|len|expires|expiry|expiration|ttl|name|file|path|env|var|header)_$"
)
_CAMEL_RE: Final = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
_SEPARATORS_RE: Final = re.compile(r"[^a-z0-9]+")
# An Authorization-style value: the scheme is public, the credentials after it are the secret.
_SCHEME_RE: Final = re.compile(r"^(?:bearer|basic|token|digest|bot|apikey)\s+(\S.*)$", re.IGNORECASE | re.DOTALL)
_IDENTIFIER_RE: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# A word every SECRET_KEY_RE match contains, looked for anywhere in a JSON text (so also in values:
# the check may say "maybe" too often, never "no" wrongly).
_KEY_WORDS_RE: Final = re.compile(r"pass|pwd|secret|token|key|auth|credential|cookie|session|bearer|jwt", re.IGNORECASE)


@lru_cache(maxsize=4096)
def is_secret_key(key: str) -> bool:
    """True when a value stored under `key` should be redacted (`password`, `apiKey`, not `max_tokens`)."""
    normal = "_" + "_".join(_SEPARATORS_RE.split(_CAMEL_RE.sub("_", key).lower())) + "_"
    normal = re.sub(r"_+", "_", normal)
    return SECRET_KEY_RE.search(normal) is not None and _NOT_SECRET_RE.search(normal) is None


def is_redacted(value: JSON) -> bool:
    """True when `value` holds redacted material anywhere (a whole value or a substring)."""
    if isinstance(value, str):
        return REDACTED in value
    if isinstance(value, Mapping):
        return any(is_redacted(item) for item in value.values())
    if isinstance(value, list | tuple):
        return any(is_redacted(item) for item in value)
    return False


class Redactor:
    """Replaces secrets in JSON values: by key anywhere, and known literal values inside strings.

    Known values shorter than `min_length` are ignored: replacing `true` or `8080` inside every
    string would destroy data without protecting anything.
    """

    def __init__(self, secret_values: Iterable[str] = (), *, min_length: int = 4) -> None:
        values: set[str] = set()
        for value in secret_values:
            values.add(value)
            scheme = _SCHEME_RE.match(value.strip())
            if scheme is not None:
                values.add(scheme.group(1).strip())
        kept = sorted((v for v in values if len(v) >= min_length and v != REDACTED), key=len, reverse=True)
        # Longest first, so `Bearer abc` is replaced whole rather than leaving `Bearer ` behind.
        self._pattern: re.Pattern[str] | None = re.compile("|".join(map(re.escape, kept))) if kept else None
        # The quick check reads JSON text: it can only vouch for values JSON writes as they are.
        self._checkable = all(json.dumps(v, ensure_ascii=False)[1:-1] == v for v in kept)

    def might_hold_secrets(self, value: JSON) -> bool:
        """A quick, conservative check: False means `redact(value)` would change nothing.

        One JSON dump and two scans instead of a walk: every secret key contains one of a few
        words, and known values appear verbatim in the JSON text (see `_checkable`)."""
        if not self._checkable:
            return True
        try:
            text = json.dumps(value, ensure_ascii=False)
        except (TypeError, ValueError):
            return True
        if _KEY_WORDS_RE.search(text) is not None:
            return True
        return self._pattern is not None and self._pattern.search(text) is not None

    def redact(self, value: JSON) -> tuple[JSON, tuple[str, ...]]:
        """(`value` with its secrets replaced, the JSON paths replaced); `value` itself if none."""
        paths: list[str] = []
        return self._redact(value, "$", paths), tuple(paths)

    def _redact(self, value: JSON, path: str, paths: list[str]) -> JSON:
        if isinstance(value, str):
            return self._redact_str(value, path, paths)
        if isinstance(value, Mapping):
            return self._redact_mapping(value, path, paths)
        if isinstance(value, list):
            out: list[JSON] | None = None
            for i, item in enumerate(value):
                new = self._redact(item, f"{path}[{i}]", paths)
                if new is not item:
                    out = list(value) if out is None else out
                    out[i] = new
            return value if out is None else out
        return value

    def _redact_mapping(self, value: Mapping[str, JSON], path: str, paths: list[str]) -> JSON:
        out: dict[str, JSON] | None = None
        for key, item in value.items():
            where = _child_path(path, key)
            if _holds_secret(item) and isinstance(key, str) and is_secret_key(key):
                new: JSON = REDACTED
                paths.append(where)
            else:
                new = self._redact(item, where, paths)
            if new is not item:
                out = dict(value) if out is None else out
                out[key] = new
        return value if out is None else out

    def _redact_str(self, value: str, path: str, paths: list[str]) -> str:
        if self._pattern is None or self._pattern.search(value) is None:
            return value
        paths.append(path)
        return self._pattern.sub(REDACTED, value)


def _holds_secret(value: JSON) -> bool:
    """Null, booleans, empty strings and values already redacted reveal nothing: keep them."""
    return not (value is None or isinstance(value, bool) or value == "" or value == REDACTED)


def _child_path(path: str, key: object) -> str:
    text = str(key)
    if _IDENTIFIER_RE.fullmatch(text):
        return f"{path}.{text}"
    return f"{path}[{json.dumps(text, ensure_ascii=False)}]"
