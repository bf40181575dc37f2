"""Fixtures shared by every test module: the anyio backend and the stores (SQLite file, throwaway PostgreSQL).

`store_url` runs a test once per backend; the PostgreSQL cluster starts once per session (tests/pg.py) and each
test gets a fresh database in it.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests import pg


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


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """An empty store: a SQLite file in tmp_path, or a fresh PostgreSQL database (dropped afterwards)."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'toolreel.db'}"
        return
    cluster: pg.PgCluster = request.getfixturevalue("pg_cluster")
    url = cluster.create_database()
    yield url
    cluster.drop_database(url.rsplit("/", 1)[1])
