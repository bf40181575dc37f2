"""Test and bench helpers for the web view: a large recording written straight to a store, and
`toolreel ui` run on its own as a real process (ready when its port answers)."""

from __future__ import annotations

import contextlib
import signal
import subprocess
import tempfile
from collections.abc import AsyncIterator, Mapping

import anyio

from fixtures._zygote import launch_command
from tests.gw import REPO, TOOLREEL, free_port, gateway_env, wait_until
from tests.waits import port_open
from toolreel.core.model import Execution, ExecutionMode, ExecutionStatus, StepKind, StepRecord, StepStatus, new_id
from toolreel.core.store import open_store

__all__ = ["thousand_step_recording", "web_view"]


def thousand_step_recording(db: str, steps: int = 1000) -> str:
    """A recording of `steps` calls, each passing the previous one's output on as a ref."""
    store = open_store(db)
    try:
        execution_id = new_id()
        start = 1_800_000_000.0
        store.create_execution(
            Execution(
                id=execution_id,
                mode=ExecutionMode.RECORD,
                status=ExecutionStatus.RECORDING,
                created_at=start,
                updated_at=start,
                session="bench",
            )
        )
        rows = [_row(execution_id, i, start) for i in range(1, steps + 1)]
        for first in range(0, len(rows), 200):
            store.put_steps(rows[first : first + 200])
        return execution_id
    finally:
        store.close()


def _row(execution_id: str, i: int, start: float) -> StepRecord:
    written = {"value": f"@step_{i - 1}.value", "note": f"call {i}"} if i > 1 else {"value": 0, "note": "call 1"}
    return StepRecord(
        execution_id=execution_id,
        name=f"step_{i}",
        seq=i,
        kind=StepKind.TOOL,
        status=StepStatus.SUCCEEDED,
        server="bench",
        tool="step",
        input=written,
        resolved_input={"value": i - 1, "note": f"call {i}"},
        result={"content": [{"type": "text", "text": str(i)}], "structuredContent": {"value": i}},
        output={"value": i},
        started_at=start + i * 0.01,
        ended_at=start + i * 0.01 + 0.005,
    )


@contextlib.asynccontextmanager
async def web_view(db: str, *, token_env: Mapping[str, str] | None = None) -> AsyncIterator[str]:
    """`toolreel ui --http PORT --db DB`; yields `http://127.0.0.1:PORT`."""
    port = free_port()
    args = launch_command([str(TOOLREEL), "ui", "--http", str(port), "--db", db])
    env = gateway_env(db, **dict(token_env or {}))
    if token_env:
        args += ["--token-env", next(iter(token_env))]
    with tempfile.TemporaryFile() as stderr:
        process = await anyio.open_process(args, stdin=subprocess.DEVNULL, stderr=stderr, env=env, cwd=str(REPO))
        try:

            async def ready() -> bool:
                if process.returncode is not None:
                    stderr.seek(0)
                    raise AssertionError(f"toolreel ui exited with {process.returncode}: {stderr.read().decode()}")
                return await port_open(port)

            await wait_until(ready, 30.0, f"toolreel ui to listen on 127.0.0.1:{port}")
            yield f"http://127.0.0.1:{port}"
        finally:
            with anyio.CancelScope(shield=True):
                if process.returncode is None:
                    process.send_signal(signal.SIGTERM)
                with anyio.move_on_after(10):
                    await process.wait()
                if process.returncode is None:
                    process.kill()
                    await process.wait()
