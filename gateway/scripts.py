"""Code Mode (SPEC §13): `toolreel__run_script` and `toolreel__describe_tools`.

A script runs in QuickJS on a worker thread of its own (`core.script_sandbox`); each tool call it
awaits is handed to the event loop and made through the front exactly as the client's own call
(policy, confirm, refs, recording). A script run is an execution (template `toolreel__run_script`,
status `recording` while it runs) whose steps journal its finished calls in order; a gateway that
starts finds the runs a dead process left and runs them again, answering finished calls from that
journal. The caller's recording gets a step `run_script_<n>` that records the code, the input, the
inner steps and the outcome.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import socket
import time
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING, Any

import anyio
import anyio.from_thread
import anyio.to_thread

from toolreel.core.errors import CodeError, ToolreelError
from toolreel.core.model import (
    JSON,
    SCRIPT_TEMPLATE,
    Execution,
    ExecutionMode,
    ExecutionQuery,
    ExecutionStatus,
    StepRecord,
    new_id,
)
from toolreel.core.refs import step_output
from toolreel.core.script_run import answer_from_journal, answered, drive_script
from toolreel.core.script_sandbox import Answer, Finished, Request, ScriptLimits
from toolreel.core.tool_types import declaration
from toolreel.gateway.hook import LocalCall
from toolreel.gateway.links import ClientLink, owner_of
from toolreel.gateway.management import Extension, GatewayHook, tool_result
from toolreel.recorder import EXECUTION_META, STEP_META, StepEntry
from toolreel.upstreams.hub import error_result
from toolreel.upstreams.upstream import START_TIMEOUT

if TYPE_CHECKING:
    from toolreel.core.store import Store

__all__ = ["SCRIPT_TEMPLATE", "ScriptTools"]

logger = logging.getLogger("toolreel.gateway")

RUN_SCRIPT = "toolreel__run_script"
DESCRIBE_TOOLS = "toolreel__describe_tools"
LEASE_SECONDS = 30.0  # a script run whose lease lapsed was left by a dead process: resumed
_RENEW_EVERY = LEASE_SECONDS / 3
_MAX_TIMEOUT = 3600.0
_MAX_MEMORY_MB = 1024
_MAX_CALLS = 100_000

_RUN_SCRIPT_HELP = """\
Run a JavaScript script that calls tools, and get only its result back (Code Mode). `code` is the body of \
an async function (or a module whose `export default` is one); it reads `input`, calls \
`await tools.<server>.<tool>(args)` (or `await callTool("<server>__<tool>", args)`), which returns the \
tool's output (structured content, else the JSON in its text, else the text) and throws when the tool \
fails, and returns a JSON value. console.log lines come back too. No network, files, clock or \
randomness: pass such values in `input`. Every call is recorded as a step, and a run cut off by a \
restart is resumed without repeating finished calls. toolreel__describe_tools gives TypeScript \
declarations of the tools. Servers: {servers}."""


def _schema(properties: dict[str, Any], required: tuple[str, ...] = ()) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": list(required)}


_RUN_SCHEMA = _schema(
    {
        "code": {"type": "string", "description": "An async function body, or a module with `export default`."},
        "input": {"type": "object", "description": "JSON the script reads as `input`."},
        "timeout": {"type": "number", "description": "Wall seconds for the whole run (default 30)."},
        "memory_mb": {"type": "integer", "description": "Memory limit of the sandbox in MiB (default 128)."},
        "max_calls": {"type": "integer", "description": "Most tool calls the script may make (default 1000)."},
    },
    ("code",),
)
_DESCRIBE_SCHEMA = _schema(
    {
        "names": {
            "type": "array",
            "items": {"type": "string"},
            "description": "Tools (server__tool), or server names for all of a server's tools.",
        }
    },
    ("names",),
)


@dataclass(frozen=True, slots=True)
class ScriptSpec:
    """What a script run was asked: stored as the run's `inputs`, so a resumed run is the same run."""

    code: str
    input: dict[str, JSON]
    limits: ScriptLimits

    def stored(self) -> dict[str, JSON]:
        limits = self.limits
        return {
            "code": self.code,
            "input": self.input,
            "limits": {"timeout": limits.timeout, "memory_mb": limits.memory_mb, "max_calls": limits.max_calls},
        }

    @staticmethod
    def parse(arguments: Mapping[str, Any]) -> ScriptSpec:
        code, value = arguments.get("code"), arguments.get("input", {})
        if not isinstance(code, str) or not code.strip():
            raise CodeError(f"{RUN_SCRIPT} needs 'code': the body of an async function, as a string")
        if value is None:
            value = {}
        if not isinstance(value, dict):
            raise CodeError(f"{RUN_SCRIPT}: 'input' is a JSON object, not {type(value).__name__}")
        stored = arguments.get("limits")  # a stored run keeps them apart; a call passes them alongside
        return ScriptSpec(code, value, _limits(stored if isinstance(stored, dict) else arguments))


def _limits(arguments: Mapping[str, Any]) -> ScriptLimits:
    default = ScriptLimits()
    timeout = _bounded(arguments, "timeout", default.timeout, 0.01, _MAX_TIMEOUT)
    memory = _bounded(arguments, "memory_mb", default.memory_mb, 8, _MAX_MEMORY_MB)
    calls = _bounded(arguments, "max_calls", default.max_calls, 0, _MAX_CALLS)
    return ScriptLimits(float(timeout), int(memory), int(calls))


def _bounded(arguments: Mapping[str, Any], key: str, default: float, low: float, high: float) -> float:
    value = arguments.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int | float) or not low <= value <= high:
        raise CodeError(f"{RUN_SCRIPT}: {key!r} is a number from {low:g} to {high:g}, not {value!r}")
    return value


@dataclass(slots=True)
class _Calls:
    """The calls of one run: the journal of a run resumed (answered in order), then live calls."""

    journal: Sequence[StepRecord] = ()
    steps: list[str] = field(default_factory=list)  # the recording's step of each call, in order


class _Run:
    """One script run: its calls made through the front as the client's own, each journaled."""

    def __init__(self, tools: ScriptTools, execution: Execution, spec: ScriptSpec, caller: LocalCall) -> None:
        # `caller`: the client's call that started the run (a resumed run's stands for its dead client)
        self.tools, self.execution, self.spec, self.caller = tools, execution, spec, caller
        self.calls = _Calls()

    async def run(self) -> Finished:
        return await drive_script(self.spec.code, self.spec.input, self.spec.limits, self._one)

    async def _one(self, index: int, request: Request) -> Answer | CodeError:
        if index < len(self.calls.journal):
            return answer_from_journal(self.calls.journal[index], request, index)
        listed = await self.tools.listed_name(request.name)
        if isinstance(listed, CodeError):
            return listed
        forward = self.tools.hook.forward
        assert forward is not None, "the front sets how tools are forwarded"
        started = time.time()
        result = await forward(self.caller, listed, request.arguments)
        step = (result.get("_meta") or {}).get(STEP_META) or f"call_{index + 1}"
        self.calls.steps.append(step)
        self._journal(index, step, listed, request, result, started)
        if result.get("isError"):
            return Answer(request.id, False, error=_error_text(result))
        return Answer(request.id, True, step_output(result))

    def _journal(
        self, index: int, step: str, listed: str, request: Request, result: Mapping[str, Any], started: float
    ) -> None:
        """The finished call as a step of the run (through the recorder's journal: it survives a kill -9)."""
        if not self.tools.hook.record:
            return
        server, _, tool = listed.rpartition("__")
        clean = {k: v for k, v in result.items() if k != "_meta"}
        entry = StepEntry(
            "step", self.execution.id, step, index + 1, server or None, tool, request.arguments, None,
            clean, None, started, time.time(),
        )  # fmt: skip
        self.tools.hook.recorder.writer.submit(entry)


def _error_text(result: Mapping[str, Any]) -> str:
    texts = [c.get("text", "") for c in result.get("content") or [] if isinstance(c, dict) and c.get("type") == "text"]
    return " ".join(t for t in texts if t).strip()[:2000] or "the tool reported an error"


class ScriptTools(Extension):
    """`toolreel__run_script` and `toolreel__describe_tools`, and the resumption of cut-off runs."""

    def __init__(self, hook: GatewayHook) -> None:
        self.hook = hook
        self.owner = f"{socket.gethostname()}:{os.getpid()}:scripts-{new_id()[:8]}"  # as the replayer's claims
        self._store: Store | None = None

    # Extension --------------------------------------------------------------------------
    def listed(self) -> list[dict[str, Any]]:
        servers = ", ".join(sorted(self.hook.hub.upstreams)) or "none yet"
        return [
            {
                "name": RUN_SCRIPT,
                "description": _RUN_SCRIPT_HELP.format(servers=servers),
                "inputSchema": _RUN_SCHEMA,
                "annotations": {"readOnlyHint": False, "destructiveHint": True, "openWorldHint": True},
            },
            {
                "name": DESCRIBE_TOOLS,
                "description": "TypeScript declarations of tools for toolreel__run_script scripts "
                "(`tools.<server>.<tool>(args): Promise<output>`).",
                "inputSchema": _DESCRIBE_SCHEMA,
                "annotations": {"readOnlyHint": True, "destructiveHint": False, "openWorldHint": False},
            },
        ]

    async def call(self, call: LocalCall) -> dict[str, Any] | None:
        if call.name == RUN_SCRIPT:
            return await self.run_script(call)
        if call.name == DESCRIBE_TOOLS:
            return tool_result({"declarations": self.describe(call.arguments.get("names"))})
        return None

    @contextlib.asynccontextmanager
    async def service(self) -> AsyncIterator[None]:
        self._store = self.hook.store
        async with anyio.create_task_group() as tg:
            tg.start_soon(self._keep_lease)
            tg.start_soon(self._resume_left)
            yield
            tg.cancel_scope.cancel()

    # toolreel__describe_tools --------------------------------------------------------------
    def describe(self, names: object) -> str:
        if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
            raise ToolreelError(f"{DESCRIBE_TOOLS} needs 'names': a list of tool names (server__tool) or servers")
        hub = self.hook.hub
        grouped: dict[str, dict[str, Mapping[str, Any]]] = {}
        unknown = []
        for name in names:
            found = [t for t in hub.listed_tools() if _matches(hub, str(t.get("name")), name)]
            if not found:
                unknown.append(name)
            for tool in found:
                route = hub.tool_route(str(tool["name"]))
                if route is not None:
                    grouped.setdefault(route.upstream.name, {})[route.shown or route.name] = tool
        if unknown:
            raise ToolreelError(
                f"{DESCRIBE_TOOLS}: no tool or server {', '.join(map(repr, unknown))}; "
                f"{hub.unknown_tool_message(unknown[0])}"
            )
        return declaration(grouped)

    async def listed_name(self, name: str) -> str | CodeError:
        """The listed name a script's `server__tool` (or `tools.server.tool`) calls; a named error if none."""
        hub = self.hook.hub
        if name.startswith(("toolreel__", "reel__")):
            return CodeError(f"script_tool_refused: a script calls upstream tools only, not {name!r}")
        if await hub.route_soon(name, START_TIMEOUT) is not None:  # as a client's call: waits for starting servers
            return name
        server, _, tool = name.partition("__")
        for listed in (str(t.get("name")) for t in hub.listed_tools()):
            route = hub.tool_route(listed)
            if route is not None and route.upstream.name == server and tool in (route.name, route.shown):
                return listed
        return CodeError(f"script_unknown_tool: {hub.unknown_tool_message(name)} (denied tools are not listed)")

    # toolreel__run_script ------------------------------------------------------------------
    async def run_script(self, call: LocalCall) -> dict[str, Any]:
        spec = ScriptSpec.parse(call.arguments)
        if not self.hook.record:
            return await self._run_unrecorded(spec, call)
        link, hook = call.link, self.hook
        session = hook.session(link)
        step = session.preset_name(None, RUN_SCRIPT)
        script_id = new_id()
        begun = session.keep_preset(step, {"execution_id": script_id, "status": "running"}, RUN_SCRIPT)
        hook.recorder.writer.submit(begun)
        store = await hook.ready_store()
        now = time.time()
        execution = Execution(
            id=script_id, mode=ExecutionMode.RECORD, status=ExecutionStatus.RECORDING, created_at=now,
            updated_at=now, session=link.key, template=SCRIPT_TEMPLATE, inputs=spec.stored(),
            parent_id=session.execution_id, parent_step=step, claimed_by=self.owner,
            lease_until=now + LEASE_SECONDS,
        )  # fmt: skip
        await anyio.to_thread.run_sync(store.create_execution, execution)
        run = _Run(self, execution, spec, call)
        finished = await run.run()
        summary = await self._finish(store, run, finished)
        session.keep_preset(step, summary, RUN_SCRIPT, seq=begun.seq)
        hook.recorder.writer.submit(begun._replace(output=summary))
        return _answer(summary, step, script_id)

    async def _run_unrecorded(self, spec: ScriptSpec, call: LocalCall) -> dict[str, Any]:
        """`--no-record`: the script runs and nothing of it is stored (so nothing resumes it either)."""
        now = time.time()
        execution = Execution(
            new_id(), ExecutionMode.RECORD, ExecutionStatus.RECORDING, now, now, template=SCRIPT_TEMPLATE
        )
        run = _Run(self, execution, spec, call)
        return _answer(_summary(run, await run.run()), None, execution.id)

    async def _finish(self, store: Store, run: _Run, finished: Finished) -> dict[str, Any]:
        summary = _summary(run, finished)
        error = finished.error
        status = ExecutionStatus.FAILED if error else ExecutionStatus.SUCCEEDED
        fields = {"status": status, "output": finished.value, "error": str(error) if error else None}
        with anyio.CancelScope(shield=True):
            await anyio.to_thread.run_sync(
                lambda: store.update_execution(run.execution.id, claimed_by=None, lease_until=None, **fields)
            )
        return summary

    # durability ------------------------------------------------------------------------
    async def _keep_lease(self) -> None:
        assert self._store is not None
        store = self._store
        while True:
            await anyio.sleep(_RENEW_EVERY)
            with contextlib.suppress(ToolreelError):  # a store that fails now is retried next time
                await anyio.to_thread.run_sync(
                    lambda: store.renew_claims(self.owner, lease_seconds=LEASE_SECONDS, now=time.time())
                )

    async def _resume_left(self) -> None:
        """Script runs a dead process left (still `recording`; its process gone, or its lease lapsed) are
        run again from their journal, as soon as the store is open and then every few seconds."""
        assert self._store is not None
        store = self._store
        async with anyio.create_task_group() as tg:
            while True:
                for execution in await anyio.to_thread.run_sync(self._claim_left, store):
                    tg.start_soon(self._resume, store, execution)
                await anyio.sleep(_RENEW_EVERY)

    def _claim_left(self, store: Store) -> list[Execution]:
        from toolreel.replayer._owners import gone_here  # the replayer's rule for a dead claim's owner

        query = ExecutionQuery(status=ExecutionStatus.RECORDING, template=SCRIPT_TEMPLATE, limit=100)
        page, _ = store.list_executions(query)
        claimed = []
        for execution in page:
            owner = execution.claimed_by
            if owner == self.owner:
                continue  # ours: running here
            dead = [owner] if owner and gone_here(owner) else []
            mine = store.claim_execution(
                execution.id, self.owner, lease_seconds=LEASE_SECONDS, now=time.time(), take_over=dead
            )
            if mine is not None:
                claimed.append(mine)
        return claimed

    async def _resume(self, store: Store, execution: Execution) -> None:
        try:
            spec = ScriptSpec.parse(execution.inputs or {})
        except CodeError as exc:
            failed = partial(store.update_execution, execution.id, status=ExecutionStatus.FAILED, error=str(exc))
            await anyio.to_thread.run_sync(failed)
            return
        await self.hook.recorder.writer.flush()
        journal = await anyio.to_thread.run_sync(store.get_steps, execution.id)
        link = await self._resumed_link(store, execution)
        run = _Run(self, execution, spec, LocalCall(RUN_SCRIPT, {}, link))
        run.calls.journal = [s for s in journal if answered(s)]
        run.calls.steps = [s.name for s in run.calls.journal]
        logger.info(
            "resuming script run %s (%d finished calls answered from its journal)", execution.id, len(run.calls.journal)
        )
        finished = await run.run()
        summary = await self._finish(store, run, finished)
        if execution.parent_id and execution.parent_step:
            await anyio.to_thread.run_sync(_record_summary, store, execution, summary)
        self.hook.link_closed(link)

    async def _resumed_link(self, store: Store, execution: Execution) -> ClientLink:
        """A link that records into the caller's recording again (its names go on where they stopped)."""
        owner = owner_of(execution.session)
        key = f"{owner}/script:{execution.id}" if owner else f"script:{execution.id}"
        link = ClientLink(key=key)
        session = self.hook.session(link)
        if execution.parent_id is not None:
            parent = await anyio.to_thread.run_sync(store.get_execution, execution.parent_id)
            steps = await anyio.to_thread.run_sync(store.get_steps, execution.parent_id)
            session.adopt(parent.id, parent.created_at)
            session.absorb(steps)
        return link


def _record_summary(store: Store, execution: Execution, summary: dict[str, Any]) -> None:
    assert execution.parent_id is not None and execution.parent_step is not None
    for step in store.get_steps(execution.parent_id):
        if step.name == execution.parent_step:
            store.put_step(step.replace(output=summary, ended_at=time.time()))


def _matches(hub: Any, listed: str, asked: str) -> bool:
    if listed == asked:
        return True
    route = hub.tool_route(listed)
    return route is not None and route.upstream.name == asked


def _summary(run: _Run, finished: Finished) -> dict[str, Any]:
    """What the run recorded and what its caller is told (the recording's `run_script_<n>` step output)."""
    error = finished.error
    summary: dict[str, Any] = {
        "execution_id": run.execution.id,
        "status": "failed" if error else "succeeded",
        "result": finished.value,
        "logs": list(finished.logs),
        "calls": list(run.calls.steps),
        "code": run.spec.code,
        "input": run.spec.input,
    }
    if error is not None:
        summary["error"] = {"code": str(error).partition(":")[0], "message": str(error)}
    return summary


def _answer(summary: dict[str, Any], step: str | None, script_id: str) -> dict[str, Any]:
    """The run's answer: the structured content names every inner step; the text, read by the model,
    says how many there were (a long loop's step names would cost it what the script saved)."""
    meta = {EXECUTION_META: script_id} if step is None else {STEP_META: step, EXECUTION_META: script_id}
    shown = {k: summary[k] for k in ("execution_id", "status", "result", "logs", "calls", "error") if k in summary}
    brief = {k: v for k, v in shown.items() if k not in ("calls", "logs", "error") or v}
    brief["calls"] = len(shown["calls"])
    if "error" in summary:
        result = error_result(f"{summary['error']['message']} (script run {script_id})")
        result["structuredContent"] = shown
        return {**result, "_meta": meta}
    text = json.dumps(brief, ensure_ascii=False, separators=(",", ":"), default=str)
    return {"content": [{"type": "text", "text": text}], "structuredContent": shown, "isError": False, "_meta": meta}
