"""The transports of HTTP upstreams (streamable HTTP, SSE): how their streams are opened and watched.

`open_http` opens the one a server's config names, signed in when it needs that; `Upstream` imports this
module with its first HTTP server, so a gateway of stdio servers never loads httpx2. `watched` relays a
transport's read stream and tells its `Upstream` when the stream ends, since the SDK's dispatcher finishes
silently then.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable
from typing import Any

import anyio
import httpx2
from anyio.streams.memory import MemoryObjectSendStream
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.message import SessionMessage

from toolreel.upstreams.auth import SignInNeeded
from toolreel.upstreams.config import ServerConfig
from toolreel.upstreams.sign_in import signed_in

__all__ = ["MAX_MESSAGE", "open_http", "streamable_http", "watched"]

MAX_MESSAGE = 256 * 1024 * 1024  # the largest message taken from an HTTP upstream (stdio: the same per line)


def open_http(
    cfg: ServerConfig, lost: anyio.Event, on_sign_in: Callable[[SignInNeeded], None]
) -> contextlib.AbstractAsyncContextManager[tuple[Any, Any, None]]:
    """The transport of an HTTP server (SSE, or streamable HTTP signed in as its config says), watched."""
    assert cfg.url is not None
    if cfg.transport == "sse":
        opened = sse_client(cfg.url, headers=dict(cfg.headers), timeout=10.0, sse_read_timeout=24 * 3600)
    else:
        client = httpx2.AsyncClient(
            headers=dict(cfg.headers),
            timeout=httpx2.Timeout(30.0, read=None),
            auth=signed_in(cfg, on_sign_in),
        )
        opened = streamable_http(cfg.url, client)
    return watched(opened, lost)


@contextlib.asynccontextmanager
async def streamable_http(url: str, client: httpx2.AsyncClient) -> AsyncIterator[tuple[Any, Any]]:
    """The SDK's streamable HTTP client on `client` (closed with it). Tool results of many megabytes are
    legitimate: the SDK's 1 MiB event cap is not ours."""
    async with client, streamable_http_client(url, http_client=client, max_sse_event_size=MAX_MESSAGE) as (read, write):
        yield read, write


@contextlib.asynccontextmanager
async def watched(
    opened: contextlib.AbstractAsyncContextManager[tuple[Any, Any]], lost: anyio.Event
) -> AsyncIterator[tuple[Any, Any, None]]:
    """Relay an HTTP transport's read stream and set `lost` when it ends: the dispatcher
    finishes silently at end of stream, and that is how a dead upstream shows."""
    send: MemoryObjectSendStream[SessionMessage | Exception]
    send, receive = anyio.create_memory_object_stream[SessionMessage | Exception](64)
    async with opened as (read, write):

        async def pump() -> None:
            async with send:
                try:
                    async for message in read:
                        await send.send(message)
                except (anyio.BrokenResourceError, anyio.ClosedResourceError, anyio.EndOfStream):
                    pass
                lost.set()  # before the stream's end reaches the dispatcher and fails its waiters

        async with anyio.create_task_group() as tg:
            tg.start_soon(pump)
            try:
                yield receive, write, None
            finally:
                tg.cancel_scope.cancel()
                receive.close()
