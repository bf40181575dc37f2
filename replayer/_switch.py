"""`switch` steps: which case's branch runs. Decided inline (nothing is called): the switch's output says
which case was chosen, and every step of the other branches is skipped when its turn comes."""

from __future__ import annotations

from toolreel.core.errors import RefError
from toolreel.core.model import JSON
from toolreel.core.refs import Scope, resolve
from toolreel.core.template import DEFAULT_CASE, SwitchSpec
from toolreel.replayer._policy import compare

__all__ = ["chose", "pick"]


def pick(switch: SwitchSpec, scope: Scope) -> dict[str, JSON]:
    """`{case: INDEX | "default" | null, value: V}`: the first case whose test of the value holds, else the
    default (null when there is none: no branch runs)."""
    try:
        value = resolve(switch.ref, scope)
    except RefError:
        if not any(case.when.op == "exists" for case in switch.cases):
            raise
        value = None
    for index, case in enumerate(switch.cases):
        if compare(case.when, value, resolve(case.when.value, scope), exists=value is not None):
            return {"case": index, "value": value}
    return {"case": "default" if switch.default else None, "value": value}


def chose(output: JSON, index: int) -> bool:
    """Whether a switch's output (null if the switch was skipped) chose the branch `index`."""
    if not isinstance(output, dict):
        return False
    case = output.get("case")
    return case == "default" if index == DEFAULT_CASE else case == index and not isinstance(case, bool)
