"""A real `ToolCaller` for tests: MCP sessions over stdio to fixture servers, `server__tool` names.

One session per server, reused for every call (legacy `initialize` handshake). A server that
crashed fails its in-flight calls as transient `UpstreamError`s and is restarted on the next
call, as the gateway does, so retry policies can be tested against a real disappearing server.
"""

from __future__ import annotations

import os
import sys
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

from core.caller import ProgressFn
from core.errors import UpstreamError, UpstreamTimeout

__all__ = ["REPO", "StdioCaller", "fixture_server", "open_caller"]

REPO = Path(__file__).resolve().parent.parent


def fixture_server(module: str, **env: str) -> StdioServerParameters:
    """A fixture server of `fixtures/<module>.py`, run with this interpreter from the repo root."""
    return StdioServerParameters(
        command=sys.executable, args=["-m", f"fixtures.{module}"], env={"PYTHONPATH": str(REPO), **env}, cwd=REPO
    )


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
        self.calls = 0

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

    async def call_tool(
        self,
        name: str,
        arguments: Mapping[str, Any],
        *,
        timeout: float | None = None,
        progress: ProgressFn | None = None,
    ) -> dict[str, Any]:
        server, sep, tool = name.partition("__")
        if not sep or server not in self._params:
            raise UpstreamError(f"no server lists tool {name!r} (servers: {', '.join(self._params)})", server=server)
        session, connection = await self._session_of(server)
        self.calls += 1
        try:
            result = await session.call_tool(
                tool, dict(arguments), read_timeout_seconds=timeout, progress_callback=_adapt(progress)
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


def counter_env(path: Path) -> dict[str, str]:
    return {"FIXTURE_COUNTER_FILE": str(path), "PATH": os.environ.get("PATH", "")}
