"""Server-initiated requests for clients of the stateless era (2026-07-28).

Such a client cannot receive a pushed `elicitation/create`, `sampling/createMessage` or
`roots/list`. When an upstream asks one during a call, the call goes on in the
background, the client gets an `InputRequiredResult` carrying the request, and its retry
(`inputResponses` + `requestState`) answers the upstream and waits again — for the result
or for the next request.

Each retry is a new client request with its own progress token and channel, so the
call's progress and logs follow the request waiting on it now, not the one that started it.
"""

from __future__ import annotations

import contextlib
import itertools
import secrets
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import anyio
import anyio.abc
import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.shared.exceptions import MCPError

__all__ = ["Exchange", "Exchanges", "quiet_progress"]

ABANDON_AFTER = 600.0  # seconds a call may wait for a client that never retries


@dataclass(eq=False)
class Exchange:
    token: str
    created: float = field(default_factory=time.monotonic)
    result: dict[str, Any] | None = None
    error: BaseException | None = None
    done: anyio.Event = field(default_factory=anyio.Event)
    changed: anyio.Event = field(default_factory=anyio.Event)
    asked: dict[str, tuple[str, dict[str, Any]]] = field(default_factory=dict)  # key -> (method, params) not yet sent
    waiting: dict[str, Any] = field(default_factory=dict)  # key -> memory send stream for the answer
    scope: anyio.CancelScope = field(default_factory=anyio.CancelScope)
    ctx: ServerRequestContext[Any, Any] | None = None  # the client request waiting on the call now
    unsent: tuple[float, float | None, str | None] | None = None  # progress made while none waited
    _keys: Any = field(default_factory=lambda: itertools.count(1))

    async def progress(self, value: float, total: float | None, message: str | None) -> None:
        """The upstream's progress, to the request waiting now; the latest is kept for the next
        retry when none is (between an input-required answer and the client's retry)."""
        if self.ctx is None:
            self.unsent = (value, total, message)
            return
        await quiet_progress(self.ctx.session.report_progress)(value, total, message)

    async def attach(self, ctx: ServerRequestContext[Any, Any] | None) -> None:
        self.ctx = ctx
        if ctx is not None and self.unsent is not None:
            unsent, self.unsent = self.unsent, None
            await quiet_progress(ctx.session.report_progress)(*unsent)

    async def ask(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """Called on behalf of the upstream: park until the client's retry answers."""
        if self.done.is_set():  # the client has its result and will not retry (a run that went on alone)
            raise MCPError(code=types.INVALID_REQUEST, message=f"the call is over: no client waits to answer {method}")
        key = f"r{next(self._keys)}"
        send, receive = anyio.create_memory_object_stream[dict[str, Any] | MCPError](1)
        self.asked[key] = (method, params)
        self.waiting[key] = send
        self._poke()
        async with receive:
            answer = await receive.receive()
        if isinstance(answer, MCPError):
            raise answer
        return answer

    def answer(self, responses: Mapping[str, Any]) -> None:
        for key, response in responses.items():
            send = self.waiting.pop(key, None)
            if send is None:
                continue
            if isinstance(response, dict) and "code" in response and "message" in response and len(response) <= 3:
                send.send_nowait(
                    MCPError(code=response["code"], message=response["message"], data=response.get("data"))
                )
            else:
                send.send_nowait(response)

    def _poke(self) -> None:
        self.changed.set()
        self.changed = anyio.Event()


class Exchanges:
    def __init__(self) -> None:
        self._open: dict[str, Exchange] = {}

    async def call(
        self,
        tg: anyio.abc.TaskGroup,
        params: Mapping[str, Any],
        run: Callable[[Exchange], Awaitable[dict[str, Any]]],
        ctx: ServerRequestContext[Any, Any] | None = None,
    ) -> dict[str, Any]:
        """Start `run` (or continue the exchange a retry names) and wait for its next news."""
        self._expire()
        token = params.get("requestState")
        if isinstance(token, str) and token in self._open:
            exchange = self._open[token]
            exchange.answer(params.get("inputResponses") or {})
        elif token is not None:
            raise MCPError(
                code=types.INVALID_PARAMS,
                message="requestState names no pending call (it finished, expired or belongs to another gateway); "
                "call the tool again without it",
            )
        else:
            exchange = Exchange(token=secrets.token_urlsafe(16))
            self._open[exchange.token] = exchange
            tg.start_soon(self._drive, exchange, run)
        try:
            await exchange.attach(ctx)
            return await self._next(exchange)
        except anyio.get_cancelled_exc_class():
            # The client cancelled its request: the call goes too, unless it is parked on a
            # question the client's retry will answer (then the retry carries it on).
            if not exchange.waiting:
                exchange.scope.cancel()
                self._open.pop(exchange.token, None)
            raise
        finally:
            if exchange.ctx is ctx:
                exchange.ctx = None

    async def _drive(self, exchange: Exchange, run: Callable[[Exchange], Awaitable[dict[str, Any]]]) -> None:
        with exchange.scope:
            try:
                exchange.result = await run(exchange)
            except Exception as exc:  # handed to the waiting request, which raises it to the client
                exchange.error = exc
        exchange.done.set()
        exchange._poke()

    async def _next(self, exchange: Exchange) -> dict[str, Any]:
        while True:
            if exchange.done.is_set():
                self._open.pop(exchange.token, None)
                if exchange.error is not None:
                    raise exchange.error
                assert exchange.result is not None
                return exchange.result
            if exchange.asked:
                asked, exchange.asked = exchange.asked, {}
                requests = {key: {"method": method, "params": params} for key, (method, params) in asked.items()}
                return {"resultType": "input_required", "inputRequests": requests, "requestState": exchange.token}
            await exchange.changed.wait()

    def _expire(self) -> None:
        cutoff = time.monotonic() - ABANDON_AFTER
        for token, exchange in list(self._open.items()):
            if exchange.created < cutoff:
                exchange.scope.cancel()
                del self._open[token]


def quiet_progress(progress: Any) -> Any:
    """Progress for a request the client may have stopped waiting for (a call that went on in
    the background): a closed channel drops the notification instead of failing the call."""

    async def report(value: float, total: float | None, message: str | None) -> None:
        with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError, MCPError):
            await progress(value, total, message)

    return report
