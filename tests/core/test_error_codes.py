"""Stable error codes: one per class of the exception tree, the table in docs/errors.md the same,
and the codes published so far never renamed (SPEC §6, §10; docs/errors.md)."""

from __future__ import annotations

import importlib
import pkgutil
import re
from pathlib import Path

import toolreel
from toolreel._cli import USAGE
from toolreel.core.errors import ToolreelError
from toolreel.core.model import Execution, ExecutionMode, ExecutionStatus
from toolreel.core.view import DEADLINE_EXCEEDED, outcome_code
from toolreel.replayer._state import STEP_FAILED, TOOL_ERROR
from toolreel.ui._app import BAD_REQUEST

TABLE = Path(__file__).resolve().parents[2] / "docs" / "errors.md"
ROW = re.compile(r"^\| `([a-z_]+)` \|(?: `(\w+)` \|)?")

# Published codes: renaming one breaks every program that matches it. Add, never change.
PUBLISHED = {
    "ToolreelError": "error",
    "ConfigError": "config_invalid",
    "RefError": "ref_unresolved",
    "TemplateError": "template_invalid",
    "CycleError": "template_cycle",
    "StoreError": "store_failed",
    "SchemaVersionError": "store_too_new",
    "NotFoundError": "not_found",
    "StaleClaimError": "claim_lost",
    "ClaimedElsewhere": "claimed_elsewhere",
    "UpstreamError": "upstream_failed",
    "UpstreamTimeout": "upstream_timeout",
    "ScheduleError": "schedule_invalid",
    "CodeError": "code_failed",
    "CodeTimeout": "code_timeout",
    "CodeMemoryError": "code_memory_limit",
    "ExecutionError": "execution_refused",
}
NOT_EXCEPTIONS = {
    "usage",
    "bad_request",
    "execution_failed",
    "execution_cancelled",
    "deadline_exceeded",
    "tool_error",
    "step_failed",
}


def tree() -> dict[str, type[ToolreelError]]:
    """Every class of the tree, found by importing every module of toolreel."""
    for module in pkgutil.walk_packages(toolreel.__path__, "toolreel."):
        if not module.name.endswith(".__main__"):  # those run a command line when imported
            importlib.import_module(module.name)
    found: dict[str, type[ToolreelError]] = {}
    todo: list[type[ToolreelError]] = [ToolreelError]
    while todo:
        cls = todo.pop()
        found[cls.__name__] = cls
        todo.extend(cls.__subclasses__())
    return found


def table() -> tuple[dict[str, str], set[str]]:
    """The documented codes: by class for the exception table, and the codes that are not exceptions."""
    by_class: dict[str, str] = {}
    others: set[str] = set()
    for line in TABLE.read_text(encoding="utf-8").splitlines():
        match = ROW.match(line)
        if match is None:
            continue
        code, cls = match.groups()
        if cls is None:
            others.add(code)
        else:
            by_class[cls] = code
    return by_class, others


def test_every_class_of_the_tree_has_its_own_documented_code() -> None:
    classes = tree()
    own = {name: cls.__dict__.get("code") for name, cls in classes.items()}
    assert [name for name, code in own.items() if code is None] == []  # a subclass never inherits its code
    codes = [cls.code for cls in classes.values()]
    assert len(codes) == len(set(codes)), "two classes share a code"
    documented, others = table()
    assert documented == {name: cls.code for name, cls in classes.items()}
    assert not others & set(codes)


def test_published_codes_are_never_renamed() -> None:
    classes = tree()
    assert {name: classes[name].code for name in PUBLISHED} == PUBLISHED
    assert table()[1] >= NOT_EXCEPTIONS


def test_the_codes_that_are_not_exceptions_are_the_documented_ones() -> None:
    def ended(status: ExecutionStatus, error: str) -> Execution:
        return Execution("x", ExecutionMode.AUTO, status, 0.0, 0.0, error=error)

    outcomes = {
        outcome_code(ended(ExecutionStatus.FAILED, "step a failed: boom")),
        outcome_code(ended(ExecutionStatus.FAILED, f"{DEADLINE_EXCEEDED}: the execution's deadline passed")),
        outcome_code(ended(ExecutionStatus.CANCELLED, "cancelled by request")),
    }
    assert outcomes == {"execution_failed", "deadline_exceeded", "execution_cancelled"}
    assert outcome_code(ended(ExecutionStatus.SUCCEEDED, "")) is None
    assert {USAGE, BAD_REQUEST, TOOL_ERROR, STEP_FAILED, *outcomes} == NOT_EXCEPTIONS
    assert table()[1] >= NOT_EXCEPTIONS


def test_an_error_as_json_carries_its_code_and_message() -> None:
    from toolreel.core.errors import NotFoundError

    assert NotFoundError("no execution 'x'").as_json() == {"code": "not_found", "message": "no execution 'x'"}
