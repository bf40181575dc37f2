"""The tables of the current schema, in their own `MetaData` so no other table leaks into `create_all`.

JSON values are TEXT on both SQLite and PostgreSQL: they are encoded once in Python, stored verbatim (a tool's
key order survives, which JSONB would not keep) and never queried inside. Times are epoch seconds (double).

SQLAlchemy Core tables, not ORM classes: the store reads and writes rows with Core statements only, and the
ORM (with the model classes that declared these tables before) cost about 0.3 s of CPU at every command that
opens a store, a third of `toolreel executions list`. The schema they give is the same, column for column.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import Boolean, Column, Double, ForeignKey, Index, Integer, MetaData, Table, Text

__all__ = ["EXECUTIONS", "IDEMPOTENCY", "META", "METADATA", "SCHEDULES", "STEPS", "TEMPLATES"]

METADATA = MetaData()


_Kind = type[Text] | type[Integer] | type["Double[float]"] | type[Boolean]


def _required(name: str, kind: _Kind, *, primary_key: bool = False, default: object = None) -> Column[Any]:
    return Column(name, kind(), nullable=False, primary_key=primary_key, default=default)


def _optional(name: str, kind: _Kind) -> Column[Any]:
    return Column(name, kind(), nullable=True)


EXECUTIONS = Table(
    "executions",
    METADATA,
    _required("id", Text, primary_key=True),
    _required("mode", Text),
    _required("status", Text),
    _required("created_at", Double),
    _required("updated_at", Double),
    _optional("session", Text),
    _optional("template", Text),
    _optional("template_version", Integer),
    _optional("template_hash", Text),
    _optional("inputs", Text),
    _optional("output", Text),
    _optional("error", Text),
    _optional("prompt", Text),
    _optional("parent_id", Text),
    _optional("parent_step", Text),
    _required("depth", Integer, default=0),
    _optional("deadline", Double),
    _optional("claimed_by", Text),
    _optional("lease_until", Double),
    _required("fence", Integer, default=0),
    _required("attempt", Integer, default=1),
    _optional("schedule", Text),  # the schedule whose tick started it
    # list_executions: newest first, optionally filtered; the cursor is (created_at, id).
    Index("ix_executions_created", "created_at", "id"),
    Index("ix_executions_status_created", "status", "created_at", "id"),
    Index("ix_executions_template_created", "template", "created_at", "id"),
    # renew_claims runs every few seconds per process: find its own rows without a scan.
    Index("ix_executions_claimed_by", "claimed_by"),
    # Store.recording_of: a stateless client's recording, found by any gateway sharing the store.
    Index("ix_executions_session", "session"),
)

# One attempt of one step; the primary key's prefix serves `get_steps(execution_id)`.
STEPS = Table(
    "steps",
    METADATA,
    Column("execution_id", Text(), ForeignKey("executions.id", ondelete="CASCADE"), primary_key=True, nullable=False),
    _required("name", Text, primary_key=True),
    _required("attempt", Integer, primary_key=True),
    _required("seq", Integer),
    _required("kind", Text),
    _required("status", Text),
    _optional("server", Text),
    _optional("tool", Text),
    _optional("input", Text),
    _optional("resolved_input", Text),
    _optional("result", Text),
    _optional("output", Text),
    _required("is_error", Boolean, default=False),
    _optional("error", Text),
    _optional("started_at", Double),
    _optional("ended_at", Double),
    _optional("redacted", Text),  # JSON list of JSON paths
    _optional("idempotency_key", Text),
)

TEMPLATES = Table(
    "templates",
    METADATA,
    _required("name", Text, primary_key=True),
    _required("version", Integer, primary_key=True),
    _required("hash", Text),
    _required("definition", Text),
    _optional("description", Text),
    _required("created_at", Double),
    _required("source_executions", Text, default="[]"),  # JSON list of execution ids
)

# A template run on a cron expression; `last_tick` moves forward only, once per started tick.
SCHEDULES = Table(
    "schedules",
    METADATA,
    _required("id", Text, primary_key=True),
    _required("template", Text),
    _required("cron", Text),
    _required("tz", Text),
    _optional("inputs", Text),
    _required("paused", Boolean, default=False),
    _required("created_at", Double),
    _required("last_tick", Double),
)

IDEMPOTENCY = Table(
    "idempotency",
    METADATA,
    _required("key", Text, primary_key=True),
    _optional("result", Text),
    _optional("expires_at", Double),
)

# Key/value facts about the database itself (`schema_version`), and values kept with it that their owner
# encrypted before (`sign_in/<server>`: see `upstreams.auth`).
META = Table(
    "meta",
    METADATA,
    _required("key", Text, primary_key=True),
    _required("value", Text),
)
