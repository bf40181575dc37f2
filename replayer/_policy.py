"""Step policies as pure functions: retry delays and decisions, `when` conditions, idempotency keys.

The retry delay is SPEC §8's formula exactly: `min(base(n), max_delay) * (1 ± jitter)` with
`base` fixed `initial_delay`, linear `initial_delay*(n-1)`, exponential `initial_delay*2^(n-2)`.
"""

from __future__ import annotations

import random
from typing import Any

from toolreel.core.errors import TemplateError, ToolreelError, UpstreamError, UpstreamTimeout
from toolreel.core.model import ExecutionStatus
from toolreel.core.template import RetryPolicy, When

__all__ = [
    "CHILD_TIMEOUT",
    "attempt_failure_kind",
    "child_failure_kind",
    "child_start_failure_kind",
    "compare",
    "idempotency_store_key",
    "parse_answer",
    "retry_delay",
    "should_retry",
]

NO_RETRY = RetryPolicy(max_attempts=1)

CHILD_TIMEOUT = "the parent step's timeout of"
"""Opens the reason recorded on a child execution cancelled because its parent step's timeout passed."""


def retry_delay(policy: RetryPolicy, attempt: int, *, rng: random.Random | None = None) -> float:
    """Seconds to wait before attempt `attempt` (>= 2)."""
    if attempt < 2:
        return 0.0
    if policy.backoff == "fixed":
        base = policy.initial_delay
    elif policy.backoff == "linear":
        base = policy.initial_delay * (attempt - 1)
    else:
        base = policy.initial_delay * 2 ** (attempt - 2)
    delay = min(base, policy.max_delay)
    if policy.jitter:
        delay *= 1 + (rng or random).uniform(-policy.jitter, policy.jitter)
    return max(delay, 0.0)


def attempt_failure_kind(error: BaseException | None, *, is_error: bool) -> str | None:
    """The `retry_on` kind an attempt's failure belongs to, or None for a non-retryable one."""
    if isinstance(error, UpstreamTimeout):
        return "timeout"
    if isinstance(error, UpstreamError):
        return "transient" if error.transient else None
    if error is None and is_error:
        return "tool_error"
    return None


def child_failure_kind(status: ExecutionStatus, error: str | None) -> str | None:
    """The `retry_on` kind of a `template` step attempt whose child execution ended without success.

    A cancelled child is a `timeout` only when its parent step's timeout cancelled it (a parent that
    crashed right after cancelling it finds it so); a child cancelled by a person stays cancelled.
    """
    if status == ExecutionStatus.FAILED:
        return "tool_error"
    if status == ExecutionStatus.CANCELLED and CHILD_TIMEOUT in (error or ""):
        return "timeout"
    return None


def child_start_failure_kind(error: ToolreelError) -> str | None:
    """The `retry_on` kind of a child execution that could not start: `transient` when an upstream is
    unreachable (no server lists one of its tools: it is down or restarting, as the hub treats an unlisted
    tool); None for what another attempt cannot fix (no such template, a cycle, too deep, bad inputs)."""
    if isinstance(error, UpstreamError):
        return attempt_failure_kind(error, is_error=False)
    if isinstance(error, TemplateError) and error.field == "tool":
        return "transient"
    return None


def should_retry(policy: RetryPolicy, attempt: int, kind: str | None) -> bool:
    return kind is not None and kind in policy.retry_on and attempt < policy.max_attempts


def compare(when: When, subject: Any, value: Any, *, exists: bool) -> bool:
    """Evaluate a resolved `when`. `exists` says whether the ref resolved to something.

    Comparisons between values of incompatible types (a null against a number, a string
    against a number) are false rather than errors: a skipped step gives null, and a
    condition on it should just not hold.
    """
    op = when.op
    if op is None:
        return bool(subject)
    if op == "exists":
        return exists == bool(value)
    if op == "eq":
        return _json_equal(subject, value)
    if op == "neq":
        return not _json_equal(subject, value)
    if op == "in":
        return _contains(value, subject)
    return _ordered(op, subject, value)


def _json_equal(a: Any, b: Any) -> bool:
    # JSON has no bool/int confusion: true == 1 must be false.
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    return bool(a == b)


def _contains(container: Any, item: Any) -> bool:
    if isinstance(container, str):
        return isinstance(item, str) and item in container
    if isinstance(container, list):
        return any(_json_equal(item, element) for element in container)
    if isinstance(container, dict):
        return isinstance(item, str) and item in container
    return False


def _ordered(op: str, a: Any, b: Any) -> bool:
    numbers = all(isinstance(x, int | float) and not isinstance(x, bool) for x in (a, b))
    strings = isinstance(a, str) and isinstance(b, str)
    if not (numbers or strings):
        return False
    if op == "gt":
        return bool(a > b)
    if op == "gte":
        return bool(a >= b)
    if op == "lt":
        return bool(a < b)
    return bool(a <= b)


def idempotency_store_key(key: str, *, scope: str, execution_id: str) -> str:
    """The full key the store sees: the scope is folded in so scopes never collide.

    A global key is shared by every execution of every template (the user chose the key to
    name one real-world operation); an execution key only within one run (and its resumes).
    """
    if scope == "global":
        return f"global:{key}"
    return f"execution:{execution_id}:{key}"


_YES = frozenset(
    {"yes", "y", "approve", "approved", "ok", "okay", "true", "accept", "accepted", "allow", "go", "continue"}
)
_NO = frozenset({"no", "n", "deny", "denied", "reject", "rejected", "refuse", "refused", "false", "decline", "stop"})


def parse_answer(response: str) -> bool:
    """A person's answer to an approval: yes-like or no-like words; anything else is refused with a hint."""
    word = response.strip().lower().rstrip(".!")
    if word in _YES:
        return True
    if word in _NO:
        return False
    yes, no = ", ".join(sorted(_YES)), ", ".join(sorted(_NO))
    raise ValueError(f"response {response!r} is neither a yes ({yes}) nor a no ({no})")
