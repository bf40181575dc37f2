"""What a recording gateway says of a call and what its store holds so far: `step_meta`, `stored_steps`."""

from __future__ import annotations

from typing import Any

from toolreel.core.errors import NotFoundError
from toolreel.core.model import StepRecord
from toolreel.core.store import Store

__all__ = ["step_meta", "stored_steps"]


def step_meta(result: Any) -> tuple[str, str]:
    """The step and the execution a tool result's `_meta` names."""
    meta = result.meta or {}
    return meta["toolreel/step"], meta["toolreel/execution"]


def stored_steps(store: Store, execution: str) -> list[StepRecord]:
    """The steps stored so far; none while the writer has not created the execution yet."""
    try:
        return store.get_steps(execution)
    except NotFoundError:
        return []
