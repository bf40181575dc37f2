"""The tests' zygote (fixtures/_zygote.py): a launched program behaves as the same program started afresh."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import anyio
import pytest
from anyio.streams.buffered import BufferedByteReceiveStream

from fixtures import _zygote as zygote
from tests.gw import REPO, wait_until
from tests.procs import alive, descendants

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

_PROGRAM = """\
import os, sys
print(sys.argv[1:], os.getcwd(), os.environ.get("MARK"), sys.path[0] == os.path.dirname(os.path.abspath(__file__)))
print("to stderr", file=sys.stderr)
print(sys.stdin.read().upper(), end="")
sys.exit(int(os.environ.get("CODE", "0")))
"""


def _launched(argv: list[str]) -> list[str]:
    command = zygote.launch_command(argv)
    if os.environ.get(zygote.ENV):
        assert command[:4] == [sys.executable, "-I", "-S", str(zygote.LAUNCHER)], command
    return command


def test_a_script_gets_its_arguments_environment_directory_streams_and_exit_status(tmp_path: Path) -> None:
    script = tmp_path / "program.py"
    script.write_text(_PROGRAM)
    workdir = tmp_path / "elsewhere"
    workdir.mkdir()
    done = subprocess.run(
        _launched([sys.executable, str(script), "a", "b c"]),
        input="hello",
        capture_output=True,
        text=True,
        cwd=workdir,
        env={**os.environ, "MARK": "m1", "CODE": "3"},
        timeout=60,
    )
    assert done.returncode == 3
    assert done.stdout == f"['a', 'b c'] {workdir} m1 True\nHELLO"
    assert done.stderr == "to stderr\n"


def test_a_module_runs_as_main_with_its_own_pythonpath(tmp_path: Path) -> None:
    package = tmp_path / "extra" / "probe_pkg"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "tool.py").write_text("import sys\nprint(__name__, sys.argv[1:])\n")
    done = subprocess.run(
        _launched([sys.executable, "-m", "probe_pkg.tool", "x"]),
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(tmp_path / "extra")},
        timeout=60,
    )
    assert (done.returncode, done.stdout, done.stderr) == (0, "__main__ ['x']\n", "")


def test_an_uncaught_exception_prints_its_traceback_and_exits_1(tmp_path: Path) -> None:
    script = tmp_path / "boom.py"
    script.write_text("raise LookupError('the detail')\n")
    done = subprocess.run(_launched([sys.executable, str(script)]), capture_output=True, text=True, timeout=60)
    assert done.returncode == 1
    assert done.stderr.rstrip().endswith("LookupError: the detail"), done.stderr


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
async def test_a_signal_to_the_launcher_reaches_the_program_and_its_status_comes_back(
    tmp_path: Path, signum: signal.Signals
) -> None:
    script = tmp_path / "wait.py"
    script.write_text(
        textwrap.dedent("""\
        import signal, sys
        signal.signal(signal.SIGTERM, lambda *_: sys.exit(7))
        print("waiting", flush=True)
        sys.stdin.read()
        """)
    )
    process = await anyio.open_process(_launched([sys.executable, str(script)]))
    async with process:
        assert process.stdout is not None
        with anyio.fail_after(60):
            assert await BufferedByteReceiveStream(process.stdout).receive_until(b"\n", 100) == b"waiting"
            process.send_signal(signum)
            code = await process.wait()
    # SIGTERM: the program's own handler exits 7; SIGINT: KeyboardInterrupt, as in any Python program (exit 1
    # after a traceback... unless killed by the signal: Python re-raises SIGINT's default action, status -2)
    assert code == (7 if signum == signal.SIGTERM else -signal.SIGINT), code


async def test_a_killed_launcher_takes_its_program_along(tmp_path: Path) -> None:
    if not os.environ.get(zygote.ENV):
        pytest.skip("programs start afresh here (TOOLREEL_TEST_FORK=0): there is no launcher")
    script = tmp_path / "wait.py"
    script.write_text("import sys\nprint('up', flush=True)\nsys.stdin.read()\n")
    process = await anyio.open_process(_launched([sys.executable, str(script)]))
    async with process:
        assert process.stdout is not None
        with anyio.fail_after(60):
            assert await BufferedByteReceiveStream(process.stdout).receive_until(b"\n", 100) == b"up"
        (program,) = descendants(process.pid)  # the launcher's program, though the zygote forked it
        assert zygote.program_of(process.pid) == program
        process.kill()
        await process.wait()
        await wait_until(lambda: not alive(program), 30, "the program to end with its launcher")


def test_the_zygote_ends_with_the_process_that_started_it(tmp_path: Path) -> None:
    """A test process killed outright never stops its zygote: the zygote sees its stdin close and ends."""
    code = textwrap.dedent(f"""\
        import os, subprocess, sys
        from pathlib import Path
        from fixtures import _zygote as zygote
        zygote.configure(Path({str(tmp_path / "z")!r}))
        subprocess.run(zygote.launch_command([sys.executable, "-c", "pass"]), check=True)
        print(zygote._zygote.pid, flush=True)
        os._exit(0)  # no stop(), as when pytest is killed
        """)
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, timeout=120, env=_without_zygote()
    )
    assert done.returncode == 0, done.stderr
    pid = int(done.stdout)
    anyio.run(wait_until, lambda: not alive(pid), 30, "the orphaned zygote to end")


def _without_zygote() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k != zygote.ENV}
