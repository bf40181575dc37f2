"""A real `ToolCaller` for tests: MCP sessions over stdio to fixture servers, `server__tool` names.

One session per server, reused for every call (legacy `initialize` handshake). A server that
crashed fails its in-flight calls as transient `UpstreamError`s and is restarted on the next
call, as the gateway does, so retry policies can be tested against a real disappearing server.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
from anyio.abc import TaskGroup, TaskStatus
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.shared.exceptions import MCPError
from mcp.types import CONNECTION_CLOSED, REQUEST_TIMEOUT

from fixtures.servers import fixture_params
from tests.waits import wait_until
from toolreel.core.caller import ProgressFn, ToolCall
from toolreel.core.errors import UpstreamError, UpstreamTimeout
from toolreel.core.model import TemplateDraft

__all__ = ["Harness", "StdioCaller", "fixture_env", "harness", "open_caller", "saved", "template", "wait_until"]


@dataclass
class _Connection:
    session: ClientSession | None = None
    tools: frozenset[str] = frozenset()
    closed: anyio.Event = field(default_factory=anyio.Event)
    starts: int = 0


class StdioCaller:
    def __init__(self, servers: Mapping[str, StdioServerParameters], tg: TaskGroup) -> None:
        self._params = dict(servers)
        self._tg = tg
        self._connections: dict[str, _Connection] = {}
        self._lock = anyio.Lock()
        self._called: dict[str, anyio.Event] = {}
        self.calls = 0

    async def called(self, name: str) -> None:
        """Wait until tool `name` has been called (its request sent upstream)."""
        await self._called.setdefault(name, anyio.Event()).wait()

    async def connect_all(self) -> None:
        async with anyio.create_task_group() as tg:
            for name in self._params:
                tg.start_soon(self._session_of, name)

    def close(self) -> None:
        for connection in self._connections.values():
            connection.closed.set()

    def server_of(self, name: str) -> str | None:
        server, sep, tool = name.partition("__")
        if not sep or server not in self._params:
            return None
        connection = self._connections.get(server)
        if connection is not None and connection.session is not None and tool not in connection.tools:
            return None
        return server

    async def call_tool(self, call: ToolCall) -> dict[str, Any]:
        name, timeout = call.name, call.timeout
        server, sep, tool = name.partition("__")
        if not sep or server not in self._params:
            raise UpstreamError(f"no server lists tool {name!r} (servers: {', '.join(self._params)})", server=server)
        session, connection = await self._session_of(server)
        self.calls += 1
        # Set before the request is written: the caller task writes it before the waiter next runs.
        self._called.setdefault(name, anyio.Event()).set()
        try:
            result = await session.call_tool(
                tool, dict(call.arguments), read_timeout_seconds=timeout, progress_callback=_adapt(call.progress)
            )
        except MCPError as exc:
            raise _upstream_error(exc, server, tool, timeout, connection) from exc
        dumped: dict[str, Any] = result.model_dump(mode="json", by_alias=True, exclude_none=True)
        return dumped

    async def _session_of(self, server: str) -> tuple[ClientSession, _Connection]:
        async with self._lock:
            connection = self._connections.get(server)
            if connection is None or connection.session is None or connection.closed.is_set():
                connection = _Connection(starts=(connection.starts if connection else 0) + 1)
                self._connections[server] = connection
                try:
                    await self._tg.start(self._serve, server, connection)
                except (OSError, MCPError) as exc:
                    raise UpstreamError(
                        f"server {server!r} failed to start: {exc}", server=server, transient=True
                    ) from exc
            assert connection.session is not None
            return connection.session, connection

    async def _serve(self, server: str, connection: _Connection, *, task_status: TaskStatus[None]) -> None:
        started = False
        try:
            async with stdio_client(self._params[server]) as (read, write), ClientSession(read, write) as session:
                await session.initialize()
                listing = await session.list_tools()
                connection.tools = frozenset(tool.name for tool in listing.tools)
                connection.session = session
                started = True
                task_status.started()
                await connection.closed.wait()
        except Exception:
            # Before `started` the error reaches the caller of `tg.start`; after, the server died and
            # its calls already failed as transient: the next call restarts it.
            if not started:
                raise
        finally:
            connection.session = None
            connection.closed.set()

    def starts(self, server: str) -> int:
        connection = self._connections.get(server)
        return connection.starts if connection else 0


def _adapt(progress: ProgressFn | None) -> Any:
    if progress is None:
        return None

    async def forward(value: float, total: float | None, message: str | None) -> None:
        await progress(value, total, message)

    return forward


def _upstream_error(
    exc: MCPError, server: str, tool: str, timeout: float | None, connection: _Connection
) -> UpstreamError:
    if exc.code == REQUEST_TIMEOUT:
        return UpstreamTimeout(server=server, tool=tool, seconds=timeout or 0.0)
    if exc.code == CONNECTION_CLOSED:
        connection.closed.set()
        return UpstreamError(
            f"server {server!r} closed the connection during {tool!r} (it crashed or exited); it is restarted on the "
            "next call",
            server=server,
            transient=True,
        )
    return UpstreamError(f"server {server!r}: tool {tool!r}: {exc.message}", server=server)


@asynccontextmanager
async def open_caller(servers: Mapping[str, StdioServerParameters]) -> AsyncIterator[StdioCaller]:
    """Connect to every server (in parallel) and yield the caller; every server process ends on exit."""
    async with anyio.create_task_group() as tg:
        caller = StdioCaller(servers, tg)
        try:
            await caller.connect_all()
            yield caller
        finally:
            caller.close()


@dataclass
class Harness:
    """An engine over a fresh store and the `features` (and `ids`) fixture servers, with the files
    where `counter` counts calls and `slow`/`hang` record their cancellations."""

    engine: Any
    store: Any
    caller: StdioCaller
    counter_file: Path
    cancel_log: Path

    def counts(self) -> dict[str, int]:
        if not self.counter_file.exists():
            return {}
        counts: dict[str, int] = json.loads(self.counter_file.read_text())
        return counts

    def cancellations(self) -> list[str]:
        return self.cancel_log.read_text().splitlines() if self.cancel_log.exists() else []


def fixture_env(tmp: Path) -> dict[str, str]:
    return {"FIXTURE_COUNTER_FILE": str(tmp / "counts.json"), "FIXTURE_CANCEL_LOG": str(tmp / "cancel.log")}


@asynccontextmanager
async def harness(
    tmp: Path, *, servers: tuple[str, ...] = ("features",), store_url: str | None = None, **engine_options: Any
) -> AsyncIterator[Harness]:
    from toolreel.core.store import open_store
    from toolreel.replayer import Engine

    env = fixture_env(tmp)
    store = open_store(store_url or f"sqlite:///{tmp / 'toolreel.db'}")
    try:
        params = {name: fixture_params(name, env=env) for name in servers}
        async with open_caller(params) as caller, Engine(store, caller, **engine_options) as engine:
            yield Harness(engine, store, caller, tmp / "counts.json", tmp / "cancel.log")
    finally:
        store.close()


def template(data: Mapping[str, Any]) -> Any:
    """A template from its JSON form, validated as a user's file would be."""
    from toolreel.core.template_io import parse_template

    return parse_template(data)


def saved(store: Any, data: Mapping[str, Any]) -> Any:
    """Save a template in the store (as `toolreel__save_template` would) and return it as loaded."""
    from toolreel.replayer import load_template

    record = store.save_template(TemplateDraft(data["name"], dict(data)))
    return load_template(store, data["name"], record.version)
