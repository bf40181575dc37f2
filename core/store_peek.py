"""A look into a SQLite store with the standard library only: is there anything to serve yet?

Opening the real store loads SQLAlchemy, which costs a gateway as much memory and start-up time
as the MCP SDK itself. A gateway that has no template to list and no execution to resume needs
none of it until it records or is asked for something; this tells it so without that cost.
"""

from __future__ import annotations

import os
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote

from toolreel.core.model import SCRIPT_TEMPLATE

__all__ = ["Peek", "peek"]

_RUNNABLE = ("pending", "running")


@dataclass(frozen=True, slots=True)
class Peek:
    templates: bool  # at least one saved template
    work: bool  # at least one execution a process may have to drive (pending or running)

    @property
    def idle(self) -> bool:
        return not (self.templates or self.work)


def peek(url: str | None) -> Peek | None:
    """What a SQLite store holds; None when this cannot tell (PostgreSQL, in-memory, unreadable):
    then the caller opens the store as usual."""
    path = _sqlite_path(url or os.environ.get("TOOLREEL_DB") or _default_path())
    if path is None:
        return None
    if not path.exists():
        return Peek(templates=False, work=False)
    try:
        with sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=1.0) as db:
            tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
            if not {"templates", "executions"} <= tables:
                return Peek(templates=False, work=False)
            templates = db.execute("SELECT 1 FROM templates LIMIT 1").fetchone() is not None
            marks = ",".join("?" * len(_RUNNABLE))
            # a script run still `recording` was cut off: the gateway that opens the store resumes it
            query = (
                f"SELECT 1 FROM executions WHERE status IN ({marks}) OR (status = 'recording' AND template = ?) LIMIT 1"
            )
            work = db.execute(query, (*_RUNNABLE, SCRIPT_TEMPLATE)).fetchone() is not None
    except sqlite3.Error:
        return None
    return Peek(templates=templates, work=work)


def _sqlite_path(url: str) -> Path | None:
    prefix = "sqlite:///"
    if not url.startswith(prefix) or "?" in url:
        return None
    rest = unquote(url[len(prefix) :])
    if not rest or rest == ":memory:":
        return None
    return Path(rest)  # sqlite:////abs/path -> /abs/path; sqlite:///rel/path -> rel/path


def _default_path() -> str:
    import platformdirs  # light: no SQLAlchemy

    return f"sqlite:///{Path(platformdirs.user_data_dir('toolreel')) / 'toolreel.db'}"


def in_memory(url: str | None) -> bool:
    """An SQLite database in this process's memory (`sqlite://`, `:memory:`, `mode=memory`):
    another process that opens the URL sees a database of its own."""
    url = url or os.environ.get("TOOLREEL_DB") or ""
    if not url.startswith("sqlite:"):
        return False
    rest = url.partition("://")[2].lstrip("/")
    return rest in ("", ":memory:") or "mode=memory" in url
