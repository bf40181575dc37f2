"""A value copied from one read onto what another read of the same tool showed: promote a flag from Staging to
Production.

The agent read a setting in two places (`get-setting-value` of Staging, then of Production), saw they differ (`true`
beside `false`) and set the second to the first's. The flag is a boolean, whose equality alone is never evidence;
here it is: of two reads of one tool that differ at that field, the write sends the one's value under the very
field name. The write is a ref to that read (and `_conditions.guard_on_copies` runs it only while the two still
differ: where they are equal already, a careful agent writes nothing).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from toolreel.core.model import JSON, StepRecord
from toolreel.templatizer._values import Keys, json_path, walk

if TYPE_CHECKING:
    from toolreel.templatizer._runs import Run

__all__ = ["copied_flag"]


def copied_flag(run: Run, record: StepRecord, keys: Keys, value: JSON) -> str | None:
    """The ref to the one field of the same name, outside any list, that holds `value` (a boolean) in one of two or
    more earlier reads of one tool that disagree there; None if there is not exactly one."""
    key = keys[-1] if keys and isinstance(keys[-1], str) else None
    if key is None or not isinstance(value, bool):
        return None
    by_tool: dict[str, list[tuple[str, Keys, bool]]] = {}
    for earlier in run.steps.values():
        if earlier.seq >= record.seq or earlier.name not in run.outputs:
            continue
        for path, leaf in walk(run.outputs[earlier.name]):
            if path and path[-1] == key and isinstance(leaf, bool) and not any(isinstance(k, int) for k in path):
                by_tool.setdefault(f"{earlier.server}__{earlier.tool}", []).append((earlier.name, path, leaf))
    found = [
        f"@{name}{json_path(path)[1:]}"
        for places in by_tool.values()
        if len({leaf for _, _, leaf in places}) == 2
        for name, path, leaf in places
        if leaf == value
    ]
    return found[0] if len(found) == 1 else None
