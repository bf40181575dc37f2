"""Every template of the templatizer's corpus, exported as a Python program, makes the calls `toolreel run` makes.

Each recording of fixtures/recordings/ is templatized as tests/templatizer/test_python_export_corpus.py does, and
played by
`fixtures.world` servers answering the recording's own calls with its own results (the world of the session, built
from its first recording). The template then runs twice against fresh world servers: in the real replayer (what
`toolreel run` does), and as the exported program (its `run` coroutine called in this process, with the world's
servers for `--config`). Each world server logs the calls it gets: the two logs hold the same calls, and the two
runs give the same output. A template the export refuses on purpose
(tests/templatizer/test_python_export_corpus.py) is left out; every other one runs.

Process starts: the world servers only (one per server of the session, per run); replayer and program run here.
"""

from __future__ import annotations

import importlib.util
import json
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import anyio
import pytest

from fixtures.recordings import CorpusEntry, load_corpus
from fixtures.world import server_entries
from toolreel.core.errors import TemplateError
from toolreel.core.model import StepKind, TemplateDraft
from toolreel.core.secrets import REDACTED
from toolreel.core.store import open_store
from toolreel.core.template import Template
from toolreel.core.template_io import template_to_dict
from toolreel.replayer import Engine, load_template
from toolreel.templatizer import templatize
from toolreel.templatizer.to_python import python_program
from toolreel.upstreams.config import parse_config
from toolreel.upstreams.hub import open_upstreams

pytestmark = [pytest.mark.anyio, pytest.mark.slow, pytest.mark.timeout(900)]

REPO: Final = Path(__file__).resolve().parents[2]
PARALLEL: Final = 2  # templates at once: each waits mostly on its world servers starting
RUN_SECONDS: Final = 180.0  # one template, both ways, on a loaded 2-core machine
# A secret input's value in these runs: the recording kept `«redacted»` where it was, and the world expects this.
SECRET: Final = "world-secret-7f3a"


@dataclass(frozen=True)
class Outcome:
    name: str
    problems: tuple[str, ...]
    calls: int


def _world(entry: CorpusEntry) -> dict[str, Any]:
    """The session's servers as `fixtures.world` plays them: its tools, and its first recording's answers."""
    tools: dict[str, dict[str, dict[str, Any]]] = {}
    responses: list[dict[str, Any]] = []
    for step in entry.recordings[0]:
        if step.kind is not StepKind.TOOL or step.server is None or step.tool is None:
            continue
        schema = entry.tools.get(f"{step.server}__{step.tool}") or {"type": "object"}
        tools.setdefault(step.server, {})[step.tool] = {"name": step.tool, "inputSchema": schema}
        arguments = step.resolved_input if isinstance(step.resolved_input, dict) else {}
        # A redacted value was a secret input (the runs give SECRET) or a secret the session got from a server
        # (the world answers it as recorded, redacted): the world answers both spellings.
        for spelling in {json.dumps(arguments, sort_keys=True), json.dumps(_unredacted(arguments), sort_keys=True)}:
            answer = {"server": step.server, "tool": step.tool, "arguments": json.loads(spelling)}
            responses.append({**answer, "result": step.result})
    return {"tools": {server: list(found.values()) for server, found in tools.items()}, "responses": responses}


def _unredacted(value: Any) -> Any:
    """A recorded value with each redacted secret as the value the runs give the secret input."""
    if isinstance(value, str):
        return value.replace(REDACTED, SECRET)
    if isinstance(value, list):
        return [_unredacted(item) for item in value]
    if isinstance(value, dict):
        return {key: _unredacted(item) for key, item in value.items()}
    return value


def _inputs(template: Template, recorded: Mapping[str, Any]) -> dict[str, Any]:
    """The first recording's input values (as `toolreel run -i` would give them); secrets as SECRET."""
    return {name: SECRET if template.inputs[name].secret else value for name, value in recorded.items()}


def _calls(log: Path) -> list[str]:
    lines = log.read_text(encoding="utf-8").splitlines()
    return [json.dumps(json.loads(line), sort_keys=True) for line in lines if line.strip()]


async def _replayed(template: Template, inputs: dict[str, Any], servers: dict[str, Any], where: Path) -> Any:
    config = parse_config({"mcpServers": servers}, source=str(where))
    store = open_store(f"sqlite:///{where / 'store.db'}")
    try:
        store.save_template(TemplateDraft(template.name, template_to_dict(template)))
        saved = load_template(store, template.name)
        async with open_upstreams(config, wait=90) as hub, Engine(store, hub) as engine:
            execution = await engine.run_template(saved, inputs)
        status = getattr(execution.status, "value", str(execution.status))
        assert status == "succeeded", f"toolreel run ended {status}: {execution.error}"
        return execution.output
    finally:
        store.close()


async def _exported(program: str, inputs: dict[str, Any], servers: dict[str, Any], where: Path) -> Any:
    """The program's `run(inputs, servers, yes)`, as its `main()` calls it with `--config` (imported, not spawned)."""
    path = where / "exported.py"
    path.write_text(program, encoding="utf-8")
    spec = importlib.util.spec_from_file_location(f"exported_{where.name}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return await module.run(inputs, servers, False)


async def _round_trip(
    entry: CorpusEntry, template: Template, recorded: Mapping[str, Any], program: str, tmp: Path
) -> Outcome:
    world = _world(entry)
    inputs = _inputs(template, recorded)
    where = tmp / entry.name
    await anyio.Path(where).mkdir()
    world_file = where / "world.json"
    world_file.write_text(json.dumps(world), encoding="utf-8")
    logs = {way: where / f"{way}.jsonl" for way in ("run", "export")}
    problems: list[str] = []
    try:
        with anyio.fail_after(RUN_SECONDS):
            ran = await _replayed(template, inputs, server_entries(world, world_file, logs["run"]), where)
            exported = await _exported(program, inputs, server_entries(world, world_file, logs["export"]), where)
    except (SystemExit, Exception) as exc:  # one template's failure names it
        return Outcome(entry.name, (_leaves(exc),), 0)
    run_calls, export_calls = (_calls(log) if log.exists() else [] for log in logs.values())
    if Counter(run_calls) != Counter(export_calls):
        problems.append(f"calls differ: toolreel run {run_calls} / exported {export_calls}")
    if json.loads(json.dumps(exported)) != json.loads(json.dumps(ran)):
        problems.append(f"outputs differ: toolreel run {ran!r} / exported {exported!r}")
    if not run_calls:
        problems.append("no call reached a world server")
    return Outcome(entry.name, tuple(problems), len(run_calls))


def _leaves(exc: BaseException) -> str:
    """What went wrong, out of the exception groups of the task groups around it."""
    if isinstance(exc, BaseExceptionGroup):
        return "; ".join(_leaves(inner) for inner in exc.exceptions)
    return f"{type(exc).__name__}: {exc}"


def _only(template: Template) -> Callable[[str, int | None], Template]:
    """The loader of child templates: a corpus template has none but itself."""
    return lambda name, version: template


def _exportable() -> list[tuple[CorpusEntry, Template, Mapping[str, Any], str]]:
    found: list[tuple[CorpusEntry, Template, Mapping[str, Any], str]] = []
    for entry in load_corpus():
        made = templatize(entry.recordings, name=entry.name, schemas=entry.tools)
        template = made.template
        try:
            program = python_program(template, _only(template))
        except TemplateError:
            continue  # refused on purpose, for a reason tests/templatizer/test_python_export_corpus.py checks
        found.append((entry, template, made.run_inputs[0] if made.run_inputs else {}, program))
    return found


async def test_every_corpus_template_exported_makes_the_calls_toolreel_run_makes(tmp_path: Path) -> None:
    exportable = _exportable()
    assert len(exportable) >= 25, [entry.name for entry, *_ in exportable]
    outcomes: list[Outcome] = []
    limiter = anyio.CapacityLimiter(PARALLEL)

    async def one(entry: CorpusEntry, template: Template, recorded: Mapping[str, Any], program: str) -> None:
        async with limiter:
            outcomes.append(await _round_trip(entry, template, recorded, program, tmp_path))

    async with anyio.create_task_group() as tg:
        for entry, template, recorded, program in exportable:
            tg.start_soon(one, entry, template, recorded, program)
    failed = {o.name: o.problems for o in outcomes if o.problems}
    assert failed == {}, json.dumps(failed, indent=1)
    assert sum(o.calls for o in outcomes) >= len(outcomes)
