"""Opening a store against real SQLite files and a real PostgreSQL cluster: schema versions and migrations,
URLs and defaults, file modes, connection errors, and the PostgreSQL test helper itself."""

from __future__ import annotations

import os
import re
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import create_engine, make_url, text

from tests import pg
from tests.store_helpers import execution, run_threads, step
from toolreel.core.errors import SchemaVersionError, StoreError
from toolreel.core.model import ExecutionQuery
from toolreel.core.store import SCHEMA_VERSION, _engine, default_db_url, open_store
from toolreel.core.store._engine import Database
from toolreel.core.store._migrate import MIGRATIONS, Migration, read_version, upgrade

# schema and opening ----------------------------------------------------------------------


def stamp(url: str, version: int) -> None:
    engine = create_engine(url)
    with engine.begin() as conn:
        conn.execute(text("UPDATE meta SET value = :v WHERE key = 'schema_version'"), {"v": str(version)})
    engine.dispose()


def test_a_new_database_is_stamped_and_reopening_keeps_data(store_url: str) -> None:
    with open_store(store_url) as first:
        first.create_execution(execution("e1"))
    with open_store(store_url) as second:
        assert second.get_execution("e1").id == "e1"
    db = Database(make_url(store_url), store_url)
    with db.read("test") as conn:
        assert read_version(conn) == SCHEMA_VERSION
    db.close()


def test_a_newer_database_is_refused_with_what_to_do(store_url: str) -> None:
    open_store(store_url).close()
    stamp(store_url, SCHEMA_VERSION + 1)
    with pytest.raises(SchemaVersionError) as caught:
        open_store(store_url)
    message = str(caught.value)
    assert f"has schema v{SCHEMA_VERSION + 1}, this toolreel supports up to v{SCHEMA_VERSION}" in message
    assert "upgrade toolreel" in message
    assert store_url.split("/")[-1] in message


def test_an_older_database_is_migrated_in_order(store_url: str) -> None:
    open_store(store_url).close()
    applied: list[int] = []

    def add_probe(version: int) -> Migration:
        def apply(conn: Any) -> None:
            conn.execute(text(f"CREATE TABLE probe_v{version} (x INTEGER)"))
            applied.append(version)

        return Migration(version, f"probe {version}", apply)

    future = (*MIGRATIONS, add_probe(SCHEMA_VERSION + 1), add_probe(SCHEMA_VERSION + 2))
    db = Database(make_url(store_url), store_url)
    try:
        assert upgrade(db, migrations=future) == SCHEMA_VERSION
        assert upgrade(db, migrations=future) == SCHEMA_VERSION + 2  # already there: nothing to do
        assert applied == [SCHEMA_VERSION + 1, SCHEMA_VERSION + 2]
    finally:
        db.close()
    with pytest.raises(SchemaVersionError):  # and this toolreel, older than the database now, refuses it
        open_store(store_url)


def test_open_store_uses_the_env_var_then_the_user_data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    monkeypatch.delenv("TOOLREEL_DB", raising=False)
    assert default_db_url() == f"sqlite:///{tmp_path / 'data' / 'toolreel' / 'toolreel.db'}"
    open_store().close()
    assert (tmp_path / "data" / "toolreel" / "toolreel.db").is_file()
    monkeypatch.setenv("TOOLREEL_DB", f"sqlite:///{tmp_path / 'env.db'}")
    with open_store() as store:
        assert store.url.endswith("env.db")


def test_an_unsupported_url_is_refused(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="not a database URL"):
        open_store("just words")
    with pytest.raises(StoreError, match="unsupported database 'mysql'"):
        open_store("mysql://u@h/db")


# SQLite specifics ------------------------------------------------------------------------


def test_sqlite_files_are_private(tmp_path: Path) -> None:
    path = tmp_path / "new" / "dir" / "toolreel.db"
    with open_store(f"sqlite:///{path}") as store:
        store.create_execution(execution("e1"))  # a write, so the -wal and -shm exist
        files = [path, path.with_name("toolreel.db-wal"), path.with_name("toolreel.db-shm")]
        assert {f.name: stat.S_IMODE(os.stat(f).st_mode) for f in files} == {f.name: 0o600 for f in files}
    assert stat.S_IMODE(os.stat(path.parent).st_mode) == 0o700


def test_sqlite_path_under_a_file_is_a_store_error_naming_the_url(tmp_path: Path) -> None:
    (tmp_path / "afile").write_text("")
    url = f"sqlite:///{tmp_path / 'afile' / 'toolreel.db'}"
    with pytest.raises(StoreError, match=rf"store {url}: opening .* failed: .*not a directory: '{tmp_path / 'afile'}'"):
        open_store(url)


def test_read_only_sqlite_store_refuses_writes_naming_the_url(tmp_path: Path) -> None:
    path = tmp_path / "toolreel.db"
    open_store(f"sqlite:///{path}").close()
    url = f"sqlite:///file:{path}?mode=ro&uri=true"
    with open_store(url) as store:
        assert store.list_executions() == ([], None)  # reading works
        with pytest.raises(
            StoreError,
            match=rf"store sqlite:///file:{path}\?mode=ro&uri=true: creating execution e1 failed: .*readonly",
        ):
            store.create_execution(execution("e1"))


def test_in_memory_sqlite_store_is_shared_by_threads() -> None:
    with open_store("sqlite://") as store:
        store.create_execution(execution("e1"))

        def write_ten(i: int) -> None:
            for n in range(10):
                store.put_step(step(f"s{i}_{n}", n + 1))

        run_threads(4, write_ten)
        assert len(store.get_steps("e1")) == 40


# PostgreSQL specifics --------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.postgres
def test_postgres_password_is_masked_and_bare_scheme_means_psycopg(pg_cluster: pg.PgCluster) -> None:
    url = pg_cluster.create_database()
    with_password = url.replace(f"{pg.SUPERUSER}@", f"{pg.SUPERUSER}:hunter2@").replace(
        "postgresql+psycopg", "postgresql"
    )
    with open_store(with_password) as store:  # trust auth ignores the password; the URL must still hide it
        assert "hunter2" not in store.url and "***" in store.url
        assert store.url.startswith("postgresql+psycopg://")


@pytest.mark.slow
@pytest.mark.postgres
def test_unreachable_postgres_is_a_store_error_without_the_password(pg_cluster: pg.PgCluster) -> None:
    port = pg._free_port()
    with pytest.raises(StoreError) as caught:
        open_store(f"postgresql+psycopg://me:hunter2@127.0.0.1:{port}/db")
    message = str(caught.value)
    assert f"store postgresql+psycopg://me:***@127.0.0.1:{port}/db:" in message
    assert "hunter2" not in message and "is the server running" in message


@pytest.mark.slow
@pytest.mark.postgres
def test_read_only_postgres_refuses_writes_naming_the_url(pg_cluster: pg.PgCluster) -> None:
    url = pg_cluster.create_database()
    open_store(url).close()
    with pg_cluster.admin() as admin:
        admin.execute(f'ALTER DATABASE "{url.rsplit("/", 1)[1]}" SET default_transaction_read_only = on')
    with open_store(url) as store:
        assert store.list_executions() == ([], None)
        with pytest.raises(StoreError, match=rf"store {re.escape(url)}: creating execution e1 failed: .*read-only"):
            store.create_execution(execution("e1"))


@pytest.mark.slow
@pytest.mark.postgres
def test_pooled_connections_killed_while_idle_cost_no_failed_call(
    pg_cluster: pg.PgCluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_engine, "PG_IDLE_PING_SECONDS", 0.0)  # every checkout counts as "after idle"
    url = pg_cluster.create_database()
    with open_store(url) as store:
        store.create_execution(execution("e1"))
        with pg_cluster.admin() as admin:  # what a server restart does to pooled connections
            killed = admin.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s AND pid <> pg_backend_pid()",
                (url.rsplit("/", 1)[1],),
            ).fetchall()
        assert killed
        assert store.get_execution("e1").id == "e1"


# the PostgreSQL test helper --------------------------------------------------------------


@pytest.mark.slow
def test_missing_postgres_fails_the_session_when_required(tmp_path: Path) -> None:
    """What CI relies on: with TOOLREEL_REQUIRE_PG=1, no binaries is an error, not a quiet skip."""
    env = {**os.environ, pg.BINDIR_ENV: str(tmp_path / "no-postgres-here"), pg.REQUIRE_ENV: "1"}
    argv = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rE"]
    argv.append(f"{__file__}::test_pg_url_is_usable")
    done = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=Path(__file__).parents[2], timeout=120)
    assert done.returncode == 1 and "1 error" in done.stdout, done.stdout + done.stderr
    assert f"PostgreSQL server binaries (initdb, pg_ctl) not found in {tmp_path}" in done.stdout
    assert "(TOOLREEL_REQUIRE_PG=1 requires PostgreSQL tests to run)" in done.stdout


def test_missing_postgres_skips_unless_required(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(pg.BINDIR_ENV, str(tmp_path))
    monkeypatch.delenv(pg.REQUIRE_ENV, raising=False)
    assert pg.find_bindir() is None
    with pytest.raises(pg.PgUnavailable, match="not found") as caught, pg.postgres_cluster():
        pass
    with pytest.raises(pytest.skip.Exception, match="install PostgreSQL"):
        pg.require_or_skip(str(caught.value))


@pytest.mark.slow
@pytest.mark.postgres
def test_pg_url_is_usable(pg_url: str) -> None:
    with open_store(pg_url) as store:  # the session's shared database: other tests may have written to it
        assert store.url == pg_url
        assert isinstance(store.list_executions(ExecutionQuery(limit=1))[0], list)
