"""The one wait the tests poll for: a condition another process changes (a file, a row, a port, a listing)
that sends no event to wait on, and the port check most of them use."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import anyio

__all__ = ["port_open", "wait_until"]

PERIOD = 0.02  # seconds between looks: short beside any bound a test sets


async def wait_until(
    predicate: Callable[[], bool | Awaitable[bool]], timeout: float = 10.0, what: str = "a condition"
) -> None:
    """Look at `predicate` until it holds; fail after `timeout` seconds naming `what`."""
    try:
        with anyio.fail_after(timeout):
            while True:
                outcome = predicate()
                if not isinstance(outcome, bool):
                    outcome = await outcome
                if outcome:
                    return
                await anyio.sleep(PERIOD)
    except TimeoutError:
        raise AssertionError(f"timed out after {timeout:g} s waiting for {what}") from None


async def port_open(port: int) -> bool:
    """Whether 127.0.0.1:`port` accepts a connection now."""
    try:
        stream = await anyio.connect_tcp("127.0.0.1", port)
    except OSError:
        return False
    await stream.aclose()
    return True
