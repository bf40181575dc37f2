"""A small round-robin HTTP load balancer, as a user puts in front of several gateways: each request goes to
the next backend, bodies streamed both ways (server-sent events included). For tests and benches only."""

from __future__ import annotations

import contextlib
import itertools
from collections import Counter
from collections.abc import AsyncIterator, Sequence
from typing import Any

import anyio
import httpx
import uvicorn

from tests.gw import free_port, wait_until

__all__ = ["RoundRobin", "round_robin"]

_HOP = frozenset({"host", "connection", "keep-alive", "transfer-encoding", "content-length", "upgrade"})


class RoundRobin:
    """The ASGI app: `served` counts the requests each backend got."""

    def __init__(self, backends: Sequence[str], http: httpx.AsyncClient) -> None:
        self._next = itertools.cycle(backends)
        self._http = http
        self.served: Counter[str] = Counter()

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        backend = next(self._next)
        self.served[backend] += 1
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        headers = [(k.decode("latin-1"), v.decode("latin-1")) for k, v in scope["headers"] if k.decode() not in _HOP]
        url = backend + scope["path"] + (("?" + scope["query_string"].decode()) if scope["query_string"] else "")
        request = self._http.build_request(scope["method"], url, headers=headers, content=body)
        response = await self._http.send(request, stream=True)
        try:
            out = [(k.encode("latin-1"), v.encode("latin-1")) for k, v in response.headers.multi_items()]
            out = [(k, v) for k, v in out if k.decode().lower() not in _HOP]
            await send({"type": "http.response.start", "status": response.status_code, "headers": out})
            async for chunk in response.aiter_raw():
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
            await send({"type": "http.response.body", "body": b"", "more_body": False})
        finally:
            await response.aclose()


@contextlib.asynccontextmanager
async def round_robin(backends: Sequence[str]) -> AsyncIterator[tuple[str, RoundRobin]]:
    """Serve a RoundRobin over `backends` (base URLs, `http://127.0.0.1:PORT`) on a free loopback port;
    yields its base URL and the app."""
    port = free_port()
    async with httpx.AsyncClient(timeout=httpx.Timeout(30.0, read=None)) as http:
        app = RoundRobin(backends, http)
        server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="off"))
        async with anyio.create_task_group() as tg:
            tg.start_soon(server.serve)
            await wait_until(lambda: server.started, 30, "the load balancer to listen")
            try:
                yield f"http://127.0.0.1:{port}", app
            finally:
                server.should_exit = True
