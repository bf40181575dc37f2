"""The user's yes before a call to a tool the config marks `confirm` (SPEC §2).

The question is an elicitation form with no fields: accept allows the call, anything else
(decline, cancel, a client that cannot be asked) refuses it with a tool error that says
why, and nothing is forwarded. The answer travels on the result's `_meta`, so the
recording keeps it on the step.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

__all__ = ["CONFIRM_META", "Confirmation", "question"]

CONFIRM_META = "toolreel/confirmation"
_SHOWN_ARGUMENTS = 4000  # characters of JSON arguments put in the question


def question(listed: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """`elicitation/create` params asking to allow one call."""
    shown = json.dumps(arguments, indent=2, ensure_ascii=False, default=str)
    if len(shown) > _SHOWN_ARGUMENTS:
        shown = shown[:_SHOWN_ARGUMENTS] + "\n…"
    return {
        "mode": "form",
        "message": f"Allow `{listed}` with these arguments?\n{shown}",
        "requestedSchema": {"type": "object", "properties": {}},
    }


@dataclass(frozen=True, slots=True)
class Confirmation:
    listed: str
    action: str  # accept, decline, cancel, or unavailable (the client could not be asked)
    reason: str | None = None

    @classmethod
    def from_answer(cls, listed: str, answer: dict[str, Any]) -> Confirmation:
        return cls(listed, str(answer.get("action", "cancel")))

    @property
    def allowed(self) -> bool:
        return self.action == "accept"

    def record(self) -> dict[str, Any]:
        out: dict[str, Any] = {"asked": self.action != "unavailable", "action": self.action}
        if self.reason:
            out["reason"] = self.reason
        return out

    def stamp(self, result: dict[str, Any]) -> dict[str, Any]:
        return {**result, "_meta": {**(result.get("_meta") or {}), CONFIRM_META: self.record()}}

    def refusal(self) -> dict[str, Any]:
        if self.action == "unavailable":
            why = (
                f"`{self.listed}` needs the user's confirmation before each call, and the client could not be "
                f"asked ({self.reason}); use a client that supports elicitation, or remove the tool from the "
                "server's `confirm` list in the config"
            )
        else:
            verb = "declined" if self.action == "decline" else "dismissed"
            why = f"the user {verb} the call to `{self.listed}`"
        text = f"{why}. Nothing was sent to the server."
        return self.stamp({"content": [{"type": "text", "text": text}], "isError": True})
