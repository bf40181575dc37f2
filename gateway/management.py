"""The layer above the pipe: recording every upstream call and the `toolreel__*` tools.

`GatewayHook` is the front's `ToolHook`: it records upstream calls (refs resolved first,
results tagged with the step), and serves the management tools of SPEC §6 from a
registry that the template and run modules add to.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import anyio
import anyio.abc

from toolreel.core import store_peek
from toolreel.core.errors import ExecutionError, NotFoundError, RefError, StoreError, ToolreelError
from toolreel.core.limits import PAGE_LIMIT
from toolreel.core.model import ExecutionQuery, ExecutionStatus
from toolreel.core.store_peek import Peek
from toolreel.core.tool_digest import DIGEST_META
from toolreel.gateway.hook import LocalCall, ToolHook, UpstreamCall
from toolreel.gateway.links import IDLE_GROUP_SECONDS, ClientLink, stateless_group
from toolreel.recorder import (
    EXECUTION_META,
    STEP_META,
    Recorder,
    RecordingSession,
    SharedRecordings,
    pending_journals,
    shares_recordings,
)
from toolreel.upstreams.hub import Hub, error_result

if TYPE_CHECKING:
    from toolreel.core.skill import Skill
    from toolreel.core.store import Store

__all__ = ["ANNOTATIONS", "Extension", "GatewayHook", "ManagementTool", "tool_result"]

logger = logging.getLogger("toolreel.gateway")
STORE_RETRY = 5.0
LISTING_WAIT = 20.0  # seconds a first tools/list waits for the store to list the templates
FAILING_WAIT = 2.0  # seconds a management read waits for a store whose opening failed
PEEK_EVERY = 5.0  # seconds between looks at an idle store for templates or runs from other processes

Handler = Callable[[dict[str, Any], Any, ClientLink], Awaitable[dict[str, Any]]]

_READ = {"readOnlyHint": True, "destructiveHint": False, "idempotentHint": True, "openWorldHint": False}
_WRITE = {"readOnlyHint": False, "destructiveHint": False, "openWorldHint": False}
_DESTROY = {"readOnlyHint": False, "destructiveHint": True, "idempotentHint": True, "openWorldHint": False}
_REPLAY = {"readOnlyHint": False, "destructiveHint": True, "openWorldHint": True}
# MCP tool annotations, so hosts can auto-approve the harmless tools and ask before the others.
# A replay calls upstream tools that may do anything: run and resume keep MCP's cautious defaults.
ANNOTATIONS: dict[str, dict[str, bool]] = {
    **dict.fromkeys(
        (
            "toolreel__status",
            "toolreel__get_execution",
            "toolreel__list_executions",
            "toolreel__list_templates",
            "toolreel__get_template",
        ),
        _READ,
    ),
    **dict.fromkeys(("toolreel__save_template", "toolreel__set_step_result"), _WRITE),
    **dict.fromkeys(("toolreel__delete_template", "toolreel__cancel_execution"), _DESTROY),
    **dict.fromkeys(
        (
            "toolreel__run_template",
            "toolreel__resume_execution",
            "toolreel__retry_execution",
            "toolreel__signal_execution",
        ),
        _REPLAY,
    ),
}


@dataclass(frozen=True, slots=True)
class ManagementTool:
    name: str
    description: str
    input_schema: dict[str, Any]
    handler: Handler

    def definition(self) -> dict[str, Any]:
        listed = {"name": self.name, "description": self.description, "inputSchema": self.input_schema}
        annotations = ANNOTATIONS.get(self.name)
        if annotations is not None:
            listed["annotations"] = dict(annotations)
        return listed


def tool_result(value: Any) -> dict[str, Any]:
    """A management tool's answer: structured content plus the same JSON as text."""
    structured = value if isinstance(value, dict) else {"result": value}
    return {
        "content": [{"type": "text", "text": json.dumps(value, ensure_ascii=False, default=str)}],
        "structuredContent": structured,
        "isError": False,
    }


def coded_error(exc: ToolreelError) -> dict[str, Any]:
    """A management tool's refusal: the message as text, `{error: {code, message}}` as structured content."""
    return {**error_result(str(exc)), "structuredContent": {"error": exc.as_json()}}


async def _then_cancel(wait: Callable[[], Awaitable[Any]], scope: anyio.CancelScope) -> None:
    await wait()
    scope.cancel()


def _schema(properties: dict[str, Any], required: tuple[str, ...] = ()) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": list(required)}


class GatewayHook(ToolHook):
    def __init__(
        self,
        hub: Hub,
        open_store: Callable[[], Store],
        *,
        secret_values: list[str],
        annotate: bool,
        record: bool,
        peek: Callable[[], Peek | None] | None = None,
        db: str | None = None,
    ) -> None:
        self.hub = hub
        self._open_store = open_store
        self._peek = peek
        self._db = db
        self._store: Store | None = None
        self._open_error: str | None = None  # the last attempt to open the store failed: why
        self._attempted = anyio.Event()  # set when an attempt to open the store fails
        self.store_ready = anyio.Event()
        self.store_wanted = anyio.Event()  # something in this process needs the store: open it now
        self.listing_ready = anyio.Event()  # the templates' tools are known (or there are none)
        self.secret_values = tuple(secret_values)
        # A database in this process's memory is invisible to the drain process: written from here.
        local = self.ready_store if store_peek.in_memory(db) else None
        self.recorder = Recorder(db, secret_values=secret_values, local_store=local)
        # Gateways sharing a database server keep one recording per stateless client between them.
        self.shared = (
            SharedRecordings(
                self.ready_store, self.recorder.writer, secret_values=secret_values, idle_seconds=IDLE_GROUP_SECONDS
            )
            if shares_recordings(db or os.environ.get("TOOLREEL_DB"))
            else None
        )
        self.annotate = annotate
        self.record = record
        self.tools: dict[str, ManagementTool] = {}
        self.extensions: tuple[Extension, ...] = ()  # the layers of tools over recording (templates, runs)
        self._add_recording_tools()

    def extend(self, *extensions: Extension) -> None:
        """Add layers above recording, in order: `hook_factory` assembles them; the web view adds
        itself when the gateway serves one. Before `run` enters their services."""
        self.extensions = (*self.extensions, *extensions)
        for extension in extensions:
            for tool in extension.tools():
                self.add(tool)

    async def run(self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        async with anyio.create_task_group() as tg, contextlib.AsyncExitStack() as stack:
            await tg.start(self.recorder.run)
            task_status.started()
            # Opened off the loop and after serving started: the store (SQLAlchemy) takes as long
            # to import as a server takes to start, and the first answers do not need it.
            await self._until_store_needed()
            store = await self._open_until_done()
            self._store = store
            self.store_ready.set()
            await self.hub.pins.keep_in(store)  # pinned tools' first-seen digests outlive the process
            for extension in self.extensions:
                await stack.enter_async_context(extension.service())
            self.listing_ready.set()
            await anyio.sleep_forever()

    async def _until_store_needed(self) -> None:
        """Return at once, unless a look at the store says it holds nothing to list or resume:
        then wait until something needs it (a step to record, a management tool, another
        process saving a template or starting a run), so an idle gateway never loads SQLAlchemy."""
        if self._peek is None or any(server.pin for server in self.hub.config.servers):
            return  # a pinned server's calls are checked against the digests the store keeps
        look = await anyio.to_thread.run_sync(self._peek)
        if look is not None and not look.templates:
            self.listing_ready.set()  # no template to list: the first tools/list need not wait for the store
        if look is None or not look.idle or pending_journals(self._db):  # journals: opening the store writes them
            return
        async with anyio.create_task_group() as tg:
            tg.start_soon(self._peek_until_busy)
            await self.store_wanted.wait()
            tg.cancel_scope.cancel()

    async def _peek_until_busy(self) -> None:
        assert self._peek is not None
        while True:
            await anyio.sleep(PEEK_EVERY)
            look = await anyio.to_thread.run_sync(self._peek)
            if look is None or not look.idle:
                self.store_wanted.set()
                return

    async def _open_until_done(self) -> Store:
        """Open the store; a store that cannot be opened is reported and retried, and the
        gateway goes on forwarding meanwhile."""
        while True:
            try:
                # finished even at shutdown: an in-memory store's queued steps are written through it
                with anyio.CancelScope(shield=True):
                    return await anyio.to_thread.run_sync(self._open_store)
            except StoreError as exc:  # the store turns file-system errors into StoreError too
                logger.error("%s; retrying in %g s", exc, STORE_RETRY)
                self.recorder.pending_errors.append(str(exc))
                self._open_error = str(exc)
                self._attempted.set()  # a read waiting for the store hears of the failure now
                self._attempted = anyio.Event()
            await anyio.sleep(STORE_RETRY)

    @property
    def store(self) -> Store:
        if self._store is None:
            raise StoreError("the store is still opening; try again in a moment")
        return self._store

    async def ready_store(self, timeout: float = 30.0) -> Store:
        """The store, once open; a store whose opening failed answers within FAILING_WAIT s with why."""
        self.store_wanted.set()
        with anyio.move_on_after(timeout):
            while self._open_error is None and not self.store_ready.is_set():
                async with anyio.create_task_group() as tg:  # whichever comes first: the store, or a failure
                    tg.start_soon(_then_cancel, self.store_ready.wait, tg.cancel_scope)
                    tg.start_soon(_then_cancel, self._attempted.wait, tg.cancel_scope)
            with anyio.move_on_after(FAILING_WAIT):
                await self.store_ready.wait()
        if self._store is None and self._open_error is not None:
            raise StoreError(f"the store cannot be opened ({self._open_error}); it is retried every {STORE_RETRY:g} s")
        return self.store  # StoreError (said what to do) if it is still not open

    def add(self, tool: ManagementTool) -> None:
        self.tools[tool.name] = tool

    # ToolHook ---------------------------------------------------------------------------
    async def tools_ready(self) -> None:
        # Every template is in a client's very first tools/list: wait (bounded) for the catalogue.
        # Waited once: a store that does not open in time is not waited for again (list_changed follows).
        with anyio.move_on_after(LISTING_WAIT):
            await self.listing_ready.wait()
        self.listing_ready.set()

    def tool_listing(self, upstream: list[dict[str, Any]]) -> list[dict[str, Any]]:
        local = self.extra_tools()
        for extension in self.extensions:  # tool search lists itself and a core instead of the rest
            upstream, local = extension.shown_upstream(upstream), extension.shown_local(local)
        return [*upstream, *local]

    def extra_tools(self) -> list[dict[str, Any]]:
        listed = [tool.definition() for tool in self.tools.values()]
        for extension in self.extensions:
            listed.extend(extension.listed())
        return listed

    def skills(self) -> Sequence[Skill]:
        return [skill for extension in self.extensions for skill in extension.skills()]

    def execution_tasks(self) -> Any:
        return next((found for e in self.extensions if (found := e.execution_tasks()) is not None), None)

    async def call_local(self, call: LocalCall) -> dict[str, Any] | None:
        name, arguments, ctx, link = call.name, call.arguments, call.ctx, call.link
        tool = self.tools.get(name)
        try:
            if tool is not None:
                return await tool.handler(arguments, ctx, link)
            for extension in self.extensions:
                answer = await extension.call(call)
                if answer is not None:
                    return answer
        except ToolreelError as exc:
            return coded_error(exc)
        return None

    async def call_upstream(self, call: UpstreamCall) -> dict[str, Any]:
        if not self.record:
            return await call.send(call.arguments)
        upstream, tool, send = call.upstream, call.tool, call.send
        session = self.session(call.link)
        if self.shared is not None and stateless_group(call.link.key):
            return await self._call_shared(call, session, self.shared)
        if self.recorder.writer.full:  # past the backlog's mark: slowed to the recorder's pace, for a bounded time
            await self.recorder.writer.room()
        try:
            resolved = await session.resolve_costly(call.arguments)  # a JSONPath filter: off the loop, bounded
            live = session.begin(upstream.name, tool, call.arguments, upstream.config.policy.shown_name(tool), resolved)
        except RefError as exc:
            return error_result(f"{exc} — nothing was sent to {upstream.name!r}")
        try:
            result = await send(live.resolved_input)
        except BaseException:  # cancellation included: the step is recorded, then it goes on
            session.end(live, None, error="the call was cancelled before it finished")
            raise
        # Closed (and journaled) before the answer goes out: a step the agent has heard of survives a kill -9.
        self.recorder.end(session, live, self._with_digest(result, upstream.name, tool))
        return self._tagged(result, live.name, live.execution_id)

    def _with_digest(self, result: dict[str, Any], server: str, tool: str) -> dict[str, Any]:
        """The result as recorded: with the digest of the definition the call was made with (core.tool_digest)."""
        digest = self.hub.tool_digest(server, tool)
        if digest is None:
            return result
        return {**result, "_meta": {**(result.get("_meta") or {}), DIGEST_META: digest}}

    async def _call_shared(
        self, call: UpstreamCall, session: RecordingSession, shared: SharedRecordings
    ) -> dict[str, Any]:
        """A stateless client's call where gateways share the store: its recording is the same on each."""
        upstream, tool = call.upstream, call.tool
        try:
            live = await shared.begin(
                session, upstream.name, tool, call.arguments, upstream.config.policy.shown_name(tool)
            )
        except RefError as exc:
            return error_result(f"{exc} — nothing was sent to {upstream.name!r}")
        except StoreError as exc:
            return error_result(f"toolreel could not record the call in the shared store ({exc}); nothing was sent")
        try:
            result = await call.send(live.resolved_input)
        except BaseException:
            session.end(live, None, error="the call was cancelled before it finished")
            raise
        try:
            await shared.end(session, live, result)
        except StoreError as exc:
            self.recorder.pending_errors.append(f"toolreel could not save the recording: {exc}")
        return self._tagged(result, live.name, live.execution_id)

    def link_closed(self, link: ClientLink) -> None:
        self.recorder.close_session(link.key)
        link.state.pop("recording", None)

    def session(self, link: ClientLink) -> RecordingSession:
        session = link.state.get("recording")
        if session is None:
            session = link.state["recording"] = self.recorder.session(link.key)
        assert isinstance(session, RecordingSession)
        return session

    def _tagged(self, result: dict[str, Any], step: str, execution_id: str) -> dict[str, Any]:
        meta = {**(result.get("_meta") or {}), STEP_META: step, EXECUTION_META: execution_id}
        if self.recorder.pending_errors:
            meta["toolreel/error"] = "; ".join(self.recorder.take_errors())
        elif (failing := self.recorder.writer.failing) is not None:  # said on every result while writes fail
            meta["toolreel/error"] = f"toolreel could not save the recording: {failing}"
        tagged = {**result, "_meta": meta}
        if self.annotate:
            note = {"type": "text", "text": f"[toolreel] recorded as step {step}; pass it on as @{step}"}
            tagged["content"] = [*(result.get("content") or []), note]
        return tagged

    # recording tools -----------------------------------------------------------------------
    def _add_recording_tools(self) -> None:
        self.add(
            ManagementTool(
                "toolreel__status",
                "Upstream servers (state, tool count, last error, name mapping) and this session's recorded steps.",
                _schema({}),
                self._status,
            )
        )
        self.add(
            ManagementTool(
                "toolreel__set_step_result",
                "Record a step with the given output without calling anything (inject data or mock a step). "
                "Later calls can pass it on as @<step>.",
                _schema(
                    {
                        "output": {"description": "The step's output (any JSON)."},
                        "step": {"type": "string", "description": "Step name; default <tool>_<n>."},
                        "tool": {"type": "string", "description": "The tool this output stands for (server__tool)."},
                    },
                    ("output",),
                ),
                self._set_step_result,
            )
        )
        self.add(
            ManagementTool(
                "toolreel__get_execution",
                "Status, steps, outputs and errors of an execution (recorded or replayed).",
                _schema({"id": {"type": "string"}}, ("id",)),
                self._get_execution,
            )
        )
        self.add(
            ManagementTool(
                "toolreel__list_executions",
                "Executions, newest first, paginated.",
                _schema(
                    {
                        "status": {"type": "string", "enum": [s.value for s in ExecutionStatus]},
                        "template": {"type": "string"},
                        "limit": {"type": "integer", "minimum": 1, "maximum": PAGE_LIMIT},
                        "cursor": {"type": "string"},
                    }
                ),
                self._list_executions,
            )
        )

    async def _status(self, arguments: dict[str, Any], ctx: Any, link: ClientLink) -> dict[str, Any]:
        upstreams = []
        for upstream in self.hub.upstreams.values():
            upstreams.append(
                {
                    "name": upstream.name,
                    "state": upstream.state.value,
                    "transport": upstream.config.transport,
                    "protocol": upstream.protocol_version,  # the era negotiated with it
                    "tools": len(upstream.listing.tools),
                    "last_error": upstream.last_error,
                    "restarts": upstream.restarts,
                    "stderr_tail": upstream.stderr_tail()[-1000:] or None,
                }
            )
        session = self.session(link)
        hub = self.hub
        return tool_result(
            {
                "upstreams": upstreams,
                "name_mapping": [{"listed": m.listed, "server": m.server, "name": m.name} for m in self.hub.mappings()],
                "pinned_changed": hub.pins.listing(),  # tools of pinned servers held until approved
                "config": {"source": hub.config.source, "reloads": hub.reloads, "error": hub.config_error},
                "execution_id": session.execution_id,
                "recording": self.record,
                "unsaved": self.recorder.writer.unsaved,  # records (steps, the execution) not in the store yet
                "held_back": self.recorder.writer.holding,  # calls wait for the recorder: its backlog is past the mark
                "recording_error": self.recorder.writer.failing,  # why the last write failed; None when healthy
                "open_sessions": len(self.recorder.sessions),  # recording sessions held in memory (closed ones are not)
                "steps": session.steps(),
            }
        )

    async def _set_step_result(self, arguments: dict[str, Any], ctx: Any, link: ClientLink) -> dict[str, Any]:
        if "output" not in arguments:
            raise RefError("toolreel__set_step_result needs 'output' (any JSON value)")
        for key in ("step", "tool"):
            if not isinstance(arguments.get(key, ""), str):
                raise RefError(f"toolreel__set_step_result: {key!r} is a string, not {arguments[key]!r}")
        output, step, tool = arguments["output"], arguments.get("step"), arguments.get("tool")
        if self.shared is not None and stateless_group(link.key):
            record = await self.shared.preset(self.session(link), output, step=step, tool=tool)
        else:
            record = self.session(link).preset(output, step=step, tool=tool)
        return tool_result({"step": record.name, "execution_id": record.execution_id})

    async def _get_execution(self, arguments: dict[str, Any], ctx: Any, link: ClientLink) -> dict[str, Any]:
        from toolreel.replayer import execution_view

        execution_id = str(arguments.get("id", ""))
        store = await self.ready_store()
        await self.recorder.writer.flush()
        execution = await anyio.to_thread.run_sync(store.get_execution, execution_id)
        if not link.may_see(execution.session):
            raise NotFoundError(f"no execution {execution_id!r} recorded with this client's credentials")
        steps = await anyio.to_thread.run_sync(store.get_steps, execution_id)
        return tool_result(execution_view(execution, steps))

    async def _list_executions(self, arguments: dict[str, Any], ctx: Any, link: ClientLink) -> dict[str, Any]:
        status = _status(arguments.get("status"))
        limit = _limit(arguments.get("limit"))
        store = await self.ready_store()
        await self.recorder.writer.flush()
        page, cursor = await anyio.to_thread.run_sync(
            lambda: store.list_executions(
                ExecutionQuery(status, arguments.get("template"), limit, arguments.get("cursor"))
            )
        )
        items = [
            {
                "execution_id": e.id,
                "status": e.status.value,
                "mode": e.mode.value,
                "template": e.template,
                "created_at": e.created_at,
                "updated_at": e.updated_at,
                "error": e.error,
            }
            for e in page
            if link.may_see(e.session)
        ]
        return tool_result({"executions": items, "next_cursor": cursor})


class Extension:
    """A layer of tools over the recording hook; every part is optional."""

    def tools(self) -> Sequence[ManagementTool]:
        """Management tools it serves, listed beside the upstream tools."""
        return ()

    def listed(self) -> list[dict[str, Any]]:
        """Tools whose list changes while serving (one `reel__<name>` per template)."""
        return []

    def shown_upstream(self, tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The upstream tools a client is listed (tool search lists none)."""
        return tools

    def shown_local(self, tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The gateway's own tools a client is listed (tool search lists a core; the rest are searched)."""
        return tools

    def skills(self) -> Sequence[Skill]:
        """Skills it serves (one per template)."""
        return ()

    def execution_tasks(self) -> Any:
        """Its runs as tasks (gateway.tasks.ExecutionTasks), if it has runs."""
        return None

    async def call(self, call: LocalCall) -> dict[str, Any] | None:
        """Answer a call of a tool not in `tools()` (a `reel__` tool); None when it is not its own."""
        return None

    def service(self) -> contextlib.AbstractAsyncContextManager[None]:
        """What runs while the gateway serves, once the store is open (an engine, a poll)."""
        return contextlib.nullcontext()


def _limit(value: object) -> int:
    """toolreel__list_executions' page size: a whole number from 1 to PAGE_LIMIT (default 50)."""
    if value is None:
        return 50
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= PAGE_LIMIT:
        raise ExecutionError(
            f"toolreel__list_executions: limit is a whole number from 1 to {PAGE_LIMIT}, not {value!r}"
        )
    return value


def _status(value: object) -> ExecutionStatus | None:
    if not value:
        return None
    try:
        return ExecutionStatus(str(value))
    except ValueError:
        known = ", ".join(s.value for s in ExecutionStatus)
        raise ExecutionError(f"toolreel__list_executions: status is one of {known}, not {value!r}") from None
