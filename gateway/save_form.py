"""The one form a plain `toolreel__save_template(name)` puts to the user: which likely inputs to keep.

Each candidate is a preselected checkbox (its recorded value and where it is used in the
description) and a text field holding its name, so the user can untick or rename in one go.
Elicitation forms are flat (MCP allows only top-level primitive fields), hence two fields each.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from toolreel.core.errors import TemplateError
from toolreel.core.model import JSON
from toolreel.gateway import questions
from toolreel.gateway.links import ClientLink

if TYPE_CHECKING:
    from toolreel.templatizer import LikelyInput

__all__ = ["Answer", "ask", "can_ask", "form_schema", "read_answer"]

_NAME_RE: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_SHOWN: Final = 80  # characters of a recorded value shown in the form


@dataclass(frozen=True, slots=True)
class Answer:
    """`inputs`: name -> recorded value to apply; `declined`: the user said no (nothing is saved)."""

    inputs: Mapping[str, JSON]
    declined: bool = False


def can_ask(link: ClientLink) -> bool:
    """A form can be put to clients that declared elicitation, in either era (gateway.questions)."""
    caps = link.capabilities
    return caps is not None and caps.elicitation is not None


def form_schema(candidates: Sequence[LikelyInput]) -> dict[str, Any]:
    properties: dict[str, Any] = {}
    for likely in candidates:
        value = repr(likely.value)
        shown = value if len(value) <= _SHOWN else value[: _SHOWN - 3] + "..."
        where = ", ".join(f"{step} {path}" for step, path in likely.used_at)
        thin = "" if likely.ticked else " Proposed unticked: the evidence is thin; tick it to make it an input."
        properties[f"use_{likely.name}"] = {
            "type": "boolean",
            "title": f"Make {shown} an input",
            "description": f"Recorded value {shown}, used in {where}. Untick to keep it fixed.{thin}",
            "default": likely.ticked,
        }
        properties[f"name_{likely.name}"] = {
            "type": "string",
            "title": f"Name of the input for {shown}",
            "default": likely.name,
        }
    return {"type": "object", "properties": properties}


def read_answer(candidates: Sequence[LikelyInput], content: Mapping[str, Any] | None) -> dict[str, JSON]:
    """The inputs the user kept, under the names they gave; a bad or repeated name is refused."""
    content = content or {}
    chosen: dict[str, JSON] = {}
    for likely in candidates:
        if content.get(f"use_{likely.name}", likely.ticked) is not True:
            continue
        name = str(content.get(f"name_{likely.name}") or likely.name).strip()
        if not _NAME_RE.fullmatch(name):
            raise TemplateError(
                f"input name {name!r} (for {likely.value!r}) is not a name: use letters, digits and _", field="inputs"
            )
        if name in chosen:
            raise TemplateError(f"two inputs were named {name!r}: give each its own name", field="inputs")
        chosen[name] = likely.value
    return chosen


async def ask(link: ClientLink, template: str, candidates: Sequence[LikelyInput]) -> Answer | None:
    """Ask the user once; None when the client cannot be asked (then the caller applies them all)."""
    if not can_ask(link):
        return None
    message = (
        f"Save template {template!r}: these recorded values look like what changes from one run to the next. "
        "Each ticked one becomes an input of the template (rename it if you like); unticked ones stay fixed."
    )
    result = await questions.elicit(message, form_schema(candidates))
    if result is None:
        return None
    if result.action != "accept":
        return Answer(inputs={}, declined=True)
    return Answer(inputs=read_answer(candidates, result.content))
