"""A name taken from a list of plain names (`radosgw-admin user list`: `["backup", "ci-artifacts-old",
"ci-artifacts"]`) past its first: the agent took it because it was that name (the user's, or one it was asked for),
not because of where the list put it. `_picks` finds it in the list by itself (a pick with no key), so a run for a
name that is not listed fails saying so; its input is named by the flag it is the value of."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence

from toolreel.core.model import JSON

__all__ = ["flag_before", "listed_name", "whole"]


def listed_name(elements: Sequence[str], n: int, inputs: Mapping[str, JSON]) -> str | None:
    """What picks element `n`: the input that gave it, or the name itself; None when another element has it too."""
    value = elements[n]
    if elements.count(value) != 1:
        return None
    return next((f"@input.{name}" for name, given in inputs.items() if given == value), value)


def flag_before(value: JSON, head: str) -> str:
    """The flag a picked name is the value of (`--uid={{@users_1[2]}}`: `uid`), what its input is called."""
    found = re.search(r"--([A-Za-z][\w-]*)=\{\{" + re.escape(head) + r"\}\}", json.dumps(value))
    return found.group(1) if found else ""


def whole(value: JSON, head: str) -> bool:
    """The positional ref is a whole argument (`"@users_1[2]"`), not a part of a text."""
    return json.dumps(head) in json.dumps(value)
