"""The dialect's INSERT, which offers ON CONFLICT: PostgreSQL's dialect module (a quarter of a second of
imports, every driver module) loads for PostgreSQL stores only, so a command on SQLite never pays for it."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sqlalchemy.dialects import postgresql, sqlite

__all__ = ["insert_for"]


def insert_for(is_sqlite: bool) -> Callable[[Any], sqlite.Insert | postgresql.Insert]:
    if is_sqlite:
        from sqlalchemy.dialects.sqlite import insert as sqlite_insert

        return sqlite_insert
    from sqlalchemy.dialects.postgresql import insert as pg_insert

    return pg_insert
