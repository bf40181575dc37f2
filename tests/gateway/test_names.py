"""Listed names (SPEC §2): `server__tool`, at most 64 chars of [A-Za-z0-9_-], mapped deterministically.

The mapping rule is checked directly, then end to end: mapped names are callable, shown in
`toolreel__status`, identical across restarts and when another server is added (the gateway in-process,
tests/inproc.py); wrap mode keeps the upstream's own names, and `--prefix` / `--no-prefix` override either
default (`toolreel serve` itself, as those defaults are its command line's).
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from fixtures._zygote import launch_command
from tests.gw import (
    PYTHON,
    REPO,
    call,
    fixture_entry,
    gateway_env,
    status,
    stdio_gateway,
    text_of,
    wait_until,
    write_config,
)
from tests.inproc import gateway_in_process
from toolreel.core.names import prefixed_name, server_part, split_name
from toolreel.core.store import open_store
from toolreel.upstreams.names import MAX_NAME, listed_name, split_prefixed

LEGAL = re.compile(r"[A-Za-z0-9_-]{1,64}")
LONG_SERVER = "a_rather_long_server_name_that_pushes_every_tool_over_the_limit"  # 63 chars, legal


# --- the rule ----------------------------------------------------------------------------------------------------


def test_plain_names_are_server__tool() -> None:
    assert listed_name("fs", "read_file") == "fs__read_file"
    assert listed_name("everything", "get-tiny-image") == "everything__get-tiny-image"
    assert split_prefixed("fs__read_file") == ("fs", "read_file")
    assert split_prefixed("read_file") is None


def test_without_prefix_the_tool_keeps_its_name() -> None:
    assert listed_name("fs", "read_file", prefix=False) == "read_file"


@pytest.mark.parametrize(
    ("server", "tool"),
    [
        (LONG_SERVER, "echo"),
        ("fs", "x" * 80),
        ("fs", "read.file/v2"),
        ("fs", "héllo wörld"),
        ("fs", "a:b@c"),
        ("s" * 40, "t" * 40 + ".x"),
    ],
)
def test_long_or_illegal_names_are_mapped_to_legal_deterministic_names(server: str, tool: str) -> None:
    name = listed_name(server, tool)
    assert LEGAL.fullmatch(name), name
    assert len(name) <= MAX_NAME
    assert listed_name(server, tool) == name


def test_mapped_names_do_not_collide() -> None:
    base = "x" * 70
    names = {listed_name("fs", base + suffix) for suffix in ("a", "b", "c", ".d", "/d")}
    assert len(names) == 5
    # an illegal name never maps onto the legal name it resembles
    assert listed_name("fs", "read.file") != listed_name("fs", "read_file")


@pytest.mark.slow
def test_mapping_is_stable_across_processes() -> None:
    here = [listed_name(LONG_SERVER, "echo"), listed_name("fs", "read.file/v2")]
    code = (
        "from toolreel.upstreams.names import listed_name;"
        f"print(listed_name({LONG_SERVER!r}, 'echo'));print(listed_name('fs', 'read.file/v2'))"
    )
    done = subprocess.run(
        [PYTHON, "-c", code], capture_output=True, text=True, cwd=REPO, env={"PYTHONHASHSEED": "12345"}, timeout=60
    )
    assert done.stdout.split() == here, done.stderr


def test_mapping_does_not_depend_on_other_servers() -> None:
    # the function only sees (server, name): adding a server cannot change an existing listing
    assert listed_name("fs", "x" * 80) == listed_name("fs", "x" * 80, prefix=True)


# --- end to end ----------------------------------------------------------------------------------------------------


@pytest.mark.anyio
@pytest.mark.slow
async def test_mapped_names_are_callable_shown_in_status_and_stable(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'store.db'}"
    async with gateway_in_process({LONG_SERVER: fixture_entry("features")}, db=db) as gw:
        first = sorted(t.name for t in (await gw.client.list_tools()).tools if not t.name.startswith("toolreel__"))
        report = await status(gw)
        mapped_echo = listed_name(LONG_SERVER, "echo")
        result = await call(gw, mapped_echo, {"text": "through a mapped name"})
        assert text_of(result) == "through a mapped name"
        assert (result.meta or {}).get("toolreel/step") == "echo_1"  # steps use the tool's own name
    assert all(LEGAL.fullmatch(name) for name in first), first
    assert mapped_echo in first
    mapping = {m["listed"]: (m["server"], m["name"]) for m in report["name_mapping"]}
    assert mapping[mapped_echo] == (LONG_SERVER, "echo")

    # restart with another server listed first: the same names
    both = {"ids": fixture_entry("ids"), LONG_SERVER: fixture_entry("features")}
    async with gateway_in_process(both, db=db) as gw:
        again = sorted(
            t.name for t in (await gw.client.list_tools()).tools if not t.name.startswith(("toolreel__", "ids__"))
        )
    assert again == first


@pytest.mark.anyio
@pytest.mark.slow
async def test_wrap_mode_keeps_names_and_records_the_server(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'store.db'}"
    async with stdio_gateway(
        ["--name", "feat", "--", *launch_command([PYTHON, "-m", "fixtures.features"])], gateway_env(db)
    ) as gw:
        names = {t.name for t in (await gw.client.list_tools()).tools}
        result = await call(gw, "echo", {"text": "wrapped"})
        execution = (result.meta or {})["toolreel/execution"]
        report = await status(gw)
    assert {"echo", "add", "slow"} <= names
    assert not any(n.startswith("feat__") for n in names)
    assert text_of(result) == "wrapped"
    assert report["upstreams"][0]["name"] == "feat"
    store = open_store(db)
    try:
        await wait_until(lambda: len(store.get_steps(execution)) == 1, 10, "the step to be stored")
        step = store.get_steps(execution)[0]
        assert (step.name, step.server, step.tool) == ("echo_1", "feat", "echo")
    finally:
        store.close()


@pytest.mark.anyio
@pytest.mark.slow
async def test_wrap_mode_with_prefix_and_derived_name(tmp_path: Path) -> None:
    env = gateway_env(f"sqlite:///{tmp_path / 'store.db'}")
    async with stdio_gateway(["--prefix", "--", *launch_command([PYTHON, "-m", "fixtures.features"])], env) as gw:
        names = {t.name for t in (await gw.client.list_tools()).tools}
        server = (await status(gw))["upstreams"][0]["name"]
    assert LEGAL.fullmatch(server) and "__" not in server
    assert f"{server}__echo" in names and "echo" not in names


@pytest.mark.anyio
@pytest.mark.slow
async def test_config_mode_with_no_prefix_lists_bare_names(tmp_path: Path) -> None:
    config = write_config(tmp_path / "c.json", {"feat": fixture_entry("features"), "ids": fixture_entry("ids")})
    async with stdio_gateway(
        ["--config", str(config), "--no-prefix"], gateway_env(f"sqlite:///{tmp_path / 's.db'}")
    ) as gw:
        names = {t.name for t in (await gw.client.list_tools()).tools}
        created = await call(gw, "create_user", {"name": "Ann", "email": "ann@example.com"})
    assert {"echo", "create_user", "toolreel__status"} <= names
    assert not any(n.startswith(("feat__", "ids__")) for n in names)
    assert not created.is_error and (created.structured_content or {}).get("name") == "Ann"


@pytest.mark.parametrize(
    ("listed", "server", "tool"),
    [("fs__read_file", "fs", "read_file"), ("fs__read__file", "fs", "read__file"), ("echo", None, "echo")],
)
def test_a_listed_name_splits_at_the_first_separator(listed: str, server: str | None, tool: str) -> None:
    """Server names never hold `__` (the config refuses them); tool names may."""
    assert split_name(listed) == (server, tool)
    assert prefixed_name(server, tool) == listed
    assert server_part(listed) == (server or listed)
