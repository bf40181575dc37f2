"""Does a template reproduce its recording? The page's verdict on what it is about to save.

It is the replayer's own dry replay (`replayer.dry_replay`, the check `toolreel__save_template`
runs): each step's recorded output preset, nothing called, every tool step's resolved input
compared with what it sent while recording. Run here on the reviewed template, so the person's
decisions (a ref turned back into a literal, an input renamed) are what is checked.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from toolreel.replayer import dry_replay

if TYPE_CHECKING:
    from toolreel.core.model import StepRecord
    from toolreel.core.template import Template

__all__ = ["Difference", "Verification", "verify"]


@dataclass(frozen=True, slots=True)
class Difference:
    step: str
    problem: str


@dataclass(frozen=True, slots=True)
class Verification:
    verified: bool
    checked: int
    differences: tuple[Difference, ...]

    def to_json(self) -> dict[str, Any]:
        return {
            "verified": self.verified,
            "checked": self.checked,
            "differences": [{"step": d.step, "problem": d.problem} for d in self.differences],
        }


def verify(template: Template, recording: Sequence[StepRecord], inputs: Mapping[str, Any]) -> Verification:
    recorded = {row.name for row in recording}
    checked = sum(1 for step in template.steps if step.kind == "tool" and step.name in recorded)
    found = dry_replay(template, inputs, recording)
    differences = tuple(
        Difference(d.step, f"{d.field}: would send {d.got} where the recording sent {d.recorded}") for d in found
    )
    return Verification(verified=not differences, checked=checked, differences=differences)
