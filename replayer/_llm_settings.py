"""How `llm` steps are answered in one process (`replayer._llm`): the mode and the OpenAI-compatible endpoint.

Its own module: the run's shared context (`_host.RunContext`) holds it, and `_llm` (a step kind) imports `_host`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Literal

__all__ = ["LLMSettings"]


@dataclass(frozen=True, slots=True)
class LLMSettings:
    """How `llm` steps are answered in this process."""

    mode: Literal["live", "recorded"] = "live"
    url: str | None = None  # an OpenAI-compatible base URL, e.g. http://127.0.0.1:8080/v1
    key: str | None = None
    model: str | None = None

    @classmethod
    def from_env(cls, mode: Literal["live", "recorded"] = "live") -> LLMSettings:
        return cls(
            mode=mode,
            url=os.environ.get("TOOLREEL_LLM_URL") or None,
            key=os.environ.get("TOOLREEL_LLM_KEY") or None,
            model=os.environ.get("TOOLREEL_LLM_MODEL") or None,
        )
