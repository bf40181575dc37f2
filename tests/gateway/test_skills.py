"""Templates as Agent Skills (SPEC §15): the generated SKILL.md, `templates export --as skill`, and the
gateway serving each template's latest version as `skill://toolreel/<name>/SKILL.md` (Skills extension).

The gateway tests run a real `toolreel serve --http` over a real SQLite store and a fixture server; a real
MCP client lists and reads the skill, checks every digest and size against the bytes it read, and runs the
skill's instructions through `reel__<name>`. The conformance suite's `sep-2640-*` server scenarios run
against the same gateway.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import re
import sqlite3
import subprocess
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
import yaml
from mcp.shared.exceptions import MCPError
from pydantic import TypeAdapter

from fixtures._zygote import launch_command
from tests import conformance
from tests.gw import PYTHON, REPO, Connected, fixture_entry, gateway_env, http_gateway, text_of, wait_until
from tests.inproc import gateway_in_process
from toolreel.core.model import TemplateDraft
from toolreel.core.skill import find_skill, served_skills, skill_name, template_skill
from toolreel.core.store import open_store
from toolreel.core.template_io import load_template_file, load_template_text
from toolreel.gateway.skills import read_skill_file

pytestmark = [pytest.mark.anyio]

# Agent Skills naming rules, as the conformance suite checks them.
SKILL_NAME = re.compile(r"^(?!.*--)[a-z0-9]([a-z0-9-]{0,62}[a-z0-9])?$")

TRIAGE = """
name: Triage_Issues
description: Label every open issue of a repo and report.
inputs:
  repo: {type: string, description: owner/name, pattern: "^[^/]+/[^/]+$"}
  limit: {type: integer, default: 10, minimum: 1, maximum: 100}
  mode: {type: string, enum: [fast, careful], default: fast}
  token: {type: string, secret: {env: GITHUB_TOKEN}}
servers:
  github: {command: npx, args: ["-y", "@example/github-mcp"], env: {GITHUB_TOKEN: "${env:GITHUB_TOKEN}"}}
steps:
  - name: list_issues
    tool: github__list_issues
    input: {repo: "@input.repo", per_page: "@input.limit", token: "@input.token"}
  - name: label_each
    for_each: "@list_issues.items"
    tool: github__add_label
    input: {number: "@item.number", label: triage}
output: {count: "@list_issues.total"}
"""

ECHO = {
    "name": "shout",
    "description": "Echo a word back through the features server.",
    "inputs": {"word": {"type": "string", "description": "what to echo"}},
    "steps": [{"name": "echo_1", "tool": "feat__echo", "input": {"text": "@input.word"}}],
}


def front_matter(text: str) -> dict[str, Any]:
    match = re.match(r"^---\n(.*?)\n---\n", text, re.S)
    assert match is not None, f"SKILL.md does not start with front matter:\n{text[:300]}"
    parsed = yaml.safe_load(match.group(1))
    assert isinstance(parsed, dict)
    return parsed


def digest(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


# --- the generated skill ----------------------------------------------------------------------------------------


def test_skill_md_says_what_the_template_takes_needs_and_how_to_run_it() -> None:
    template = load_template_text(TRIAGE)
    skill = template_skill(template)
    text = skill.files[0].content.decode()
    assert skill.name == "triage-issues" and SKILL_NAME.match(skill.name)
    assert skill.uri == "skill://toolreel/triage-issues/SKILL.md"
    # The entry's front matter is the file's, field for field (hosts refuse a skill on any difference).
    assert front_matter(text) == skill.entry()["frontmatter"]
    assert front_matter(text)["name"] == "triage-issues"
    assert front_matter(text)["description"].startswith("Label every open issue of a repo and report.")
    # Inputs with their types and constraints; the secret is named with its source, never with a value.
    assert "- `repo` (string; required; matching the regular expression `^[^/]+/[^/]+$`): owner/name" in text
    assert "- `limit` (integer; optional, default 10; at least 1; at most 100)" in text
    assert '- `mode` (string; optional, default "fast"; one of "fast", "careful")' in text
    assert "- `token` (string; read from env:GITHUB_TOKEN unless given; secret: never type it" in text
    # The servers it needs, without their environment.
    assert "- `github`: the stdio server `npx -y @example/github-mcp`" in text
    assert "${env:GITHUB_TOKEN}" not in text
    # How to run it: the reel__ tool and the command line (secrets from --secret, never -i).
    assert 'call the tool `reel__Triage_Issues` with arguments `{"repo": "..."}`' in text
    assert "`toolreel run Triage_Issues -i repo=...`" in text
    assert "--secret token=" not in text.replace("--secret NAME=", "")
    assert "`label_each` calls `github__add_label`, once per item of `@list_issues.items`." in text


def test_every_file_is_listed_with_the_digest_and_size_of_its_bytes() -> None:
    skill = template_skill(load_template_text(TRIAGE))
    entry = skill.entry()
    assert [r["uri"] for r in entry["resources"]] == [
        "skill://toolreel/triage-issues/SKILL.md",
        "skill://toolreel/triage-issues/template.yaml",
    ]
    for listed, file in zip(entry["resources"], skill.files, strict=True):
        assert listed["digest"] == digest(file.content) and listed["size"] == len(file.content)
    # The template file reads back as the same template.
    assert load_template_text(skill.files[1].content.decode()) == load_template_text(TRIAGE)


def test_skill_names_follow_the_naming_rules_and_stay_unique_in_one_listing() -> None:
    assert skill_name("Deploy__Prod-") == "deploy-prod"
    assert skill_name("a_b-_c") == "a-b-c"
    twins = [
        load_template_text(TRIAGE),
        load_template_text(TRIAGE.replace("name: Triage_Issues", "name: triage-issues")),
    ]
    names = [skill.name for skill in served_skills(twins)]
    assert names[0] == "triage-issues" and names[1].startswith("triage-issues-") and len(set(names)) == 2
    assert all(SKILL_NAME.match(name) for name in names)
    assert [s.name for s in served_skills(list(reversed(twins)))] == names  # stable whatever the store's order


def test_a_skill_is_found_by_its_uri_or_by_its_template_name_in_place_of_the_skill_name() -> None:
    twins = served_skills(
        [
            load_template_text(TRIAGE),
            load_template_text(TRIAGE.replace("name: Triage_Issues", "name: triage-issues")),
        ]
    )
    first, second = twins
    assert first.uri == "skill://toolreel/triage-issues/SKILL.md" and first.template == "Triage_Issues"
    spelled = find_skill(twins, "skill://toolreel/Triage_Issues/template.yaml")
    assert spelled is not None and spelled[0] is first and spelled[1].path == "template.yaml"
    # a served URI always wins over a template's name: `triage-issues` is the first twin's skill name
    found = find_skill(twins, "skill://toolreel/triage-issues/SKILL.md")
    assert found is not None and found[0] is first
    found = find_skill(twins, second.uri)
    assert found is not None and found[0] is second and second.template == "triage-issues"
    assert find_skill(twins, "skill://toolreel/Nothing/SKILL.md") is None
    read = read_skill_file(twins, "skill://toolreel/Triage_Issues/SKILL.md")
    assert read["contents"][0] == {
        "uri": "skill://toolreel/Triage_Issues/SKILL.md",
        "mimeType": "text/markdown",
        "text": first.files[0].content.decode(),
    }


# --- templates export --as skill ----------------------------------------------------------------------------------


def toolreel(*args: str, db: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        launch_command([PYTHON, "-m", "toolreel", *args]),
        capture_output=True,
        text=True,
        env=gateway_env(db),
        cwd=REPO,
        timeout=120,
    )


@pytest.mark.slow
def test_export_as_skill_writes_the_served_skill_as_files(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'store.db'}"
    source = tmp_path / "triage.yaml"
    source.write_text(TRIAGE, encoding="utf-8")
    imported = toolreel("templates", "import", str(source), db=db)
    assert imported.returncode == 0, imported.stderr
    done = toolreel("templates", "export", "Triage_Issues", "--as", "skill", str(tmp_path / "skills"), db=db)
    assert done.returncode == 0, done.stderr
    folder = tmp_path / "skills" / "triage-issues"
    assert str(folder) in done.stderr
    served = template_skill(dataclasses.replace(load_template_text(TRIAGE), version=1))
    assert sorted(p.name for p in folder.iterdir()) == ["SKILL.md", "template.yaml"]
    for file in served.files:
        assert (folder / file.path).read_bytes() == file.content
    assert load_template_file(folder / "template.yaml").steps == load_template_text(TRIAGE).steps

    unknown = toolreel("templates", "export", "Triage_Issues", "--as", "zip", str(tmp_path / "x"), db=db)
    assert unknown.returncode == 2 and "--as skill" in unknown.stderr and not (tmp_path / "x").exists()
    missing = toolreel("templates", "export", "nope", "--as", "skill", str(tmp_path / "y"), db=db)
    assert missing.returncode == 1 and "nope" in missing.stderr and not (tmp_path / "y").exists()


# --- the gateway serves the skills --------------------------------------------------------------------------------


async def skills_request(connected: Connected, method: str, params: dict[str, Any]) -> dict[str, Any]:
    request = types.Request[dict[str, Any], str](method=method, params=params)
    # The SDK bounds the result type by BaseModel, yet send_request validates any TypeAdapter it is given.
    adapter = TypeAdapter(dict[str, Any])
    result: dict[str, Any] = await connected.client.session.send_request(request, adapter)  # type: ignore[type-var]
    return result


def store_with(tmp_path: Path, *definitions: dict[str, Any]) -> str:
    db = f"sqlite:///{tmp_path / 'store.db'}"
    store = open_store(db)
    try:
        for definition in definitions:
            store.save_template(TemplateDraft(str(definition["name"]), definition, None))
    finally:
        store.close()
    return db


async def test_a_first_skills_list_waits_for_the_store_to_list_the_templates(tmp_path: Path) -> None:
    """A client that asks at once, while the store is still opening (held locked here), is given the
    skills once the templates are read, not an empty listing."""
    db = store_with(tmp_path, ECHO)
    holder = sqlite3.connect(tmp_path / "store.db", isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        async with gateway_in_process({}, db=db) as host, anyio.create_task_group() as tg:
            listed: dict[str, Any] = {}
            answered = anyio.Event()

            async def ask() -> None:
                listed.update(await skills_request(host, "skills/list", {}))
                answered.set()

            tg.start_soon(ask)
            with anyio.move_on_after(1.0):  # an answer given while the store is locked must have the skill too
                await answered.wait()
            holder.rollback()
            with anyio.fail_after(60):
                await answered.wait()
            assert [skill["frontmatter"]["name"] for skill in listed["skills"]] == ["shout"]
    finally:
        holder.close()


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_a_host_lists_reads_verifies_and_runs_a_template_skill(tmp_path: Path, mode: str) -> None:
    db = store_with(tmp_path, ECHO)
    config = tmp_path / "client.json"
    config.write_text(json.dumps({"mcpServers": {"feat": fixture_entry("features")}}), encoding="utf-8")
    async with http_gateway(["--config", str(config)], gateway_env(db)) as gateway, gateway.connect(mode=mode) as host:
        if host.modern:  # capability extensions exist from 2026-07-28; older clients call the methods all the same
            extensions = host.client.server_capabilities.extensions or {}
            assert extensions.get("io.modelcontextprotocol/skills") == {}
        listed = await skills_request(host, "skills/list", {})
        [entry] = [s for s in listed["skills"] if s["frontmatter"]["name"] == "shout"]
        assert entry["uri"] == "skill://toolreel/shout/SKILL.md"
        # A host verifies each file against the listing before using it.
        for file in entry["resources"]:
            read = await host.client.read_resource(file["uri"])
            data = read.contents[0].text.encode()  # type: ignore[union-attr]
            assert digest(data) == file["digest"] and len(data) == file["size"], file["uri"]
        skill_md = (await host.client.read_resource(entry["uri"])).contents[0].text  # type: ignore[union-attr]
        assert front_matter(skill_md) == entry["frontmatter"]
        resources = {r.uri: r for r in (await host.client.list_resources()).resources}
        assert resources[entry["uri"]].mime_type == "text/markdown"
        assert resources[entry["uri"]].description == entry["frontmatter"]["description"]
        assert (await skills_request(host, "skills/get", {"uri": entry["uri"]}))["skill"] == entry
        with pytest.raises(MCPError) as unknown:
            await skills_request(host, "skills/get", {"uri": "skill://toolreel/nothing/SKILL.md"})
        assert unknown.value.error.code == types.INVALID_PARAMS

        # The skill's instructions say which tool runs it and with what: follow them.
        call_line = re.search(r"call the tool `(reel__\w+)` with arguments `(\{.*?\})`", skill_md)
        assert call_line is not None, skill_md
        arguments = {key: "hello skills" for key in json.loads(call_line.group(2))}
        ran = await host.client.call_tool(call_line.group(1), arguments)
        assert not ran.is_error and "hello skills" in text_of(ran), text_of(ran)

        # A new version of the template is the skill served from then on.
        db_store = open_store(db)
        try:
            db_store.save_template(TemplateDraft("shout", {**ECHO, "description": "Echo, louder."}, None))
        finally:
            db_store.close()

        async def updated() -> bool:
            found = await skills_request(host, "skills/get", {"uri": entry["uri"]})
            return bool(found["skill"]["frontmatter"]["description"].startswith("Echo, louder."))

        await wait_until(updated, 30, "the skill of the template's new version")
        if not host.modern:  # a handshake-era client hears of it; a stateless one listens for it instead
            await host.probe.wait_for(
                lambda: bool(host.probe.of_type(types.ResourceListChangedNotification)), 30, "resources list_changed"
            )
        with anyio.fail_after(30):
            fresh = (await host.client.read_resource(entry["uri"])).contents[0].text  # type: ignore[union-attr]
        assert "Echo, louder." in fresh and "(version 2)" in fresh


@pytest.mark.slow
@pytest.mark.npm
async def test_conformance_skills_scenarios_pass_against_the_gateway(tmp_path: Path) -> None:
    reason = conformance.missing_tools((conformance.SPEC_2026,))
    if reason is not None:
        pytest.skip(reason)
    db = store_with(tmp_path, ECHO)
    config = tmp_path / "client.json"
    config.write_text(json.dumps({"mcpServers": {"feat": fixture_entry("features")}}), encoding="utf-8")
    async with http_gateway(["--config", str(config)], gateway_env(db)) as gateway:
        bad: dict[str, str] = {}
        passed: set[str] = set()
        for scenario in ("sep-2640-skills-enumeration", "sep-2640-skills-manifest"):
            run = await conformance.run_suite(
                gateway.url, conformance.SPEC_2026, tmp_path / scenario, scenario=scenario, timeout=120, extension=True
            )
            assert run.checks, run.console[-2000:]
            passed.update(key for key, status in run.statuses.items() if status == "SUCCESS")
            for status in ("FAILURE", "WARNING"):
                bad.update(run.with_status(status))
            # Every check applies: none is skipped for want of a declaration or a skill.
            bad.update(run.with_status("SKIPPED"))
    assert not bad, bad
    for check in (
        "sep-2640-skills-enumeration/sep-2640-resources-digest-format",
        "sep-2640-skills-enumeration/sep-2640-entry-frontmatter-identical",
        "sep-2640-skills-enumeration/sep-2640-skills-get-unknown-uri-invalid-params",
        "sep-2640-skills-enumeration/sep-2640-skills-list-cache-attributes",
        "sep-2640-skills-manifest/sep-2640-final-segment-equals-name",
        "sep-2640-skills-manifest/sep-2640-skillmd-mimetype",
    ):
        assert check in passed, sorted(passed)


# --- templates export --as python ---------------------------------------------------------------------------------

SUMS: dict[str, Any] = {
    "name": "sums",
    "description": "Add, add each, say the total.",
    "inputs": {
        "a": {"type": "number"},
        "bs": {"type": "array", "default": [1, 2]},
        "word": {"type": "string", "default": "hi", "enum": ["hi", "ho"]},
    },
    "servers": {"feat": fixture_entry("features")},
    "steps": [
        {"name": "add_1", "tool": "feat__add", "input": {"a": "@input.a", "b": 10}},
        {"name": "add_each", "for_each": "@input.bs", "tool": "feat__add", "input": {"a": "@add_1.sum", "b": "@item"}},
        {"name": "echo_1", "tool": "feat__echo", "input": {"text": "total {{@add_1.sum}} for {{@input.word}}"}},
        {"name": "big", "when": {"ref": "@add_1.sum", "gt": 100}, "tool": "feat__echo", "input": {"text": "big"}},
    ],
    "output": {"first": "@add_1.sum", "each": "@add_each", "said": "@echo_1", "big": "@big"},
}


@pytest.mark.slow
@pytest.mark.parametrize("a", ["5", "95"])
def test_exported_program_gives_what_toolreel_run_gives_and_passes_ruff_and_mypy(tmp_path: Path, a: str) -> None:
    db = store_with(tmp_path, SUMS)
    program = tmp_path / "sums.py"
    done = toolreel("templates", "export", "sums", "--as", "python", str(program), db=db)
    assert done.returncode == 0, done.stderr
    ran = toolreel("run", "sums", "-i", f"a={a}", "-i", "word=ho", "--json", db=db)
    assert ran.returncode == 0, ran.stderr
    expected = json.loads(ran.stdout)["output"]
    exported = subprocess.run(
        [PYTHON, str(program), "--a", a, "--word", "ho"], capture_output=True, text=True, cwd=REPO, timeout=120
    )
    assert exported.returncode == 0, exported.stderr
    assert json.loads(exported.stdout) == expected
    assert expected["big"] == ("big" if a == "95" else None)
    bin_dir = Path(PYTHON).parent
    lint = subprocess.run([bin_dir / "ruff", "check", "--isolated", str(program)], capture_output=True, text=True)
    assert lint.returncode == 0, lint.stdout + program.read_text()
    typed = subprocess.run(
        [bin_dir / "mypy", "--strict", "--no-incremental", str(program)], capture_output=True, text=True, cwd=tmp_path
    )
    assert typed.returncode == 0, typed.stdout + program.read_text()


def test_a_step_the_python_export_cannot_write_is_named() -> None:
    from toolreel.core.errors import TemplateError
    from toolreel.templatizer.to_python import python_program

    spread = {
        **SUMS,
        "steps": [*SUMS["steps"], {"name": "ids", "tool": "feat__echo", "input": {"text": "@add_each[*]"}}],
    }
    with pytest.raises(TemplateError, match=r"the ref '@add_each\[\*\]' uses JSONPath"):
        python_program(load_template_text(json.dumps(spread)))
    child = {**SUMS, "steps": [*SUMS["steps"], {"name": "again", "template": "other", "input": {"a": 1}}]}
    with pytest.raises(TemplateError, match="step 'again' runs template 'other', which is not at hand"):
        python_program(load_template_text(json.dumps(child)))
    parent = load_template_text(json.dumps(child))
    loop = {"name": "other", "steps": [{"name": "back", "template": "sums", "input": {"a": 1}}]}
    other = load_template_text(json.dumps(loop))
    with pytest.raises(TemplateError, match="in a circle: sums -> other -> sums"):
        python_program(parent, lambda name, version: other if name == "other" else parent)


DOUBLER: dict[str, Any] = {
    "name": "doubler",
    "inputs": {"n": {"type": "number"}, "plus": {"type": "number", "default": 0}},
    "servers": {"feat": fixture_entry("features")},
    "steps": [
        {"name": "add", "tool": "feat__add", "input": {"a": "@input.n", "b": "@input.n"}},
        {"name": "more", "tool": "feat__add", "input": {"a": "@add.sum", "b": "@input.plus"}},
    ],
    "output": "@more.sum",
}
FAMILY: dict[str, Any] = {
    "name": "family",
    "inputs": {"a": {"type": "number"}},
    "servers": {"feat": fixture_entry("features")},
    "steps": [
        {"name": "base", "tool": "feat__add", "input": {"a": "@input.a", "b": 1}},
        {
            "name": "shape",
            "code": "export default function(input) {\n"
            "  return {n: input.x * 3, words: ['a', 'b'].map(w => w + input.x)};\n"
            "}",
            "input": {"x": "@base.sum"},
        },
        {"name": "ok", "approve": "Double {{@shape.n}}?"},
        {"name": "twice", "template": "doubler", "input": {"n": "@shape.n"}, "depends_on": ["ok"]},
        {
            "name": "each",
            "for_each": "@shape.words",
            "template": "doubler",
            "input": {"n": "@index", "plus": 2},
            "depends_on": ["ok"],
        },
    ],
    "output": {"base": "@base.sum", "shape": "@shape", "ok": "@ok", "twice": "@twice", "each": "@each"},
}


SCRIPTED: dict[str, Any] = {
    "name": "scripted",
    "inputs": {"x": {"type": "number"}},
    "servers": {"feat": fixture_entry("features")},
    "steps": [
        {
            "name": "script",
            "script": {
                "code": "const a = await tools.feat.add({a: input.x, b: 2});\n"
                "let refused = '';\n"
                "try { await tools.feat.fail({message: 'no way'}); }\n"
                "catch (e) { refused = e.name + ': ' + e.message; }\n"
                "const said = await callTool('feat__echo', {text: 'sum ' + a.sum});\n"
                "return {sum: a.sum, said, refused};"
            },
            "input": {"x": "@input.x"},
        }
    ],
    "output": "@script",
}


@pytest.mark.slow
def test_script_steps_export_and_give_what_toolreel_run_gives(tmp_path: Path) -> None:
    db = store_with(tmp_path, SCRIPTED)
    program = tmp_path / "scripted.py"
    done = toolreel("templates", "export", "scripted", "--as", "python", str(program), db=db)
    assert done.returncode == 0, done.stderr
    ran = toolreel("run", "scripted", "-i", "x=5", "--json", db=db)
    assert ran.returncode == 0, ran.stderr
    expected = json.loads(ran.stdout)["output"]
    assert expected["sum"] == 7 and expected["said"] == "sum 7" and "no way" in expected["refused"], expected
    command = [PYTHON, str(program), "--x", "5"]
    exported = subprocess.run(command, capture_output=True, text=True, cwd=REPO, timeout=120)
    assert exported.returncode == 0, exported.stderr
    assert json.loads(exported.stdout) == expected


@pytest.mark.slow
def test_code_approve_and_child_template_steps_export_and_give_what_toolreel_run_gives(tmp_path: Path) -> None:
    db = store_with(tmp_path, DOUBLER, FAMILY)
    program = tmp_path / "family.py"
    done = toolreel("templates", "export", "family", "--as", "python", str(program), db=db)
    assert done.returncode == 0, done.stderr
    paused = toolreel("run", "family", "-i", "a=4", "--json", db=db)
    assert paused.returncode == 3, paused.stderr
    execution_id = json.loads(paused.stdout)["execution_id"]
    resumed = toolreel("executions", "resume", execution_id, "--response", "yes", "--json", db=db)
    assert resumed.returncode == 0, resumed.stderr
    expected = json.loads(resumed.stdout)["output"]
    assert expected["twice"] == 30 and expected["each"] == [2, 4] and expected["shape"]["words"] == ["a5", "b5"]

    def exported(*args: str, answer: str = "") -> subprocess.CompletedProcess[str]:
        command = [PYTHON, str(program), "--a", "4", *args]
        return subprocess.run(command, input=answer, capture_output=True, text=True, cwd=REPO, timeout=120)

    said_yes = exported("--yes")
    assert said_yes.returncode == 0, said_yes.stderr
    assert json.loads(said_yes.stdout) == expected
    asked = exported(answer="yes\n")
    assert asked.returncode == 0 and "Double 15? [yes/no]" in asked.stderr and json.loads(asked.stdout) == expected
    refused = exported(answer="no\n")
    assert refused.returncode == 1 and "approval refused: 'Double 15?'" in refused.stderr and not refused.stdout
    bin_dir = Path(PYTHON).parent
    lint = subprocess.run([bin_dir / "ruff", "check", "--isolated", str(program)], capture_output=True, text=True)
    assert lint.returncode == 0, lint.stdout + program.read_text()
    typed = subprocess.run(
        [bin_dir / "mypy", "--strict", "--no-incremental", str(program)], capture_output=True, text=True, cwd=tmp_path
    )
    assert typed.returncode == 0, typed.stdout + program.read_text()


def test_secret_inputs_of_an_exported_program_are_read_from_their_source_never_from_options() -> None:
    from toolreel.templatizer.to_python import python_program

    inputs = {**SUMS["inputs"], "tok": {"type": "string", "secret": True}, "key": {"secret": {"env": "API_KEY"}}}
    source = python_program(load_template_text(json.dumps({**SUMS, "inputs": inputs})))
    assert '"--tok"' not in source and '"--key"' not in source and '"--a"' in source
    assert "inputs['tok'] = _environ('TOK')" in source and "inputs['key'] = _environ('API_KEY')" in source
