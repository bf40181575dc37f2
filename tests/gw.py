"""Test helpers: run `toolreel serve` as a real subprocess and talk MCP to it.

`stdio_gateway` spawns the gateway over pipes (our own line transport, so the test, not the SDK, decides
how the gateway ends: no process-tree kill that would hide orphans); `http_gateway` starts it with
`--http` on a free 127.0.0.1 port and waits for the port. `connect` opens an `mcp.Client` in the legacy
(initialize) or modern (2026-07-28, `mode="auto"`) era with a `Probe` that records notifications and
answers sampling, elicitation and roots. Every wait is bounded with `fail_after`.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import anyio
import anyio.abc
import httpx2
import mcp_types as types
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp import Client
from mcp.client.session import ClientRequestContext
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.message import SessionMessage
from pydantic import FileUrl

from fixtures import servers
from fixtures._zygote import launch_command
from tests.procs import alive, cmdline, descendants, kill_quietly
from tests.waits import port_open, wait_until

__all__ = [
    "MODES",
    "PYTHON",
    "REPO",
    "SERVER_INFO_META",
    "TOOLREEL",
    "Connected",
    "GatewayProcess",
    "HttpGateway",
    "OpenedStreams",
    "Probe",
    "alive",
    "call",
    "client_for",
    "cmdline",
    "descendants",
    "direct_fixture",
    "fixture_entry",
    "fixture_http_server",
    "free_port",
    "gateway_env",
    "http_answer",
    "http_gateway",
    "http_transport",
    "line_transport",
    "npm_available",
    "npm_command",
    "pypi_command",
    "result_dict",
    "running_gateway",
    "spawn_gateway",
    "status",
    "stdio_gateway",
    "strip_toolreel_meta",
    "text_of",
    "unsaved",
    "wait_until",
    "without_name",
    "write_config",
]

REPO = Path(__file__).resolve().parent.parent
PYTHON = sys.executable
VENV_BIN = Path(sys.executable).parent
TOOLREEL = VENV_BIN / "toolreel"
MODES = ("legacy", "auto")  # handshake era, and 2026-07-28 (the SDK fixtures speak it, so auto lands there)
STOP_SECONDS = 10.0
# How long a process may take to start listening: far more than it takes on a quiet machine (about a second),
# since two workers and their servers on 2 busy cores start Python slowly. A passing test never waits it out.
START_SECONDS = 120.0


# --- configs and environments ------------------------------------------------------------------------------


def fixture_entry(module: str, *, timeout: float | None = None, env: Mapping[str, str] | None = None) -> dict[str, Any]:
    """A config entry running `fixtures/<module>.py` with this interpreter."""
    command, *args = launch_command([PYTHON, "-m", f"fixtures.{module}"])
    entry: dict[str, Any] = {"command": command, "args": args, "cwd": str(REPO)}
    if timeout is not None:
        entry["timeout"] = timeout
    if env:
        entry["env"] = dict(env)
    return entry


def write_config(path: Path, servers: Mapping[str, Any], *, shape: str = "mcpServers") -> Path:
    path.write_text(json.dumps({shape: dict(servers)}, indent=2), encoding="utf-8")
    return path


def gateway_env(db_url: str, **extra: str) -> dict[str, str]:
    """A small explicit environment: the venv first on PATH, the store, the repo importable."""
    env = {
        "PATH": f"{VENV_BIN}{os.pathsep}{os.environ.get('PATH', '/usr/bin:/bin')}",
        "HOME": os.environ.get("HOME", "/root"),
        "PYTHONPATH": str(REPO),
        "TOOLREEL_DB": db_url,
        "PYTHONUNBUFFERED": "1",
    }
    env.update(extra)
    return env


def npm_command(name: str) -> list[str]:
    """`everything`, `filesystem`, `memory`: the npm reference servers .ci/run installs (ServerNotInstalled if not)."""
    return servers.npm_server_command(name)


def pypi_command(name: str) -> list[str]:
    """`time`, `git`: mcp-server-time / mcp-server-git from this venv."""
    return servers.pypi_server_command(name)


def npm_available() -> bool:
    try:
        for name in servers.NPM_SERVERS:
            servers.npm_server_command(name)
    except servers.ServerNotInstalled:
        return False
    return True


# --- processes -----------------------------------------------------------------------------------------------


@dataclass(eq=False)
class GatewayProcess:
    process: anyio.abc.Process
    stderr_file: IO[bytes]
    children_seen: set[int] = field(default_factory=set)

    @property
    def pid(self) -> int:
        return self.process.pid

    def stderr(self) -> str:
        self.stderr_file.flush()
        self.stderr_file.seek(0)
        return self.stderr_file.read().decode(errors="replace")

    def descendants(self) -> list[int]:
        kids = descendants(self.pid)
        self.children_seen.update(kids)
        return kids

    async def wait_exit(self, timeout: float) -> int | None:
        with anyio.move_on_after(timeout):
            return await self.process.wait()
        return None

    async def stop(self) -> None:
        """Close stdin (the normal end of a stdio session), then make sure nothing survives."""
        self.descendants()
        if self.process.stdin is not None:
            with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
                await self.process.stdin.aclose()
        if await self.wait_exit(STOP_SECONDS) is None:
            kill_quietly([self.pid])
            await self.wait_exit(STOP_SECONDS)
        self.reap_leftovers()
        await self.release()

    async def release(self) -> None:
        """Close the pipes and reap the process (ended by now): no transport may outlive the test's event loop."""
        with anyio.move_on_after(STOP_SECONDS):
            await self.process.aclose()

    def reap_leftovers(self) -> None:
        """Test hygiene only: kill children the gateway left (the lifecycle tests assert there are none)."""
        kill_quietly([pid for pid in self.children_seen if alive(pid)])


async def spawn_gateway(
    args: Sequence[str],
    env: Mapping[str, str],
    *,
    stdin: int | None = subprocess.PIPE,
    stdout: int | None = None,
    cwd: Path | None = None,
) -> GatewayProcess:
    """`stdout` defaults to a pipe when stdin is one (else /dev/null)."""
    stderr_file = tempfile.TemporaryFile()  # noqa: SIM115 - owned by the GatewayProcess
    process = await anyio.open_process(
        launch_command([str(TOOLREEL), "serve", *args]),
        stdin=stdin,
        stdout=stdout if stdout is not None else subprocess.PIPE if stdin == subprocess.PIPE else subprocess.DEVNULL,
        stderr=stderr_file,
        env=dict(env),
        cwd=str(cwd or REPO),
    )
    return GatewayProcess(process, stderr_file)


@contextlib.asynccontextmanager
async def line_transport(
    process: anyio.abc.Process,
) -> AsyncIterator[
    tuple[MemoryObjectReceiveStream[SessionMessage | Exception], MemoryObjectSendStream[SessionMessage]]
]:
    """Newline-delimited JSON-RPC over a process's stdout/stdin; ending it does not touch the process."""
    assert process.stdin is not None and process.stdout is not None
    stdin, stdout = process.stdin, process.stdout
    read_send, read_receive = anyio.create_memory_object_stream[SessionMessage | Exception](1000)
    write_send, write_receive = anyio.create_memory_object_stream[SessionMessage](1000)

    async def reader() -> None:
        buffer = bytearray()
        async with read_send:
            with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream):
                async for chunk in stdout:
                    start = len(buffer)
                    buffer += chunk
                    cut = buffer.rfind(b"\n", start)
                    if cut < 0:
                        continue
                    lines, buffer = bytes(buffer[:cut]), buffer[cut + 1 :]
                    for line in lines.split(b"\n"):
                        if line.strip():
                            try:
                                message: SessionMessage | Exception = SessionMessage(
                                    types.jsonrpc_message_adapter.validate_json(line, by_name=False)
                                )
                            except ValueError as exc:
                                message = exc
                            await read_send.send(message)

    async def writer() -> None:
        async with write_receive:
            with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
                async for message in write_receive:
                    data = message.message.model_dump_json(by_alias=True, exclude_unset=True)
                    await stdin.send(data.encode() + b"\n")

    async with anyio.create_task_group() as tg:
        tg.start_soon(reader)
        tg.start_soon(writer)
        try:
            yield read_receive, write_send
        finally:
            tg.cancel_scope.cancel()


@contextlib.asynccontextmanager
async def running_gateway(args: Sequence[str], env: Mapping[str, str]) -> AsyncIterator[GatewayProcess]:
    gateway = await spawn_gateway(args, env)
    try:
        yield gateway
    finally:
        with anyio.CancelScope(shield=True):
            await gateway.stop()


# --- the client side ---------------------------------------------------------------------------------------------


Elicit = Callable[[types.ElicitRequestParams], Awaitable[types.ElicitResult]]
Sample = Callable[[types.CreateMessageRequestParams], Awaitable[types.CreateMessageResult]]


async def _default_elicit(params: types.ElicitRequestParams) -> types.ElicitResult:
    return types.ElicitResult(action="accept", content={"answer": f"answer to {params.message}"})


async def _default_sample(params: types.CreateMessageRequestParams) -> types.CreateMessageResult:
    first = params.messages[0].content
    text = first.text if isinstance(first, types.TextContent) else "?"
    return types.CreateMessageResult(
        role="assistant", content=types.TextContent(text=f"sampled: {text}"), model="probe-model"
    )


class Probe:
    """The client's side of server-to-client traffic: records notifications, answers requests."""

    def __init__(self, name: str = "probe") -> None:
        self.name = name
        self.notifications: list[Any] = []
        self.logs: list[types.LoggingMessageNotificationParams] = []
        self.elicitations: list[types.ElicitRequestParams] = []
        self.samplings: list[types.CreateMessageRequestParams] = []
        self.roots_asked = 0
        self.elicit: Elicit = _default_elicit
        self.sample: Sample = _default_sample
        self.roots = [types.Root(uri=FileUrl("file:///tmp/probe-root"), name=f"{name}-root")]
        self._changed = anyio.Event()

    def _bump(self) -> None:
        self._changed.set()
        self._changed = anyio.Event()

    async def on_message(self, message: Any) -> None:
        if isinstance(message, Exception):
            return
        self.notifications.append(message)
        self._bump()

    async def on_log(self, params: types.LoggingMessageNotificationParams) -> None:
        self.logs.append(params)
        self._bump()

    async def on_elicit(
        self, context: ClientRequestContext, params: types.ElicitRequestParams
    ) -> types.ElicitResult | types.ErrorData:
        self.elicitations.append(params)
        return await self.elicit(params)

    async def on_sample(
        self, context: ClientRequestContext, params: types.CreateMessageRequestParams
    ) -> types.CreateMessageResult | types.ErrorData:
        self.samplings.append(params)
        return await self.sample(params)

    async def on_roots(self, context: ClientRequestContext) -> types.ListRootsResult | types.ErrorData:
        self.roots_asked += 1
        return types.ListRootsResult(roots=self.roots)

    def of_type(self, kind: type) -> list[Any]:
        return [n for n in self.notifications if isinstance(n, kind)]

    async def wait_for(
        self, predicate: Callable[[], bool], timeout: float = 10.0, what: str = "a notification"
    ) -> None:
        try:
            with anyio.fail_after(timeout):
                while not predicate():
                    await self._changed.wait()
        except TimeoutError:
            raise AssertionError(
                f"timed out after {timeout:g} s waiting for {what}; "
                f"got {[type(n).__name__ for n in self.notifications]}"
            ) from None


def client_for(
    transport: Any, mode: str, probe: Probe, *, client_name: str | None = None, answers: bool = True, **options: Any
) -> Client:
    """`answers=False`: a client that declares no sampling, elicitation or roots capability."""
    return Client(
        transport,
        mode=mode,
        cache=None,
        sampling_callback=probe.on_sample if answers else None,
        elicitation_callback=probe.on_elicit if answers else None,
        list_roots_callback=probe.on_roots if answers else None,
        logging_callback=probe.on_log,
        message_handler=probe.on_message,
        log_level="debug",
        client_info=types.Implementation(name=client_name or probe.name, version="1.0"),
        read_timeout_seconds=30.0,
        **options,
    )


@dataclass(eq=False)
class Connected:
    client: Client
    probe: Probe
    gateway: GatewayProcess | None = None

    @property
    def modern(self) -> bool:
        return self.client.protocol_version == "2026-07-28"


@contextlib.asynccontextmanager
async def stdio_gateway(
    args: Sequence[str], env: Mapping[str, str], *, mode: str = "legacy", probe: Probe | None = None, **options: Any
) -> AsyncIterator[Connected]:
    """`toolreel serve ARGS` over stdio with one connected client."""
    probe = probe or Probe()
    async with running_gateway(args, env) as gateway:
        try:
            async with line_transport(gateway.process) as streams:
                transport = OpenedStreams(streams)
                async with client_for(transport, mode, probe, **options) as client:
                    yield Connected(client, probe, gateway)
        except BaseException:
            sys.stderr.write(f"--- gateway stderr ---\n{gateway.stderr()[-4000:]}\n")
            raise


class OpenedStreams(contextlib.AbstractAsyncContextManager[Any]):
    """An already-open stream pair as the `Transport` an `mcp.Client` enters."""

    def __init__(self, streams: Any) -> None:
        self.streams = streams

    async def __aenter__(self) -> Any:
        return self.streams

    async def __aexit__(self, *exc: object) -> None:
        return None


@contextlib.asynccontextmanager
async def direct_fixture(
    module: str, *, mode: str = "legacy", probe: Probe | None = None, env: Mapping[str, str] | None = None
) -> AsyncIterator[Connected]:
    """The same fixture server without the gateway, for comparisons."""
    probe = probe or Probe()
    command, *args = launch_command([PYTHON, "-m", f"fixtures.{module}"])
    params = StdioServerParameters(command=command, args=args, env={"PYTHONPATH": str(REPO), **(env or {})}, cwd=REPO)
    async with client_for(params, mode, probe) as client:
        yield Connected(client, probe)


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass(eq=False)
class HttpGateway:
    gateway: GatewayProcess
    port: int
    host: str = "127.0.0.1"

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}/mcp"

    @contextlib.asynccontextmanager
    async def connect(
        self,
        *,
        mode: str = "legacy",
        probe: Probe | None = None,
        headers: Mapping[str, str] | None = None,
        max_event: int | None = None,
        **options: Any,
    ) -> AsyncIterator[Connected]:
        probe = probe or Probe()
        transport = http_transport(self.url, headers, max_event=max_event)
        async with client_for(transport, mode, probe, **options) as client:
            yield Connected(client, probe, self.gateway)


@contextlib.asynccontextmanager
async def http_transport(
    url: str, headers: Mapping[str, str] | None = None, *, max_event: int | None = None
) -> AsyncIterator[Any]:
    timeout = httpx2.Timeout(30.0, read=300.0)
    extra: dict[str, Any] = {} if max_event is None else {"max_sse_event_size": max_event}
    async with (
        httpx2.AsyncClient(headers=dict(headers or {}), timeout=timeout) as http,
        streamable_http_client(url, http_client=http, **extra) as streams,
    ):
        yield streams


def fixture_http_server(
    module: str, env: Mapping[str, str] | None = None
) -> contextlib.AbstractAsyncContextManager[str]:
    """`python -m fixtures.<module> --http 0`; yields its URL once it announced it."""
    return servers.http_fixture(module, env=env)


@contextlib.asynccontextmanager
async def http_gateway(
    args: Sequence[str], env: Mapping[str, str], *, port: int | None = None
) -> AsyncIterator[HttpGateway]:
    """`toolreel serve --http PORT ARGS` (the default host, which must be 127.0.0.1), ready when the port
    accepts connections."""
    port = port or free_port()
    gateway = await spawn_gateway(["--http", str(port), *args], env, stdin=subprocess.DEVNULL)
    try:

        async def ready() -> bool:
            if gateway.process.returncode is not None:
                raise AssertionError(f"gateway exited with {gateway.process.returncode}: {gateway.stderr()[-2000:]}")
            return await port_open(port)

        await wait_until(ready, START_SECONDS, f"the gateway to listen on 127.0.0.1:{port}")
        yield HttpGateway(gateway, port)
    finally:
        with anyio.CancelScope(shield=True):
            gateway.descendants()
            if gateway.process.returncode is None:
                gateway.process.send_signal(signal.SIGTERM)
            if await gateway.wait_exit(STOP_SECONDS) is None:
                kill_quietly([gateway.pid])
                await gateway.wait_exit(STOP_SECONDS)
            gateway.reap_leftovers()
            await gateway.release()


# --- results ---------------------------------------------------------------------------------------------------


def http_answer(response: httpx2.Response) -> dict[str, Any]:
    """The JSON-RPC message a Streamable HTTP POST answered with: its body, or the last server-sent event."""
    data = [line[5:].strip() for line in response.text.splitlines() if line.startswith("data:")]
    answer: dict[str, Any] = json.loads(data[-1]) if data else response.json()
    return answer


def result_dict(result: Any) -> dict[str, Any]:
    dumped: dict[str, Any] = result.model_dump(by_alias=True, mode="json", exclude_none=True)
    return dumped


# Stamped by whichever server answers (the gateway, or the fixture when direct): not forwarded content.
SERVER_INFO_META = "io.modelcontextprotocol/serverInfo"


def without_name(item: Any) -> dict[str, Any]:
    """A listed tool or prompt, dumped, without its name (which the gateway prefixes)."""
    dumped = result_dict(item)
    dumped.pop("name")
    return dumped


def strip_toolreel_meta(result: Mapping[str, Any]) -> dict[str, Any]:
    """A result as the upstream produced it: without the gateway's `toolreel/...` `_meta` keys and the
    2026-07-28 `serverInfo` stamp (which names the answering server on either path)."""
    out = dict(result)
    meta = {
        k: v
        for k, v in (out.pop("_meta", None) or {}).items()
        if not k.startswith("toolreel/") and k != SERVER_INFO_META
    }
    if meta:
        out["_meta"] = meta
    return out


def text_of(result: Any) -> str:
    return "\n".join(c.text for c in result.content if isinstance(c, types.TextContent))


async def call(connected: Connected, name: str, arguments: Mapping[str, Any] | None = None, **kw: Any) -> Any:
    return await connected.client.call_tool(name, dict(arguments or {}), **kw)


async def call_ok(connected: Connected, name: str, arguments: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """A call that must succeed with structured content, and that content."""
    result = await call(connected, name, arguments)
    assert not result.is_error, text_of(result)
    assert isinstance(result.structured_content, dict), text_of(result)
    return result.structured_content


async def until_listed(connected: Connected, tool: str) -> None:
    """Until `tool` is listed: its server started (on a busy machine a first listing may come before it)."""

    async def listed() -> bool:
        return tool in {t.name for t in (await connected.client.list_tools()).tools}

    await wait_until(listed, 30, f"{tool} in tools/list")


async def status(connected: Connected) -> dict[str, Any]:
    result = await connected.client.call_tool("toolreel__status", {})
    assert not result.is_error, text_of(result)
    assert isinstance(result.structured_content, dict)
    return result.structured_content


async def unsaved(connected: Connected) -> int:
    """How many recorded calls the gateway holds and has not yet written to the store."""
    count = (await status(connected))["unsaved"]
    assert isinstance(count, int), f"toolreel__status gave unsaved={count!r}"
    return count
