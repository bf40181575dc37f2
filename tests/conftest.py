"""Fixtures shared by every test module: the anyio backend and the stores (SQLite file, throwaway PostgreSQL).

`store_url` runs a test once per backend; the PostgreSQL cluster starts once per session (once per xdist worker:
tests/pg.py) and each test gets a fresh database in it. A test not marked `slow` may not start a process, so that
`-m "not slow"` stays a quick loop: an audit hook refuses any process start while such a test sets up or runs.

With `TOOLREEL_TEST_TIMES=DIR` each pytest process (each xdist worker) appends one JSON line per test phase to
`DIR/<worker>.jsonl`: its wall time, the CPU time of the test process and of the processes it started and
reaped, and how many processes it started. Those two last figures hardly move with other work on the machine,
unlike wall time; `bench/suite.py` runs the suite this way and sums them per file, group and worker.
"""

from __future__ import annotations

import contextlib
import json
import os
import resource
import sys
import tempfile
import time
from collections.abc import Generator, Iterator
from pathlib import Path

import pytest

from fixtures import _zygote as zygote
from tests import pg

# Every way Python starts a program (sys.audit events of subprocess, os and pty).
_PROCESS_EVENTS = frozenset(
    {"subprocess.Popen", "os.posix_spawn", "os.fork", "os.forkpty", "os.exec", "os.spawn", "os.system"}
)
_fast_test: str | None = None  # the test not marked slow that is setting up or running, if any
_started = 0  # processes started by this pytest process so far (for TOOLREEL_TEST_TIMES)
TIMES_ENV = "TOOLREEL_TEST_TIMES"


def _refuse_processes(event: str, args: tuple[object, ...]) -> None:
    global _started
    if event not in _PROCESS_EVENTS:
        return
    _started += 1
    if _fast_test is not None:
        raise RuntimeError(
            f"{_fast_test} starts a process ({event} {args[:2]!r}) but is not marked slow: add "
            '`pytest.mark.slow` to it (or its module\'s pytestmark) so that `-m "not slow"` starts none'
        )


def pytest_configure(config: pytest.Config) -> None:
    sys.addaudithook(_refuse_processes)  # a hook cannot be removed: it checks `_fast_test` instead
    # Python programs the tests start are forked from a warm interpreter (fixtures/_zygote.py), started at the
    # first launch, one per pytest process; TOOLREEL_TEST_FORK=0 starts every one afresh.
    controller = config.pluginmanager.hasplugin("xdist") and getattr(config.option, "numprocesses", None)
    if os.environ.get("TOOLREEL_TEST_FORK", "1") != "0" and not (controller and not hasattr(config, "workerinput")):
        zygote.configure(Path(tempfile.mkdtemp(prefix="toolreel-zygote-")))


def pytest_unconfigure(config: pytest.Config) -> None:
    zygote.stop()


@pytest.fixture(autouse=True)
def _real_exec(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """Tests marked `real_exec` judge what a fresh interpreter does: their programs start afresh."""
    if request.node.get_closest_marker("real_exec"):
        monkeypatch.delenv(zygote.ENV, raising=False)


def run_order(item: pytest.Item) -> int:
    """Where a test goes in the run: a file held by one worker (`xdist_group`: its tests share servers and
    together take minutes), then the tests that start processes, then the in-process ones (a few ms each)."""
    if item.get_closest_marker("xdist_group"):
        return 0
    return 1 if item.get_closest_marker("slow") else 2


@pytest.hookimpl(trylast=True)  # after pytest's own ordering by fixture scope, which this keeps within a rank
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Longest units first, so that no long one starts last while the other workers idle: scripts/test runs
    `--dist loadgroup --no-loadscope-reorder`, which hands units out in this order (xdist's own reordering
    counts tests, not time: it put a 60-test file of quick calls before the conformance suites). The sort is
    stable, so each file keeps its order, and the cheap in-process tests fill the end of the run evenly."""
    items.sort(key=run_order)


@contextlib.contextmanager
def _guarded(item: pytest.Item) -> Iterator[None]:
    """Refuse process starts while a test not marked slow sets up or runs (not at teardown, where the
    session's last test also stops the session's PostgreSQL cluster)."""
    global _fast_test
    _fast_test = None if item.get_closest_marker("slow") else item.nodeid
    try:
        yield
    finally:
        _fast_test = None


def _cpu() -> tuple[float, float]:
    """CPU seconds (user + system) of this process, and of the children it has reaped."""
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime, kids.ru_utime + kids.ru_stime


@contextlib.contextmanager
def _timed(item: pytest.Item, phase: str) -> Iterator[None]:
    """With TOOLREEL_TEST_TIMES set, one JSON line per test phase (see the module's docstring)."""
    folder = os.environ.get(TIMES_ENV)
    if not folder:
        yield
        return
    began, (own, kids), starts = time.perf_counter(), _cpu(), _started
    outcome = "passed"
    try:
        yield
    except pytest.skip.Exception:
        outcome = "skipped"
        raise
    except BaseException:
        outcome = "failed"
        raise
    finally:
        wall, (own_now, kids_now) = time.perf_counter() - began, _cpu()
        worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
        group = next((str(m.args[0]) for m in item.iter_markers("xdist_group") if m.args), None)
        test = item.nodeid.removesuffix(f"@{group}") if group else item.nodeid  # xdist's loadgroup suffix
        line = {"test": test, "phase": phase, "worker": worker, "group": group,
                "wall": round(wall, 4), "cpu": round(own_now - own, 4), "children_cpu": round(kids_now - kids, 4),
                "starts": _started - starts, "outcome": outcome, "at": round(time.time(), 3)}  # fmt: skip
        with open(os.path.join(folder, f"{worker}.jsonl"), "a", encoding="utf-8") as out:
            out.write(json.dumps(line) + "\n")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Generator[None, None, None]:
    with _timed(item, "setup"), _guarded(item):
        return (yield)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, None, None]:
    with _timed(item, "call"), _guarded(item):
        return (yield)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item: pytest.Item) -> Generator[None, None, None]:
    with _timed(item, "teardown"):
        return (yield)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """A report that quotes a lone UTF-16 surrogate (the tests of servers that cut a string mid-emoji) gets it
    escaped: an xdist worker sends reports as UTF-8, and one it cannot encode ends the worker and the run."""
    report: pytest.TestReport = yield
    if report.longrepr is not None and not _encodable(text := str(report.longrepr)):
        report.longrepr = _escaped(text)
    report.sections = [(title, _escaped(body)) for title, body in report.sections]
    return report


def _encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _escaped(text: str) -> str:
    return text if _encodable(text) else text.encode("utf-8", "backslashreplace").decode("utf-8")


@pytest.fixture(scope="session")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="session")
def pg_cluster() -> Iterator[pg.PgCluster]:
    """One PostgreSQL cluster for the session; skipped (failed with TOOLREEL_REQUIRE_PG=1) if unavailable."""
    try:
        with pg.postgres_cluster() as cluster:
            yield cluster
    except pg.PgUnavailable as exc:
        pg.require_or_skip(str(exc))


@pytest.fixture(scope="session")
def pg_url(pg_cluster: pg.PgCluster) -> str:
    """A database shared by the whole session (tests needing isolation use `pg_cluster.create_database()`)."""
    return pg_cluster.create_database("toolreel_session")


# PostgreSQL runs as a server process: its half of each test is slow.
@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=[pytest.mark.postgres, pytest.mark.slow])])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """An empty store: a SQLite file in tmp_path, or a fresh PostgreSQL database (dropped afterwards)."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'toolreel.db'}"
        return
    cluster: pg.PgCluster = request.getfixturevalue("pg_cluster")
    url = cluster.create_database()
    yield url
    cluster.drop_database(url.rsplit("/", 1)[1])
