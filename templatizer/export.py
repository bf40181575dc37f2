"""`toolreel templates export NAME --as skill DIR | --as python FILE`: a stored template in another shape.

The CLI's thin adapter over `core.skill`: it reads the template from the store, writes the files, and says
where on stderr. A shape that is not known, or a missing destination, is a usage error (exit 2).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import typer

from toolreel._cli import fail
from toolreel.core.skill import template_skill, write_skill
from toolreel.core.store import Store
from toolreel.core.template import Template
from toolreel.core.template_io import stored_template

__all__ = ["SHAPES", "export_as"]

SHAPES = ("skill", "python")


def export_as(store: Store, name: str, version: int | None, shape: str | None, target: Path | None) -> Path:
    """Write template `name` (its latest version, or `version`) as `shape` under `target`; returns what it wrote."""
    if shape not in SHAPES:
        said = "no --as" if shape is None else f"--as {shape!r}"
        raise fail(f"templates export {name}: {said} with a destination; use --as {' | '.join(SHAPES)} DIR")
    if target is None:
        raise fail(f"templates export {name} --as {shape}: name where to write it (… --as {shape} PATH)")
    template = stored_template(store.get_template(name, version))
    if shape == "python":
        return _write_python(template, target, lambda child, pinned: stored_template(store.get_template(child, pinned)))
    skill = template_skill(template)
    try:
        folder = write_skill(skill, target)
    except OSError as exc:
        raise fail(f"cannot write the skill {skill.name!r} under {str(target)!r}: {exc.strerror or exc}", 1) from None
    typer.echo(f"wrote the skill {skill.name} ({name} v{template.version}) to {folder}", err=True)
    return folder


def _write_python(template: Template, target: Path, loader: Callable[[str, int | None], Template]) -> Path:
    from toolreel.templatizer.to_python import python_program

    text = python_program(template, loader)  # TemplateError (a step it cannot write): exit 2, nothing written
    try:
        target.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise fail(f"cannot write {str(target)!r}: {exc.strerror or exc}", 1) from None
    typer.echo(f"wrote {template.name} v{template.version} as a Python program to {target}", err=True)
    return target
