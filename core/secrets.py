"""Secret redaction: the one function every stored row, export and log line passes through (SPEC §3 "Secrets").

`Redactor.redact(value)` returns a copy in which values under secret-looking keys are replaced
whole by `REDACTED`, known secret values (the config's `env` and `headers`, secret inputs) are replaced
wherever they occur inside a string, and JSON held in a string (a result's text item) is redacted
inside; it also returns the JSON paths of what it replaced. The input is never mutated, and when
nothing matches the very same object comes back (no copy).

A value once redacted under a secret key is *learned*: wherever it reappears later (copied by a ref
into an ordinary key, echoed by another tool) it is redacted too. A ref written under a secret key
(`session_token: "@login_1.session_token"`) is structure, not a secret: it is kept as written.
`Redactor.step` / `Redactor.fields` apply the same rules to whole rows; `redact_text` to log lines.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import os
import re
import threading
import weakref
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Final

from toolreel.core._ref_grammar import is_ref, parse_ref, split_template
from toolreel.core._secret_scan import KEY_WORDS, needs_parse, redact_keys
from toolreel.core.model import JSON, StepRecord

__all__ = [
    "REDACTED",
    "SECRET_KEY_RE",
    "LogRedaction",
    "Redactor",
    "is_redacted",
    "is_secret_key",
    "looks_like_ref",
    "redact_logs",
    "url_secrets",
]

REDACTED: Final = "«redacted»"
KEY_HASH_ENV: Final = "TOOLREEL_KEY_HASH_SECRET"
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
# Searched in lower-cased text: on 30 MB, lower() and a case-sensitive scan take 0.09 s, IGNORECASE 2.5 s.
_KEY_WORDS_RE: Final = re.compile("|".join(KEY_WORDS))
# Learned values (redacted under a secret key, then looked for everywhere) need some length: a
# 3-character password would otherwise turn every "abc" of every later row into «redacted».
LEARN_MIN_LENGTH: Final = 6
# A process that sees many distinct secrets stops learning past this many (the regex grows with them).
LEARN_MAX: Final = 1024
# Learned values are looked for one by one until this many wait, then compiled into the regex with the
# rest: compiling is what costs (150 ms for 1,024 values), so it happens once per batch, not per value.
_LEARN_BATCH: Final = 32
# JSON inside a string is parsed and walked up to this size; a bigger text is scanned for secret-named keys
# (`_secret_scan`), in one linear pass and without the memory of a parsed copy.
_JSON_TEXT_MAX: Final = 1 << 20
# What JSON.parse and json.loads take as the start of a text holding an object or an array.
_JSON_START_RE: Final = re.compile(r"[ \t\n\r]*[{\[]")
# Literal text around `{{@ref}}` placeholders that still makes a string structure (`Bearer {{@login.token}}`).
_REF_LITERAL_MAX: Final = 16
# Credentials in URLs (log lines): `scheme://user:password@host` and `?token=...` query parameters.
_URL_USERINFO_RE: Final = re.compile(r"(?<=://)([^/\s:@]+):([^/\s@]+)@")
_URL_PARAM_RE: Final = re.compile(r"([?&;])([^=&;#\s]+)=([^&;#\s]+)")


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
    """Replaces secrets in JSON values: by key anywhere, known literal values inside strings, JSON in text.

    Known values shorter than `min_length` are ignored: replacing `true` or `8080` inside every
    string would destroy data without protecting anything. Thread-safe: stores call it from worker
    threads, and learning swaps one immutable matcher.
    """

    def __init__(self, secret_values: Iterable[str] = (), *, min_length: int = 4) -> None:
        self._min_length = min_length
        self._lock = threading.Lock()
        self._values: set[str] = set()
        self._learned = 0
        self._matcher = _Matcher(None)
        self._pending: tuple[str, ...] = ()  # learned, not yet in the regex
        # Records `step` returned, by id, held weakly: a record that died takes its entry (and id) with it.
        self._recent: weakref.WeakValueDictionary[int, StepRecord] = weakref.WeakValueDictionary()
        self.add(secret_values)

    def add(self, secret_values: Iterable[str]) -> None:
        """Known secret values from now on (config values, secret inputs): replaced wherever they occur."""
        with self._lock:
            if self._add_locked(secret_values):
                self._rebuild_locked()

    def _add_locked(self, secret_values: Iterable[str]) -> bool:
        before = len(self._values)
        for value in secret_values:
            candidates = [value]
            scheme = _SCHEME_RE.match(value.strip())
            if scheme is not None:
                candidates.append(scheme.group(1).strip())
            self._values.update(v for v in candidates if len(v) >= self._min_length and v != REDACTED)
        return len(self._values) != before

    def _rebuild_locked(self) -> None:
        self._values.update(self._pending)
        self._pending = ()
        kept = sorted(self._values, key=len, reverse=True)
        # Longest first, so `Bearer abc` is replaced whole rather than leaving `Bearer ` behind.
        self._matcher = _Matcher(re.compile("|".join(map(re.escape, kept))) if kept else None, _checkable(kept))

    def _learn(self, value: JSON) -> None:
        """Remember the strings of a value redacted by key, so a copy of it elsewhere is redacted too."""
        found = [v for v in _strings(value) if len(v) >= LEARN_MIN_LENGTH and not self._matcher.knows(v)]
        if not found:
            return
        with self._lock:
            if self._learned >= LEARN_MAX:
                return
            self._learned += len(found)
            self._pending = tuple(dict.fromkeys((*self._pending, *found)))
            if len(self._pending) >= _LEARN_BATCH:
                self._rebuild_locked()
                return
            old = self._matcher
            pending = tuple(sorted(self._pending, key=len, reverse=True))
            self._matcher = _Matcher(old.pattern, old.checkable and _checkable(pending), pending)

    def might_hold_secrets(self, value: JSON) -> bool:
        """A quick, conservative check: False means `redact(value)` would change nothing.

        One JSON dump and two scans instead of a walk: every secret key contains one of a few
        words, and known values appear verbatim in the JSON text (see `_rebuild_locked`)."""
        matcher = self._matcher
        if not matcher.checkable:
            return True
        try:
            text = json.dumps(value, ensure_ascii=False)
        except (TypeError, ValueError):
            return True
        if _KEY_WORDS_RE.search(text.lower()) is not None:
            return True
        return matcher.found(text)

    def redact(self, value: JSON) -> tuple[JSON, tuple[str, ...]]:
        """(`value` with its secrets replaced, the JSON paths replaced); `value` itself if none."""
        paths: list[str] = []
        return self._redact(value, "$", paths), tuple(paths)

    def clean(self, value: JSON) -> JSON:
        """`redact` without the paths."""
        return self._redact(value, "$", [])

    def step(self, record: StepRecord) -> StepRecord:
        """A step row as it may be stored: every JSON column and the error text redacted.

        The result is redacted before the output (read from it) so a secret learned in the raw
        result is also caught in an output derived differently; `redacted` lists resolved-input paths."""
        if self._recent.get(id(record)) is record:
            return record
        clean = self._step(record)
        self._recent[id(clean)] = clean
        return clean

    def _step(self, record: StepRecord) -> StepRecord:
        if record.idempotency_key is not None and self._matcher.found(record.idempotency_key):
            record = record.replace(idempotency_key=self.key(record.idempotency_key))
        if not self.might_hold_secrets([record.input, record.resolved_input, record.result, record.error]):
            return record
        resolved, paths = self.redact(record.resolved_input)
        written = self._refs_kept(self.clean(record.input), record.input, record.resolved_input)
        result = self.clean(record.result)
        output = self.clean(record.output)
        error = self.redact_text(record.error) if record.error is not None else None
        same = (written, resolved, result, output, error) == (
            record.input, record.resolved_input, record.result, record.output, record.error
        )  # fmt: skip
        if same and not paths:
            return record
        return record.replace(
            input=written, resolved_input=resolved, result=result, output=output, error=error,
            redacted=tuple(dict.fromkeys((*record.redacted, *paths))),
        )  # fmt: skip

    def _refs_kept(self, clean: JSON, written: JSON, resolved: JSON) -> JSON:
        """`clean` with the refs the agent wrote (`@create_session_1.id`) put back where they were redacted
        under a secret-looking key: a ref is no secret, and a template needs it. Only a whole-string ref
        the gateway resolved to something else (so it was one) that holds no known secret."""
        if isinstance(written, str):
            keep = written != resolved and is_ref(written) and not self._matcher.found(written)
            return written if keep else clean
        if isinstance(written, Mapping) and isinstance(clean, Mapping) and isinstance(resolved, Mapping):
            out = {k: self._refs_kept(v, written.get(k), resolved.get(k)) for k, v in clean.items()}
            return clean if all(out[k] is clean[k] for k in out) else out
        lists = isinstance(written, list) and isinstance(clean, list) and isinstance(resolved, list)
        if lists and len(written) == len(clean) == len(resolved):
            items = [self._refs_kept(c, w, r) for c, w, r in zip(clean, written, resolved, strict=True)]
            return clean if all(a is b for a, b in zip(items, clean, strict=True)) else items
        return clean

    def key(self, key: str) -> str:
        """An idempotency key as it may be stored: as written when it holds no known secret, else a keyed hash
        of it (`hmac-sha256:<hex>`), the same for the same key text, so a later run finds the result by it.
        The hash's key is `TOOLREEL_KEY_HASH_SECRET` when set: without it, whoever reads the store could test
        guesses of a short secret against the hash."""
        if not self._matcher.found(key):
            return key
        secret = os.environ.get(KEY_HASH_ENV, "toolreel idempotency key").encode()
        return "hmac-sha256:" + hmac.new(secret, key.encode("utf-8", "surrogatepass"), hashlib.sha256).hexdigest()

    def fields(self, fields: Mapping[str, object]) -> dict[str, object]:
        """Column values of a row (an execution's `inputs`, `output`, `error`, ...): JSON and text redacted."""
        out: dict[str, object] = {}
        for name, value in fields.items():
            if isinstance(value, str):
                out[name] = self.redact_text(value)
            elif value is None or isinstance(value, dict | list):
                out[name] = self.clean(value)
            else:
                out[name] = value
        return out

    def redact_text(self, text: str) -> str:
        """Free text (an error message, a log line): known values, JSON inside it, URL credentials."""
        redacted = self._redact_str(text, "$", [])
        redacted = _URL_USERINFO_RE.sub(lambda m: f"{m.group(1)}:{REDACTED}@", redacted)
        return _URL_PARAM_RE.sub(_url_param, redacted)

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
                self._learn(item)
            else:
                new = self._redact(item, where, paths)
            if new is not item:
                out = dict(value) if out is None else out
                out[key] = new
        return value if out is None else out

    def _redact_str(self, value: str, path: str, paths: list[str]) -> str:
        inner = self._redact_json_text(value, path, paths)
        if inner is not None:
            value = inner
        matcher = self._matcher
        if not matcher.found(value):
            return value
        if inner is None:
            paths.append(path)
        return matcher.sub(value)

    def _redact_json_text(self, value: str, path: str, paths: list[str]) -> str | None:
        """JSON held in a string (a text item, an error body) redacted inside; None if not JSON or clean.

        Whatever its size: a text that is too large to parse cheaply, or that is not whole JSON (cut off),
        still has its secret-named keys redacted by a scan of its text."""
        if _JSON_START_RE.match(value) is None or _KEY_WORDS_RE.search(value.lower()) is None:
            return None
        if len(value) > _JSON_TEXT_MAX and not needs_parse(value):
            redacted = self._scan_json_text(value)
        else:
            redacted = self._parse_json_text(value)
        if redacted is not None:
            paths.append(path)
        return redacted

    def _parse_json_text(self, value: str) -> str | None:
        try:
            parsed = json.loads(value)
        except ValueError:
            return self._scan_json_text(value)
        redacted = self._redact(parsed, "$", [])
        return None if redacted is parsed else json.dumps(redacted, ensure_ascii=False)

    def _scan_json_text(self, value: str) -> str | None:
        found = redact_keys(value, is_secret_key, _holds_secret, REDACTED)
        if found is None:
            return None
        redacted, secrets = found
        for secret in secrets:
            self._learn(secret)
        return redacted


@dataclass(frozen=True, slots=True)
class _Matcher:
    """Known values: compiled into one regex, plus the few learned since it was compiled."""

    pattern: re.Pattern[str] | None
    checkable: bool = True  # every value reads the same in JSON text (might_hold_secrets can trust a scan)
    pending: tuple[str, ...] = ()  # longest first

    def knows(self, value: str) -> bool:
        return value in self.pending or (self.pattern is not None and self.pattern.fullmatch(value) is not None)

    def found(self, text: str) -> bool:
        return (self.pattern is not None and self.pattern.search(text) is not None) or any(
            value in text for value in self.pending
        )

    def sub(self, text: str) -> str:
        if self.pattern is not None:
            text = self.pattern.sub(REDACTED, text)
        for value in self.pending:
            text = text.replace(value, REDACTED)
        return text


def _checkable(values: Iterable[str]) -> bool:
    """The quick check reads JSON text: it can only vouch for values JSON writes as they are."""
    return all(json.dumps(v, ensure_ascii=False)[1:-1] == v for v in values)


# `"key": "value"` with its quotes escaped any number of times (`\\"key\\": \\"value\\"`), or quoted
# as Python writes a dict (`'key': 'value'`); no nested quantifiers, so the scan stays linear.
_LOGGED_KEY_VALUE: Final = re.compile(
    r"""(\\*["'])([\w.\-]{0,32}(?i:"""
    + "|".join(KEY_WORDS)
    + r""")[\w.\-]{0,32})(\\*["'])\s*[:=]\s*(\\*["'])([^"'\\]*)(\\*["'])"""
)
_LOGGED_KEY_WORD: Final = re.compile("|".join(KEY_WORDS), re.IGNORECASE)


class LogRedaction(logging.Filter):
    """A handler filter: every log line leaves with its secrets redacted (`-v` logs URLs and headers)."""

    def __init__(self, redactor: Redactor) -> None:
        super().__init__()
        self.redactor = redactor

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        clean = self.redactor.redact_text(message)
        if _LOGGED_KEY_WORD.search(clean):
            clean = self._redact_logged_keys(clean)
        if clean != message:
            record.msg, record.args = clean, None
        return True

    def _redact_logged_keys(self, text: str) -> str:
        """Values under secret-named keys in a line that is not JSON itself: a repr, or JSON escaped once or
        twice inside another (`-v` logs the bytes of each HTTP answer). A value found is learned, so the
        same secret copied under another key (a ref's target) is redacted in later lines too."""
        learned: list[str] = []

        def value(match: re.Match[str]) -> str:
            if not is_secret_key(match.group(2)) or len(match.group(5)) < LEARN_MIN_LENGTH:
                return match.group(0)
            learned.append(match.group(5))
            return match.group(0)[: match.start(5) - match.start(0)] + REDACTED + match.group(6)

        clean = _LOGGED_KEY_VALUE.sub(value, text)
        if learned:
            self.redactor.add(learned)
        return clean


def redact_logs(redactor: Redactor) -> LogRedaction:
    """Put a `LogRedaction` on every handler of the root logger (call after `logging.basicConfig`), and on
    the handler of last resort, which prints warnings when no logging was configured (`toolreel run`)."""
    redaction = LogRedaction(redactor)
    for handler in [*logging.getLogger().handlers, logging.lastResort]:
        if handler is None:
            continue
        for old in [f for f in handler.filters if isinstance(f, LogRedaction)]:
            handler.removeFilter(old)  # the newest redactor knows what the older ones did (one per process)
        handler.addFilter(redaction)
    return redaction


def url_secrets(url: str) -> list[str]:
    """The secrets a URL carries: the password of `user:password@`, query values under secret-named keys."""
    found = [m.group(2) for m in _URL_USERINFO_RE.finditer(url)]
    found += [m.group(3) for m in _URL_PARAM_RE.finditer(url) if is_secret_key(m.group(2))]
    return found


def looks_like_ref(value: JSON) -> bool:
    """A ref (`@login_1.session_token`, `Bearer {{@login_1.token}}`): structure to keep, not a secret.

    A bare `@word` could be a password, so a whole-string ref needs a path; an interpolation may
    carry a short literal around its placeholders (a scheme such as `Bearer `)."""
    if not isinstance(value, str) or "@" not in value:
        return False
    ref = parse_ref(value)
    if ref is not None:
        return ref.path is not None
    parts = split_template(value)
    literal = sum(len(part) for part in parts if isinstance(part, str))
    return literal <= _REF_LITERAL_MAX and any(not isinstance(part, str) for part in parts)


def _url_param(match: re.Match[str]) -> str:
    sep, key, value = match.groups()
    return f"{sep}{key}={REDACTED}" if is_secret_key(key) and value != REDACTED else match.group(0)


def _strings(value: JSON) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, Mapping):
        return [s for item in value.values() for s in _strings(item)]
    if isinstance(value, list | tuple):
        return [s for item in value for s in _strings(item)]
    return []


def _holds_secret(value: JSON) -> bool:
    """Null, booleans, empty strings, values already redacted and refs reveal nothing: keep them."""
    return not (value is None or isinstance(value, bool) or value == "" or value == REDACTED or looks_like_ref(value))


def _child_path(path: str, key: object) -> str:
    text = str(key)
    if _IDENTIFIER_RE.fullmatch(text):
        return f"{path}.{text}"
    return f"{path}[{json.dumps(text, ensure_ascii=False)}]"
