"""Test helpers: raw bytes to a running gateway, over stdio lines or HTTP POSTs, and what comes back.

`RawStdio` writes any bytes to `toolreel serve`'s stdin (no SDK in the way, so a test can send what a
careless or hostile client would) and collects the lines it answers with, parsed by Python's `json` (which,
unlike pydantic, keeps lone surrogates). `raw_post` does the same for one HTTP request. Every wait is
bounded with `fail_after`.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, Final

import anyio
import httpx2

from tests.gw import GatewayProcess

__all__ = ["INIT", "NO_ID", "RawStdio", "handshake", "raw_post", "raw_stdio"]

WAIT: Final = 15.0
NO_ID: Final = object()  # what `reply` waits for when the answer carries `"id": null`
INIT: Final = {
    "jsonrpc": "2.0",
    "id": "init",
    "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}},
}


@dataclass(eq=False)
class RawStdio:
    gateway: GatewayProcess
    lines: list[Any] = field(default_factory=list)
    _buffer: bytearray = field(default_factory=bytearray)

    async def send(self, raw: bytes) -> None:
        assert self.gateway.process.stdin is not None
        await self.gateway.process.stdin.send(raw if raw.endswith(b"\n") else raw + b"\n")

    async def send_json(self, message: Any) -> None:
        await self.send(json.dumps(message).encode())

    async def reply(self, request_id: Any, timeout: float = WAIT) -> dict[str, Any]:
        """The answer whose id equals `request_id` (NO_ID: `"id": null`); fails if the gateway ends first."""
        try:
            with anyio.fail_after(timeout):
                while True:
                    for index, message in enumerate(self.lines):
                        if isinstance(message, dict) and _id_matches(message.get("id", NO_ID), request_id):
                            if request_id is NO_ID and "id" not in message:
                                continue
                            return self.lines.pop(index)  # type: ignore[no-any-return]
                    await self._read()
        except TimeoutError:
            raise AssertionError(
                f"no answer with id {request_id!r} in {timeout:g} s; got {self.lines!r}; "
                f"stderr: {self.gateway.stderr()[-2000:]}"
            ) from None

    async def _read(self) -> None:
        assert self.gateway.process.stdout is not None
        try:
            chunk = await self.gateway.process.stdout.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError):
            raise AssertionError(
                f"the gateway closed stdout (exit {self.gateway.process.returncode}); "
                f"stderr: {self.gateway.stderr()[-3000:]}"
            ) from None
        self._buffer.extend(chunk)
        while b"\n" in self._buffer:
            line, _, rest = bytes(self._buffer).partition(b"\n")
            self._buffer[:] = rest
            self.lines.append(json.loads(line))

    async def call(self, request_id: Any, name: str, arguments: Mapping[str, Any]) -> dict[str, Any]:
        params = {"name": name, "arguments": arguments}
        await self.send_json({"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params})
        return await self.reply(request_id)


def _id_matches(found: Any, wanted: Any) -> bool:
    if wanted is NO_ID:
        return found is None
    return type(found) is type(wanted) and found == wanted


async def handshake(raw: RawStdio) -> dict[str, Any]:
    await raw.send_json(INIT)
    answer = await raw.reply("init")
    await raw.send(b'{"jsonrpc":"2.0","method":"notifications/initialized"}')
    return answer


@asynccontextmanager
async def raw_stdio(gateway: GatewayProcess) -> AsyncIterator[RawStdio]:
    yield RawStdio(gateway)


async def raw_post(
    client: httpx2.AsyncClient, url: str, body: bytes | AsyncIterator[bytes], headers: Mapping[str, str] | None = None
) -> httpx2.Response:
    """One POST of `body` as a JSON-RPC message (the Accept and Content-Type a client sends)."""
    base = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
    with anyio.fail_after(WAIT):
        return await client.post(url, content=body, headers={**base, **(headers or {})})
