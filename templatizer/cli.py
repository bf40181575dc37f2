"""`toolreel templates ...`, `toolreel templatize` and `toolreel schema` (SPEC §10).

`register(app)` adds them to the root Typer app. Every command takes `--db URL` (default:
TOOLREEL_DB, else the default SQLite store); listings take `--json`. Errors are one line on
stderr; exit 2 for usage and validation errors, 1 for anything else that failed.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any

import typer

from toolreel._cli import DbOption, JsonOption, fail
from toolreel.core.errors import NotFoundError, TemplateError, ToolreelError
from toolreel.core.model import JSON, TemplateDraft, TemplateRecord
from toolreel.core.store import Store, open_store
from toolreel.core.template import Template
from toolreel.core.template_io import (
    check_template_cycles,
    dump_template_yaml,
    load_template_file,
    stored_template,
    template_json_schema,
    template_to_dict,
    to_mermaid,
)
from toolreel.core.view import template_record_view
from toolreel.templatizer._templatize import templatize
from toolreel.templatizer._verify import verify

__all__ = ["register", "schema_command", "templates_app", "templatize_command"]

templates_app = typer.Typer(
    help="The template catalogue: list, show, export, import, delete, validate, check.", no_args_is_help=True
)


def register(app: typer.Typer) -> None:
    """Add `templates`, `templatize` and `schema` to the root `toolreel` app."""
    app.add_typer(templates_app, name="templates")
    app.command("templatize")(templatize_command)
    app.command("schema")(schema_command)


# --------------------------------------------------------------------------- plumbing


@contextmanager
def _store(db: str | None) -> Iterator[Store]:
    """The store, with toolreel errors turned into one line on stderr (2: invalid, 1: failed)."""
    try:
        store = open_store(db)
    except ToolreelError as exc:
        raise fail(exc, 1) from None
    try:
        yield store
    except TemplateError as exc:
        raise fail(exc, 2) from None
    except ToolreelError as exc:
        raise fail(exc, 1) from None
    finally:
        store.close()


def _lookup(store: Store) -> Any:
    def lookup(name: str) -> Template | None:
        try:
            return stored_template(store.get_template(name))
        except NotFoundError:
            return None

    return lookup


def _save(store: Store, template: Template, sources: list[str]) -> TemplateRecord:
    check_template_cycles(template, _lookup(store))
    return store.save_template(TemplateDraft(template.name, template_to_dict(template), template.description, sources))


def _when(created_at: float) -> str:
    return datetime.fromtimestamp(created_at, tz=UTC).strftime("%Y-%m-%d %H:%M")


# --------------------------------------------------------------------------- templates ...


@templates_app.command("list")
def list_command(db: DbOption = None, as_json: JsonOption = False) -> None:
    """The latest version of every template."""
    with _store(db) as store:
        records = store.list_templates()
    if as_json:
        typer.echo(json.dumps([template_record_view(r, definition=False) for r in records], indent=2))
        return
    if not records:
        typer.echo("no templates yet: save one with toolreel__save_template, or `toolreel templates import FILE`")
        return
    rows = [
        (r.name, f"v{r.version}", str(len(r.definition.get("steps", []))), r.hash[:12], _when(r.created_at))
        for r in records
    ]
    header = ("NAME", "VERSION", "STEPS", "HASH", "SAVED (UTC)")
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
    for row, record in zip([header, *rows], [None, *records], strict=True):
        line = "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True))
        description = record.description if record is not None else "DESCRIPTION"
        typer.echo(f"{line}  {description or ''}".rstrip())


@templates_app.command("show")
def show_command(
    name: Annotated[str, typer.Argument(help="Template name.")],
    version: Annotated[int | None, typer.Option("--version", help="A given version (default: the latest).")] = None,
    mermaid: Annotated[bool, typer.Option("--mermaid", help="Draw the DAG as a Mermaid flowchart.")] = False,
    db: DbOption = None,
    as_json: JsonOption = False,
) -> None:
    """A template's definition (YAML), its DAG (--mermaid), or its record (--json)."""
    with _store(db) as store:
        record = store.get_template(name, version)
        template = stored_template(record)
    if as_json:
        typer.echo(json.dumps(template_record_view(record, definition=True), indent=2, ensure_ascii=False))
    elif mermaid:
        typer.echo(to_mermaid(template), nl=False)
    else:
        typer.echo(f"# {record.name} v{record.version}, hash {record.hash}, saved {_when(record.created_at)} UTC")
        typer.echo(dump_template_yaml(template), nl=False)


@templates_app.command("export")
def export_command(
    name: Annotated[str, typer.Argument(help="Template name.")],
    target: Annotated[Path | None, typer.Argument(help="With --as skill: the folder that receives the skill.")] = None,
    output: Annotated[Path | None, typer.Option("--output", "-o", help="File to write (default: stdout).")] = None,
    version: Annotated[int | None, typer.Option("--version", help="A given version (default: the latest).")] = None,
    db: DbOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="JSON instead of YAML (also for a .json file).")] = False,
    shape: Annotated[
        str | None,
        typer.Option(
            "--as",
            help="skill: an Agent Skill folder DIR/<name>/ (SKILL.md, template.yaml); "
            "python: a program FILE on the mcp SDK.",
        ),
    ] = None,
) -> None:
    """Write a template as a file that `templates import` reads back, or as an Agent Skill (--as skill DIR)."""
    if shape is not None or target is not None:
        from toolreel.templatizer.export import export_as

        with _store(db) as store:
            export_as(store, name, version, shape, target)
        return
    with _store(db) as store:
        template = stored_template(store.get_template(name, version))
    use_json = as_json or (output is not None and output.suffix == ".json")
    text = (
        json.dumps(template_to_dict(template), indent=2, ensure_ascii=False) + "\n"
        if use_json
        else dump_template_yaml(template)
    )
    if output is None:
        typer.echo(text, nl=False)
        return
    try:
        output.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise fail(f"cannot write {str(output)!r}: {exc.strerror or exc}", 1) from None
    typer.echo(f"wrote {name} to {output}", err=True)


@templates_app.command("import")
def import_command(
    file: Annotated[Path, typer.Argument(help="A template file (YAML or JSON).")],
    db: DbOption = None,
    as_json: JsonOption = False,
) -> None:
    """Validate a template file and save it (an existing name gets a new version)."""
    template = _validated(file)
    with _store(db) as store:
        record = _save(store, template, [])
    if as_json:
        typer.echo(json.dumps(template_record_view(record, definition=False), indent=2))
    else:
        typer.echo(f"saved {record.name} v{record.version} (hash {record.hash[:12]})")


@templates_app.command("delete")
def delete_command(
    name: Annotated[str, typer.Argument(help="Template name.")],
    db: DbOption = None,
    as_json: JsonOption = False,
) -> None:
    """Delete every version of a template."""
    with _store(db) as store:
        count = store.delete_template(name)
    if as_json:
        typer.echo(json.dumps({"name": name, "deleted_versions": count}))
    else:
        typer.echo(f"deleted {name} ({count} version{'s' if count != 1 else ''})")


@templates_app.command("validate")
def validate_command(
    file: Annotated[Path, typer.Argument(help="A template file (YAML or JSON).")],
    db: Annotated[
        str | None, typer.Option("--db", help="Also check `template` steps for cycles through this store's templates.")
    ] = None,
    as_json: JsonOption = False,
) -> None:
    """Check a template file without saving it; exit 2 with the first problem if it is invalid."""
    template = _validated(file)
    if db is not None:
        with _store(db) as store:
            check_template_cycles(template, _lookup(store))
    summary = {
        "file": str(file),
        "name": template.name,
        "steps": len(template.steps),
        "inputs": list(template.inputs),
        "valid": True,
    }
    if as_json:
        typer.echo(json.dumps(summary))
    else:
        inputs = ", ".join(template.inputs) or "none"
        typer.echo(f"{file}: valid template {template.name!r}: {len(template.steps)} steps, inputs: {inputs}")


@templates_app.command("check")
def check_command(
    db: DbOption = None,
    config: Annotated[
        Path | None, typer.Option("--config", help="Check against this config's servers (default: those remembered).")
    ] = None,
    as_json: JsonOption = False,
) -> None:
    """List the saved templates whose tools changed definition since they were saved; exit 1 if any did."""
    import anyio

    from toolreel.replayer.tools_check import check_templates
    from toolreel.upstreams.config import load_config

    try:
        servers = load_config(config) if config is not None else None
    except ToolreelError as exc:
        raise fail(str(exc), 2) from None
    with _store(db) as store:
        checks = anyio.run(check_templates, store, servers)
    flagged = [check for check in checks if not check.clean]
    if as_json:
        typer.echo(json.dumps({"templates": [check.to_json() for check in flagged], "checked": len(checks)}))
    else:
        for check in flagged:
            for step, (tool, parts) in check.changed.items():
                typer.echo(f"{check.name} (v{check.version}): step {step!r}: {tool} changed ({', '.join(parts)})")
            for step, tool in check.missing.items():
                typer.echo(f"{check.name} (v{check.version}): step {step!r}: no server lists {tool}")
            if check.not_checked is not None:
                typer.echo(f"{check.name} (v{check.version}): not checked: {check.not_checked}")
        typer.echo(f"{len(checks)} templates checked, {len(flagged)} with tools that changed or cannot be reached")
    if flagged:
        raise typer.Exit(1)


def _validated(file: Path) -> Template:
    try:
        return load_template_file(file)
    except TemplateError as exc:
        raise fail(exc) from None


# --------------------------------------------------------------------------- templatize, schema


def templatize_command(
    execution_ids: Annotated[
        list[str], typer.Argument(help="Recorded execution id; more ids: other recordings of the same task.")
    ],
    save: Annotated[str | None, typer.Option("--save", help="Save the template under this name.")] = None,
    name: Annotated[str | None, typer.Option("--name", help="Template name when not saving.")] = None,
    description: Annotated[str | None, typer.Option("--description", help="Template description.")] = None,
    step: Annotated[list[str] | None, typer.Option("--step", help="Keep only this step (repeat); deps follow.")] = None,
    text_input: Annotated[
        list[str] | None, typer.Option("--input", "-i", help="NAME=VALUE: make this literal text an input (repeat).")
    ] = None,
    json_input: Annotated[
        list[str] | None, typer.Option("--input-json", help="NAME=JSON: make this JSON value an input (repeat).")
    ] = None,
    include_failed: Annotated[bool, typer.Option("--include-failed", help="Keep failed steps.")] = False,
    force: Annotated[bool, typer.Option("--force", help="Save even if the dry replay differs.")] = False,
    db: DbOption = None,
    as_json: JsonOption = False,
) -> None:
    """Run the templatizer on stored recordings; print the template and what it inferred.

    `--save` with no `-i`/`--input-json` applies the likely inputs, as a plain `toolreel__save_template` does;
    the template is replayed dry against the recordings first and saved only if it reproduces them (or --force).
    """
    inputs = _named_inputs(text_input or [], json_input or [])
    template_name = save or name or f"execution-{execution_ids[0][:8]}"
    with _store(db) as store:
        recordings = [store.get_steps(execution_id) for execution_id in execution_ids]
        options: dict[str, Any] = {"name": template_name, "description": description, "steps": step}
        result = templatize(recordings, inputs=inputs, include_failed=include_failed, **options)
        if save and not inputs and result.likely_inputs:
            chosen = result.ticked_inputs
            typer.echo(f"# applied the likely inputs {', '.join(chosen)} (name inputs with -i to choose)", err=True)
            result = templatize(recordings, inputs=chosen, include_failed=include_failed, **options)
        verification = verify(result, recordings)
        if save and not verification.verified and not force:
            steps = ", ".join(verification.steps)
            raise fail(f"not saved: the template does not replay its recording (steps {steps}); --force saves it", 1)
        record = _save(store, result.template, list(execution_ids)) if save else None
    if as_json:
        out = {**result.to_json(), "verified": verification.verified, "verification": verification.to_json()}
        if record is not None:
            out["saved"] = template_record_view(record, definition=False)
        typer.echo(json.dumps(out, indent=2, ensure_ascii=False))
        return
    typer.echo(dump_template_yaml(result.template), nl=False)
    _print_decisions(result.to_json())
    typer.echo(f"# verified: {str(verification.verified).lower()}", err=True)
    if record is not None:
        typer.echo(f"saved {record.name} v{record.version} (hash {record.hash[:12]})", err=True)


def _named_inputs(text: list[str], as_json: list[str]) -> dict[str, JSON]:
    named: dict[str, JSON] = {}
    for option, pairs, decode in (("--input", text, False), ("--input-json", as_json, True)):
        for pair in pairs:
            key, sep, value = pair.partition("=")
            if not sep or not key:
                raise fail(f"{option} {pair!r}: expected NAME=VALUE")
            if not decode:
                named[key] = value
                continue
            try:
                named[key] = json.loads(value)
            except json.JSONDecodeError as exc:
                raise fail(f"{option} {key}: {value!r} is not JSON ({exc.msg})") from None
    return named


def _print_decisions(report: dict[str, Any]) -> None:
    """What was inferred, proposed, suspected and dropped: on stderr, so stdout stays the template."""
    sections = (("inferred", "applied"), ("candidates", "candidate"), ("dropped", "dropped"))
    for key, label in sections:
        for item in report[key]:
            typer.echo(
                f"# {label}: {item['step']} {item['input_path']} = {item['ref']}  ({item['evidence']})", err=True
            )
    for likely in report["likely_inputs"]:
        places = ", ".join(f"{u['step']} {u['input_path']}" for u in likely["used_at"])
        mark = "" if likely["ticked"] else " [unticked: not applied]"
        typer.echo(
            f"# likely input {likely['name']} = {likely['value']!r} at {places} ({likely['reason']}){mark}", err=True
        )
    for left in report["left_out"]:
        typer.echo(f"# left out: {left['step']}: {left['why']}", err=True)
    for loop in report["loops"]:
        typer.echo(f"# loop: {loop['step']} over {loop['for_each']} ({loop['why']})", err=True)
    for kept in report["unrolled"]:
        typer.echo(f"# unrolled: {', '.join(kept['steps'])}: {kept['why']}", err=True)


def schema_command() -> None:
    """Print the JSON Schema of template files (draft 2020-12)."""
    typer.echo(json.dumps(template_json_schema(), indent=2))
