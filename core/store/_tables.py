"""The tables of the current schema (sqlmodel, in their own registry so no other metadata leaks into `create_all`).

JSON values are TEXT on both SQLite and PostgreSQL: they are encoded once in Python, stored verbatim (a tool's
key order survives, which JSONB would not keep) and never queried inside. Times are epoch seconds (double).
"""

from __future__ import annotations

from sqlalchemy import Column, Double, ForeignKey, Index, Integer, MetaData, Table, Text
from sqlalchemy.orm import registry
from sqlmodel import Field, SQLModel

__all__ = ["EXECUTIONS", "IDEMPOTENCY", "META", "METADATA", "SCHEDULES", "STEPS", "TEMPLATES"]

_REGISTRY = registry()


class _Row(SQLModel, registry=_REGISTRY):
    pass


class ExecutionRow(_Row, table=True):
    __tablename__ = "executions"
    __table_args__ = (
        # list_executions: newest first, optionally filtered; the cursor is (created_at, id).
        Index("ix_executions_created", "created_at", "id"),
        Index("ix_executions_status_created", "status", "created_at", "id"),
        Index("ix_executions_template_created", "template", "created_at", "id"),
        # renew_claims runs every few seconds per process: find its own rows without a scan.
        Index("ix_executions_claimed_by", "claimed_by"),
        # Store.recording_of: a stateless client's recording, found by any gateway sharing the store.
        Index("ix_executions_session", "session"),
    )

    id: str = Field(primary_key=True, sa_type=Text)
    mode: str = Field(sa_type=Text)
    status: str = Field(sa_type=Text)
    created_at: float = Field(sa_type=Double)
    updated_at: float = Field(sa_type=Double)
    session: str | None = Field(default=None, sa_type=Text)
    template: str | None = Field(default=None, sa_type=Text)
    template_version: int | None = Field(default=None, sa_type=Integer)
    template_hash: str | None = Field(default=None, sa_type=Text)
    inputs: str | None = Field(default=None, sa_type=Text)
    output: str | None = Field(default=None, sa_type=Text)
    error: str | None = Field(default=None, sa_type=Text)
    prompt: str | None = Field(default=None, sa_type=Text)
    parent_id: str | None = Field(default=None, sa_type=Text)
    parent_step: str | None = Field(default=None, sa_type=Text)
    depth: int = Field(default=0, sa_type=Integer)
    deadline: float | None = Field(default=None, sa_type=Double)
    claimed_by: str | None = Field(default=None, sa_type=Text)
    lease_until: float | None = Field(default=None, sa_type=Double)
    fence: int = Field(default=0, sa_type=Integer)
    attempt: int = Field(default=1, sa_type=Integer)
    schedule: str | None = Field(default=None, sa_type=Text)  # the schedule whose tick started it


class StepRow(_Row, table=True):
    """One attempt of one step; the primary key's prefix serves `get_steps(execution_id)`."""

    __tablename__ = "steps"

    execution_id: str = Field(sa_column=Column(Text, ForeignKey("executions.id", ondelete="CASCADE"), primary_key=True))
    name: str = Field(primary_key=True, sa_type=Text)
    attempt: int = Field(primary_key=True, sa_type=Integer)
    seq: int = Field(sa_type=Integer)
    kind: str = Field(sa_type=Text)
    status: str = Field(sa_type=Text)
    server: str | None = Field(default=None, sa_type=Text)
    tool: str | None = Field(default=None, sa_type=Text)
    input: str | None = Field(default=None, sa_type=Text)
    resolved_input: str | None = Field(default=None, sa_type=Text)
    result: str | None = Field(default=None, sa_type=Text)
    output: str | None = Field(default=None, sa_type=Text)
    is_error: bool = False
    error: str | None = Field(default=None, sa_type=Text)
    started_at: float | None = Field(default=None, sa_type=Double)
    ended_at: float | None = Field(default=None, sa_type=Double)
    redacted: str | None = Field(default=None, sa_type=Text)  # JSON list of JSON paths
    idempotency_key: str | None = Field(default=None, sa_type=Text)


class TemplateRow(_Row, table=True):
    __tablename__ = "templates"

    name: str = Field(primary_key=True, sa_type=Text)
    version: int = Field(primary_key=True, sa_type=Integer)
    hash: str = Field(sa_type=Text)
    definition: str = Field(sa_type=Text)
    description: str | None = Field(default=None, sa_type=Text)
    created_at: float = Field(sa_type=Double)
    source_executions: str = Field(default="[]", sa_type=Text)  # JSON list of execution ids


class ScheduleRow(_Row, table=True):
    """A template run on a cron expression; `last_tick` moves forward only, once per started tick."""

    __tablename__ = "schedules"

    id: str = Field(primary_key=True, sa_type=Text)
    template: str = Field(sa_type=Text)
    cron: str = Field(sa_type=Text)
    tz: str = Field(sa_type=Text)
    inputs: str | None = Field(default=None, sa_type=Text)
    paused: bool = False
    created_at: float = Field(sa_type=Double)
    last_tick: float = Field(sa_type=Double)


class IdempotencyRow(_Row, table=True):
    __tablename__ = "idempotency"

    key: str = Field(primary_key=True, sa_type=Text)
    result: str | None = Field(default=None, sa_type=Text)
    expires_at: float | None = Field(default=None, sa_type=Double)


class MetaRow(_Row, table=True):
    """Key/value facts about the database itself (`schema_version`), and values kept with it that their
    owner encrypted before (`sign_in/<server>`: see `upstreams.auth`)."""

    __tablename__ = "meta"

    key: str = Field(primary_key=True, sa_type=Text)
    value: str = Field(sa_type=Text)


def _table(model: type[_Row]) -> Table:
    table = model.metadata.tables[str(model.__tablename__)]
    return table


METADATA: MetaData = _REGISTRY.metadata
EXECUTIONS = _table(ExecutionRow)
STEPS = _table(StepRow)
TEMPLATES = _table(TemplateRow)
IDEMPOTENCY = _table(IdempotencyRow)
SCHEDULES = _table(ScheduleRow)
META = _table(MetaRow)
