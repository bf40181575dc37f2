"""A secret-named key in a tool's JSON text is redacted whatever the text's size (SPEC §3): past 1 MiB the
redactor scans the text instead of parsing it, and the stored result, the output read from it and every
other column hold no secret. Real SQLite and PostgreSQL stores, rows built by the recorder's own code."""

from __future__ import annotations

import json
import secrets
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from tests.store_helpers import T0, execution
from toolreel.core.model import StepRecord
from toolreel.core.secrets import REDACTED
from toolreel.core.store import SQLStore, open_store
from toolreel.core.store._rows import SAME
from toolreel.recorder._rows import StepEntry, build

MIB = 1 << 20


@pytest.fixture
def store(store_url: str) -> Iterator[SQLStore]:
    with open_store(store_url) as opened:
        opened.create_execution(execution("e1"))
        yield opened


def _document(canary: str) -> dict[str, Any]:
    """Over 1 MiB, the password deep inside; words that only look like keys sit in values around it."""
    rows: list[dict[str, Any]] = [
        {"id": i, "note": f'row {i} says "password": here', "token_count": i} for i in range(20_000)
    ]
    rows[10_000]["account"] = {"login": "ada", "password": canary, "apiKey": 12345, "secret": None}
    return {"rows": rows, "padding": "x" * MIB}


def _redacted(document: dict[str, Any]) -> dict[str, Any]:
    account = {"login": "ada", "password": REDACTED, "apiKey": REDACTED, "secret": None}
    rows = [{**row, "account": account} if "account" in row else row for row in document["rows"]]
    return {**document, "rows": rows}


def _recorded(text: str) -> StepRecord:
    result = {"content": [{"type": "text", "text": text}], "isError": False}
    row = build(StepEntry("step", "e1", "read_1", 1, "srv", "read", {}, {}, result, None, T0, T0 + 1))
    assert isinstance(row, StepRecord)
    return row


def _found_anywhere(url: str, needle: str) -> list[str]:
    """Every column of every table read back as text, and the SQLite file with its WAL."""
    engine = sa.create_engine(url)
    found: list[str] = []
    try:
        meta = sa.MetaData()
        meta.reflect(engine)
        with engine.connect() as conn:
            for table in meta.tables.values():
                for row in conn.execute(sa.select(table)).mappings():
                    found += [f"{table.name}.{column}" for column, value in row.items() if needle in str(value)]
    finally:
        engine.dispose()
    if url.startswith("sqlite:///"):
        path = Path(url.removeprefix("sqlite:///"))
        for file in (path, path.with_name(path.name + "-wal")):
            if file.exists() and needle.encode() in file.read_bytes():
                found.append(f"the file {file.name}")
    return found


def _raw_output(url: str) -> str | None:
    engine = sa.create_engine(url)
    try:
        with engine.connect() as conn:
            output = conn.execute(sa.text("SELECT output FROM steps WHERE name = 'read_1'")).scalar_one()
    finally:
        engine.dispose()
    assert output is None or isinstance(output, str)
    return output


TEXTS: dict[str, Callable[[dict[str, Any]], str]] = {
    "compact": lambda document: json.dumps(document),
    "indented": lambda document: json.dumps(document, indent=2),
    "ascii escapes": lambda document: json.dumps({"é": "ü", **document}, ensure_ascii=True),
}


@pytest.mark.parametrize("form", list(TEXTS))
def test_a_password_deep_in_a_json_text_past_1_mib_reaches_no_column(store: SQLStore, form: str) -> None:
    canary = f"CANARY-large-{secrets.token_hex(8)}"
    document = _document(canary)
    text = TEXTS[form](document)
    assert len(text) > MIB
    store.put_steps([_recorded(text)])
    assert _found_anywhere(store.url, canary) == []
    (stored,) = store.get_steps("e1")
    expected = _redacted(document) if form != "ascii escapes" else {"é": "ü", **_redacted(document)}
    assert stored.output == expected
    # the output is what SPEC §4 reads from the stored, redacted result: written once, not a second copy
    assert _raw_output(store.url) == SAME


def test_a_password_in_json_held_by_a_string_of_a_large_text_is_redacted(store: SQLStore) -> None:
    canary = f"CANARY-nested-{secrets.token_hex(8)}"
    inner = json.dumps({"user": "ada", "password": canary})
    text = json.dumps({"body": inner, "padding": "x" * MIB})
    store.put_steps([_recorded(text)])
    assert _found_anywhere(store.url, canary) == []
    (stored,) = store.get_steps("e1")
    assert isinstance(stored.output, dict)
    assert json.loads(stored.output["body"]) == {"user": "ada", "password": REDACTED}


def test_a_large_json_text_cut_off_mid_document_has_its_password_redacted(store: SQLStore) -> None:
    canary = f"CANARY-cut-{secrets.token_hex(8)}"
    text = json.dumps({"padding": "x" * MIB, "auth": {"password": canary, "user": "ada"}, "more": [1, 2, 3]})
    cut = text[: text.index(canary) + len(canary) + 10]  # a tool that truncates its output
    store.put_steps([_recorded(cut)])
    assert _found_anywhere(store.url, canary) == []
