"""A script template's run killed mid-script is finished by a worker without re-making a finished call
(SPEC §13): `python -m toolreel.replayer run` is SIGKILLed while the script waits on a slow call, and a
`worker` runs the script again, answering the finished calls from their rows `script.<n>`. The `counter`
tool's file proves how many times each call really ran.
"""

from __future__ import annotations

import signal
from pathlib import Path
from typing import Any

import pytest

from tests.callers import saved, wait_until
from tests.replayer.test_replayer_durability import (
    counts,
    finished_steps,
    only_execution,
    replayer_process,
    stop,
    write_config,
)
from toolreel.core.model import ExecutionStatus, StepKind
from toolreel.core.store import open_store

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

LEASE = "1.0"

CODE = """
const counts = [];
for (const key of input.keys) {
  counts.push((await tools.features.counter({key})).count);
  await tools.features.slow({seconds: input.pause});
}
return counts;
"""


def script_template(name: str) -> dict[str, Any]:
    return {
        "name": name,
        "inputs": {"keys": {"type": "array"}, "pause": {"type": "number"}},
        "steps": [
            {"name": "script", "script": {"code": CODE}, "input": {"keys": "@input.keys", "pause": "@input.pause"}}
        ],
        "output": "@script",
    }


async def test_a_killed_script_run_is_finished_by_a_worker_without_remaking_finished_calls(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'store.db'}"
    config = write_config(tmp_path)
    store = open_store(db)
    saved(store, script_template("scripted"))
    common = ["--config", str(config), "--db", db, "--lease-seconds", LEASE]
    inputs = ["-i", 'keys=["k1","k2","k3","k4"]', "-i", "pause=0.5"]
    with replayer_process(tmp_path, "run", "run", "scripted", "--json", *inputs, *common) as runner:
        # calls: script.1 counter k1, script.2 slow, script.3 counter k2, script.4 slow, ...: killed in script.4
        await wait_until(
            lambda: (e := only_execution(store)) is not None and "script.4" in {r.name for r in store.get_steps(e.id)},
            timeout=60,
        )
        runner.send_signal(signal.SIGKILL)
        runner.wait(timeout=30)
    execution = only_execution(store)
    assert execution is not None and execution.status is ExecutionStatus.RUNNING
    with replayer_process(tmp_path, "worker", "worker", "--poll", "0.1", *common) as worker:
        await wait_until(lambda: store.get_execution(execution.id).status.finished, timeout=90)
        stop(worker)
    final = store.get_execution(execution.id)
    assert final.status is ExecutionStatus.SUCCEEDED, final.error
    assert final.output == [1, 1, 1, 1]  # k1 and k2 answered from their rows: the counters were not re-run
    assert counts(tmp_path) == {"k1": 1, "k2": 1, "k3": 1, "k4": 1}
    rows = finished_steps(store, execution.id)
    assert sorted(n for n in rows if n.startswith("script.")) == [f"script.{i}" for i in range(1, 9)]
    assert rows["script"].kind is StepKind.SCRIPT and rows["script.3"].input == {"key": "k2"}
    store.close()
