"""A list argument built one element per line of a text an earlier call returned: a file's lines imported as tasks.

The agent read a file (`one utterance a line`, a `#` comment on top, blank lines between) and sent one element per
line (`tasks: [{data: {text: <line>}}, ...]`). Each line is no input and no single extraction: the list follows the
text, so another file of five lines imports five tasks. When a list argument's elements differ at one place only,
and the values there are, in order, every non-blank line of an earlier text (but those a comment mark opens), a
`lines_*` code step builds the list from that text at replay time, each element shaped like the recorded ones.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Final

from toolreel.core.model import JSON, StepRecord
from toolreel.core.template import Template
from toolreel.templatizer._codesteps import CodeRead, with_code_steps
from toolreel.templatizer._result import Inference
from toolreel.templatizer._values import Keys, get_at, json_path, put_at, walk

if TYPE_CHECKING:
    from toolreel.templatizer._runs import Run

__all__ = ["LINES_CODE", "propose_lines"]

LINES_CODE: Final = r"""export default function(input) {
  const text = input.text === null || input.text === undefined ? "" : String(input.text);
  const lines = text.split(/\r?\n/).map((line) => line.trim());
  const kept = lines.filter((line) => line !== "" && !(input.skip !== "" && line.startsWith(input.skip)));
  const put = (shape, line) =>
    shape === input.marker ? line
    : Array.isArray(shape) ? shape.map((v) => put(v, line))
    : shape !== null && typeof shape === "object"
      ? Object.fromEntries(Object.entries(shape).map(([k, v]) => [k, put(v, line)]))
      : shape;
  return kept.map((line) => put(input.each, line));
}
"""
_MARKER: Final = "<<line>>"  # where each element holds its line, in the shape of the elements
_SKIPS: Final = ("", "#", "//", ";", "--")  # the comment marks a file's lines may open with
_MIN_LINES: Final = 2


def propose_lines(
    template: Template, kept: Sequence[StepRecord], runs: Sequence[Run]
) -> tuple[Template, tuple[Inference, ...]]:
    """The template with each list argument built from the lines of an earlier text (see the module)."""
    specs = {step.name: step for step in template.steps}
    texts: list[tuple[str, list[str]]] = []  # (the ref to an earlier text, its non-blank lines)
    reads: list[CodeRead] = []
    for record in sorted(kept, key=lambda r: r.seq):
        spec = specs.get(record.name)
        if spec is not None and spec.tool is not None and texts:
            for keys, node in walk(spec.input):
                if isinstance(node, list) and len(node) >= _MIN_LINES:
                    found = _lined(node, texts)
                    if found is not None:
                        reads.append(_read(record.name, keys, node, *found))
        for keys, leaf in walk(runs[0].outputs.get(record.name)):
            if isinstance(leaf, str) and leaf.count("\n") >= _MIN_LINES:
                lines = [line.strip() for line in leaf.splitlines() if line.strip()]
                texts.append((f"@{record.name}{json_path(keys)[1:]}", lines))
    return with_code_steps(template, reads) if reads else (template, ())


def _lined(elements: list[JSON], texts: Sequence[tuple[str, list[str]]]) -> tuple[str, str, Keys] | None:
    """(the text's ref, the comment mark its skipped lines open with, where each element holds its line)."""
    shapes = [dict(walk(element)) for element in elements]
    if any(set(shape) != set(shapes[0]) for shape in shapes[1:]):
        return None
    varying = [k for k, v in shapes[0].items() if not isinstance(v, dict | list) and any(s[k] != v for s in shapes)]
    if len(varying) != 1:
        return None
    values = [shape[varying[0]] for shape in shapes]
    if not all(isinstance(v, str) and v and not v.startswith("@") and "{{@" not in v for v in values):
        return None
    for ref, lines in reversed(texts):  # the nearest text first
        for skip in _SKIPS:
            if values == [line for line in lines if not (skip and line.startswith(skip))]:
                return ref, skip, varying[0]
    return None


def _read(step: str, keys: Keys, elements: list[JSON], text: str, skip: str, at: Keys) -> CodeRead:
    each = put_at(elements[0], at, _MARKER)
    _, first = get_at(elements[0], at)
    source = f"the lines of {text}" + (f" not opening with {skip!r}" if skip else "")
    return CodeRead(
        step=step,
        keys=keys,
        recorded=elements,
        code=LINES_CODE,
        input={"text": text, "skip": skip, "marker": _MARKER, "each": each},
        base="lines",
        why=lambda name: f"{name} builds one element per line of {source} ({len(elements)} when recorded, {first!r}…)",
    )
