"""Independent read-only steps of a saved template replay in parallel: `.venv/bin/python bench/parallel.py`.

A recording of N calls of the fixture server's `slow` tool (each waits `SECONDS` before answering, no data
between them) is templatized twice: with `slow` known read-only (as the gateway learns from `readOnlyHint`),
and with nothing known (every call a write: the recorded order is kept). Each template is saved and run by
the real replayer (`Engine`) against `python -m fixtures.features` over stdio. Prints the wall time of each
run (upstream start not included) and the `depends_on` of the saved steps; the bar: the read-only run takes
less than half the sum of the waits (they overlap), the other at least that sum (they do not).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from fixtures.servers import REPO_ROOT, fixture_command
from toolreel.core.model import StepKind, StepRecord, StepStatus, TemplateDraft
from toolreel.core.store import open_store
from toolreel.core.template import Template
from toolreel.core.template_io import template_to_dict
from toolreel.replayer import Engine, load_template
from toolreel.templatizer import templatize
from toolreel.upstreams.config import parse_config
from toolreel.upstreams.hub import open_upstreams

SECONDS = 1.0


def recording(calls: int) -> list[StepRecord]:
    steps = []
    for i in range(calls):
        args = {"seconds": round(SECONDS + i / 100, 2)}
        steps.append(
            StepRecord(
                execution_id="bench-parallel", name=f"slow_{i + 1}", seq=i + 1, kind=StepKind.TOOL,
                status=StepStatus.SUCCEEDED, server="features", tool="slow", input=args, resolved_input=args,
                output=f"slept {args['seconds']}s",
            )
        )  # fmt: skip
    return steps


async def timed_run(template: Template) -> tuple[float, str]:
    command, *args = fixture_command("features")
    config = parse_config({"mcpServers": {"features": {"command": command, "args": args, "cwd": str(REPO_ROOT)}}})
    with tempfile.TemporaryDirectory(prefix="toolreel-parallel-") as tmp:
        store = open_store(f"sqlite:///{Path(tmp) / 'store.db'}")
        try:
            store.save_template(TemplateDraft(template.name, template_to_dict(template)))
            saved = load_template(store, template.name)
            async with open_upstreams(config) as hub, Engine(store, hub) as engine:
                started = time.perf_counter()
                execution = await engine.run_template(saved, {})
                took = time.perf_counter() - started
        finally:
            store.close()
    return took, str(getattr(execution.status, "value", execution.status))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--calls", type=int, default=4, help="independent read-only calls (default 4)")
    calls = parser.parse_args().calls
    steps = recording(calls)
    waits = sum(float(s.input["seconds"]) for s in steps if isinstance(s.input, dict))
    results = []
    for label, read_only in (("read-only known", {"features__slow"}), ("nothing known", set())):
        template = templatize([steps], name=f"parallel-{len(read_only)}", read_only=read_only).template
        deps = {s.name: list(s.depends_on) for s in template.steps if s.depends_on}
        took, status = anyio.run(timed_run, template)
        results.append(took)
        head = f"{label:<16} {calls} calls of slow (waits {waits:.2f} s in all)"
        print(f"{head}: {took:.2f} s, {status}; depends_on {deps}")
    bars = [
        (f"read-only run {results[0]:.2f} s < half the waits {waits / 2:.2f} s", results[0] < waits / 2),
        (f"run with nothing known {results[1]:.2f} s >= the waits {waits:.2f} s", results[1] >= waits),
    ]
    print()
    for label, ok in bars:
        print(f"[{'PASS' if ok else 'FAIL'}] {label}")
    return 0 if all(ok for _, ok in bars) else 1


if __name__ == "__main__":
    sys.exit(main())
