"""`switch` steps: which case's branch runs. Decided inline (nothing is called): the switch's output says
which case was chosen, and every step of the other branches is skipped when its turn comes."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from toolreel.core.errors import RefError
from toolreel.core.model import JSON
from toolreel.core.template import DEFAULT_CASE, SwitchSpec
from toolreel.replayer._policy import compare

__all__ = ["chose", "pick"]


async def pick(switch: SwitchSpec, resolve: Callable[[JSON], Awaitable[JSON]]) -> dict[str, JSON]:
    """`{case: INDEX | "default" | null, value: V}`: the first case whose test of the value holds, else the
    default (null when there is none: no branch runs). `resolve`: the run's bounded resolver."""
    try:
        value = await resolve(switch.ref)
    except RefError:
        if not any(case.when.op == "exists" for case in switch.cases):
            raise
        value = None
    for index, case in enumerate(switch.cases):
        if compare(case.when, value, await resolve(case.when.value), exists=value is not None):
            return {"case": index, "value": value}
    return {"case": "default" if switch.default else None, "value": value}


def chose(output: JSON, index: int) -> bool:
    """Whether a switch's output (null if the switch was skipped) chose the branch `index`."""
    if not isinstance(output, dict):
        return False
    case = output.get("case")
    return case == "default" if index == DEFAULT_CASE else case == index and not isinstance(case, bool)
