"""`toolreel templates export NAME --as skill DIR`: a stored template written in another shape.

The CLI's thin adapter over `core.skill`: it reads the template from the store, writes the files, and says
where on stderr. A shape that is not known, or a missing destination, is a usage error (exit 2).
"""

from __future__ import annotations

from pathlib import Path

import typer

from toolreel._cli import fail
from toolreel.core.skill import template_skill, write_skill
from toolreel.core.store import Store
from toolreel.core.template_io import stored_template

__all__ = ["SHAPES", "export_as"]

SHAPES = ("skill",)


def export_as(store: Store, name: str, version: int | None, shape: str | None, target: Path | None) -> Path:
    """Write template `name` (its latest version, or `version`) as `shape` under `target`; returns what it wrote."""
    if shape not in SHAPES:
        said = "no --as" if shape is None else f"--as {shape!r}"
        raise fail(f"templates export {name}: {said} with a destination; use --as {' | '.join(SHAPES)} DIR")
    if target is None:
        raise fail(f"templates export {name} --as {shape}: name the folder to write into (… --as {shape} DIR)")
    template = stored_template(store.get_template(name, version))
    skill = template_skill(template)
    try:
        folder = write_skill(skill, target)
    except OSError as exc:
        raise fail(f"cannot write the skill {skill.name!r} under {str(target)!r}: {exc.strerror or exc}", 1) from None
    typer.echo(f"wrote the skill {skill.name} ({name} v{template.version}) to {folder}", err=True)
    return folder
