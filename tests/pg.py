"""A throwaway PostgreSQL cluster for tests: `initdb` into a temp dir, `pg_ctl start` on a free 127.0.0.1 port.

`postgres_cluster()` yields a `PgCluster` (stopped with `pg_ctl stop -m immediate` on exit); each test takes a
fresh database from `PgCluster.create_database()`. As root, the server binaries run as an unprivileged user,
because `initdb` refuses root. Missing binaries raise `PgUnavailable`; `require_or_skip` turns that into a skip,
or into a failure when `TOOLREEL_REQUIRE_PG=1` (CI).
"""

from __future__ import annotations

import contextlib
import glob
import itertools
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import NoReturn

import psycopg
import pytest

__all__ = ["REQUIRE_ENV", "PgCluster", "PgUnavailable", "find_bindir", "postgres_cluster", "require_or_skip"]

REQUIRE_ENV = "TOOLREEL_REQUIRE_PG"
BINDIR_ENV = "TOOLREEL_PG_BINDIR"
SUPERUSER = "toolreel"
_INSTALL_HINT = "install PostgreSQL (Debian: apt-get install -y postgresql) or set TOOLREEL_PG_BINDIR"

# Durability is worthless for a cluster deleted at the end of the session; speed is not.
_SERVER_SETTINGS = {
    "listen_addresses": "'127.0.0.1'",
    "fsync": "off",
    "synchronous_commit": "off",
    "full_page_writes": "off",
    "max_connections": "300",
    "shared_buffers": "32MB",
    "log_min_messages": "warning",
}


class PgUnavailable(RuntimeError):
    """PostgreSQL binaries are missing or the cluster could not start."""


def find_bindir() -> Path | None:
    """The directory holding initdb and pg_ctl: $TOOLREEL_PG_BINDIR if set (and then only it), else
    `pg_config --bindir`, Debian's /usr/lib/postgresql/<newest>/bin (not on PATH), then PATH."""
    for candidate in _bindir_candidates():
        if (candidate / "initdb").is_file() and (candidate / "pg_ctl").is_file():
            return candidate
    return None


def _bindir_candidates() -> Iterator[Path]:
    if env := os.environ.get(BINDIR_ENV):
        yield Path(env)
        return
    if pg_config := shutil.which("pg_config"):
        with contextlib.suppress(OSError, subprocess.SubprocessError):
            out = subprocess.run([pg_config, "--bindir"], capture_output=True, text=True, timeout=10, check=True)
            yield Path(out.stdout.strip())
    debian = glob.glob("/usr/lib/postgresql/*/bin")
    for path in sorted(debian, key=lambda p: _version_key(Path(p).parent.name), reverse=True):
        yield Path(path)
    if initdb := shutil.which("initdb"):
        yield Path(initdb).resolve().parent


def _version_key(name: str) -> tuple[int, ...]:
    return tuple(int(part) for part in name.split(".") if part.isdigit())


def _unprivileged_user() -> pwd.struct_passwd | None:
    """Who runs the server: ourselves unless root; then `postgres` if it exists, else `nobody`."""
    if os.geteuid() != 0:
        return None
    for name in ("postgres", "nobody"):
        with contextlib.suppress(KeyError):
            return pwd.getpwnam(name)
    raise PgUnavailable("running as root and neither a 'postgres' nor a 'nobody' user exists to run initdb")


def _as_user(user: pwd.struct_passwd | None, argv: list[str]) -> list[str]:
    if user is None:
        return argv
    if runuser := shutil.which("runuser"):
        return [runuser, "-u", user.pw_name, "--", *argv]
    if setpriv := shutil.which("setpriv"):
        return [setpriv, f"--reuid={user.pw_uid}", f"--regid={user.pw_gid}", "--clear-groups", "--", *argv]
    raise PgUnavailable("running as root, and neither runuser nor setpriv is available to drop privileges")


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@dataclass
class PgCluster:
    """A running cluster; `url(db)` is a SQLAlchemy URL for psycopg 3."""

    bindir: Path
    root: Path
    port: int
    user: pwd.struct_passwd | None
    _names: Iterator[int] = field(default_factory=itertools.count)

    @property
    def datadir(self) -> Path:
        return self.root / "data"

    @property
    def logfile(self) -> Path:
        return self.root / "server.log"

    def url(self, database: str = "postgres") -> str:
        return f"postgresql+psycopg://{SUPERUSER}@127.0.0.1:{self.port}/{database}"

    def admin(self) -> psycopg.Connection[tuple[object, ...]]:
        """An autocommit connection to the `postgres` database (CREATE/DROP DATABASE need autocommit)."""
        return psycopg.connect(host="127.0.0.1", port=self.port, user=SUPERUSER, dbname="postgres", autocommit=True)

    def create_database(self, name: str | None = None) -> str:
        """A new empty database; returns its URL. Names are unique per cluster unless given."""
        name = name or f"test_{next(self._names)}"
        with self.admin() as conn:
            # FILE_COPY copies template0 file by file: with fsync off, about twice as fast as PG15 default WAL_LOG.
            conn.execute(f'CREATE DATABASE "{name}" TEMPLATE template0 STRATEGY FILE_COPY')
        return self.url(name)

    def drop_database(self, name: str) -> None:
        with self.admin() as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

    def pg_ctl(self, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
        argv = _as_user(self.user, [str(self.bindir / "pg_ctl"), "-D", str(self.datadir), *args])
        return subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False)

    def start(self) -> None:
        done = self.pg_ctl("-l", str(self.logfile), "-w", "-t", "30", "-o", f"-p {self.port}", "start")
        if done.returncode != 0:
            raise PgUnavailable(f"pg_ctl start failed (port {self.port}): {done.stderr.strip()}\n{self._log_tail()}")

    def stop(self) -> None:
        self.pg_ctl("-m", "immediate", "-w", "stop")

    def _log_tail(self) -> str:
        with contextlib.suppress(OSError):
            return "server log:\n" + "\n".join(self.logfile.read_text(errors="replace").splitlines()[-20:])
        return "(no server log)"


def _initdb(bindir: Path, root: Path, user: pwd.struct_passwd | None) -> None:
    argv = [str(bindir / "initdb"), "-D", str(root / "data"), "-U", SUPERUSER, "--auth=trust"]
    argv += ["-E", "UTF8", "--locale=C", "--no-sync"]
    done = subprocess.run(_as_user(user, argv), capture_output=True, text=True, timeout=120, check=False)
    if done.returncode != 0:
        raise PgUnavailable(f"initdb failed in {root}: {done.stderr.strip() or done.stdout.strip()}")
    settings = {**_SERVER_SETTINGS, "unix_socket_directories": f"'{root}'"}
    with (root / "data" / "postgresql.conf").open("a") as conf:
        conf.write("\n# tests/pg.py\n" + "".join(f"{key} = {value}\n" for key, value in settings.items()))


@contextlib.contextmanager
def postgres_cluster() -> Iterator[PgCluster]:
    """Start a throwaway cluster; stop it and delete its files on exit. Raises PgUnavailable."""
    bindir = find_bindir()
    if bindir is None:
        where = os.environ.get(BINDIR_ENV) or "pg_config --bindir, /usr/lib/postgresql/*/bin or PATH"
        raise PgUnavailable(f"PostgreSQL server binaries (initdb, pg_ctl) not found in {where}: {_INSTALL_HINT}")
    user = _unprivileged_user()
    # Directly under the system temp dir: pytest's own tmp dirs are 0700 root and the server user could not enter.
    root = Path(tempfile.mkdtemp(prefix="toolreel-pg-"))
    try:
        if user is not None:
            os.chown(root, user.pw_uid, user.pw_gid)
        _initdb(bindir, root, user)
        cluster = _start_on_free_port(bindir, root, user)
        try:
            yield cluster
        finally:
            cluster.stop()
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _start_on_free_port(bindir: Path, root: Path, user: pwd.struct_passwd | None) -> PgCluster:
    # The port is free when probed but another process may take it before the server binds: retry a few times.
    last: PgUnavailable | None = None
    for _ in range(3):
        cluster = PgCluster(bindir=bindir, root=root, port=_free_port(), user=user)
        try:
            cluster.start()
        except PgUnavailable as exc:
            last = exc
            continue
        return cluster
    assert last is not None
    raise last


def require_or_skip(reason: str) -> NoReturn:
    """Skip a test that needs PostgreSQL, or fail it when TOOLREEL_REQUIRE_PG=1 (CI must not skip silently)."""
    if os.environ.get(REQUIRE_ENV) == "1":
        pytest.fail(f"{reason} ({REQUIRE_ENV}=1 requires PostgreSQL tests to run)", pytrace=False)
    pytest.skip(reason)
