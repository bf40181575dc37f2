"""Upstream `skill://` and `ui://` resources through the aggregate: namespaced by server with their scheme kept,
`_meta.ui.resourceUri` on tools rewritten to match, and two servers with the same URIs kept apart; the servers'
skills (SEP-2640 `skills/list`, `skills/get`) listed beside the gateway's own under the same namespaced URIs."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest
from mcp.shared.exceptions import MCPError

from fixtures.apps import APP_URI, SKILL_URI
from fixtures.servers import http_fixture
from tests import conformance
from tests.gateway.test_skills import skills_request
from tests.gw import fixture_entry, wait_until
from tests.inproc import gateway_in_process
from toolreel.upstreams.uris import inward, outward, outward_tool, template_matches

pytestmark = pytest.mark.anyio


def test_namespacing_keeps_the_scheme_and_goes_back() -> None:
    assert outward("left", APP_URI) == "ui://left.widget/app.html"
    assert outward("left", SKILL_URI) == "skill://left.demo/SKILL.md"
    assert inward("ui://left.widget/app.html") == ("left", APP_URI)
    assert outward("left", "file:///etc/hosts") == "file:///etc/hosts"  # other schemes are the servers' own
    assert inward("file:///etc/hosts") is None
    assert inward("ui://nodot/app.html") is None
    tool: dict[str, Any] = {"name": "show", "_meta": {"ui": {"resourceUri": APP_URI, "csp": {}}}}
    assert outward_tool("left", tool)["_meta"] == {"ui": {"resourceUri": "ui://left.widget/app.html", "csp": {}}}
    assert tool["_meta"]["ui"]["resourceUri"] == APP_URI  # not changed in place


def test_a_resource_template_names_uris_one_segment_per_variable() -> None:
    assert template_matches("repo://{owner}/{name}/readme", "repo://acme/site/readme")
    assert not template_matches("repo://{owner}/{name}/readme", "repo://acme/site/docs/readme")
    assert not template_matches("repo://{owner}/readme", "repo://a.b/c/readme")
    assert template_matches("data://rows?n=1", "data://rows?n=1")  # no variable: the URI itself, read literally
    assert not template_matches("data://rows?n=1", "data://rowsXn=1")
    assert not template_matches("", "repo://acme")


def _text(result: types.ReadResourceResult) -> str:
    [content] = result.contents
    assert isinstance(content, types.TextResourceContents)
    return content.text


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_two_servers_with_the_same_app_and_skill_uris_do_not_collide(mode: str) -> None:
    servers = {name: fixture_entry("apps", env={"FIXTURE_APP_LABEL": name}) for name in ("left", "right")}
    async with gateway_in_process(servers, mode=mode) as gw:
        listed = {str(r.uri) for r in (await gw.client.list_resources()).resources}
        expected = {outward(server, uri) for server in servers for uri in (APP_URI, SKILL_URI)}
        assert expected <= listed
        for server in servers:
            app = await gw.client.read_resource(outward(server, APP_URI))
            assert _text(app) == f"<html><body>app of {server}</body></html>"
            assert str(app.contents[0].uri) == outward(server, APP_URI)
            skill = await gw.client.read_resource(outward(server, SKILL_URI))
            assert f"the skill of {server}" in _text(skill)
        tools = {t.name: t for t in (await gw.client.list_tools()).tools}
        for server in servers:
            meta = tools[f"{server}__show"].meta or {}
            assert meta["ui"]["resourceUri"] == outward(server, APP_URI)
            assert meta["ui/resourceUri"] == outward(server, APP_URI)


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_two_servers_skills_are_listed_beside_the_gateways_own_and_do_not_collide(mode: str) -> None:
    servers = {name: fixture_entry("apps", env={"FIXTURE_APP_LABEL": name}) for name in ("left", "right")}
    async with gateway_in_process(servers, mode=mode) as gw:
        entries: dict[str, Any] = {}

        async def both_listed() -> bool:  # a server slow to start on a busy machine is listed when it is up
            entries.update({entry["uri"]: entry for entry in (await skills_request(gw, "skills/list", {}))["skills"]})
            return all(outward(server, SKILL_URI) in entries for server in servers)

        await wait_until(both_listed, 60, "both servers' skills")
        for server in servers:
            entry = entries[outward(server, SKILL_URI)]
            assert entry["frontmatter"] == {"name": "demo", "description": f"the skill of {server}"}
            # A host verifies each listed file against what a read of its listed URI gives.
            [file] = entry["resources"]
            assert file["uri"] == outward(server, SKILL_URI)
            data = _text(await gw.client.read_resource(file["uri"])).encode()
            assert file["digest"] == "sha256:" + hashlib.sha256(data).hexdigest() and file["size"] == len(data)
            assert (await skills_request(gw, "skills/get", {"uri": entry["uri"]}))["skill"] == entry
        with pytest.raises(MCPError) as unknown:
            await skills_request(gw, "skills/get", {"uri": outward("left", "skill://nothing/SKILL.md")})
        assert unknown.value.error.code == types.INVALID_PARAMS


SKILL_SCENARIOS = ("sep-2640-skills-enumeration", "sep-2640-skills-manifest", "sep-2640-skills-directory")


@pytest.mark.slow
@pytest.mark.npm
async def test_the_skills_scenarios_score_through_the_gateway_what_they_score_directly(tmp_path: Path) -> None:
    """The conformance suite's `sep-2640-*` scenarios against `fixtures/apps.py` directly, then through `serve
    --http` wrapping it and in aggregate mode (beside a second server), check by check."""
    if (reason := conformance.missing_tools((conformance.SPEC_2026,))) is not None:
        pytest.skip(reason)

    async def scores(url: str, out: Path) -> dict[str, str]:
        found: dict[str, str] = {}
        for scenario in SKILL_SCENARIOS:
            run = await conformance.run_suite(
                url, conformance.SPEC_2026, out / scenario, scenario=scenario, timeout=120, extension=True
            )
            found.update(run.statuses)
        return found

    async with http_fixture("apps") as url:
        direct = await scores(url, tmp_path / "direct")
    assert direct and {key: s for key, s in direct.items() if s == "FAILURE"} == {}
    assert "sep-2640-skills-enumeration/sep-2640-skills-list-implemented" in direct
    for mode in ("wrap", "aggregate"):
        where = tmp_path / mode
        where.mkdir()
        async with conformance.toolreel_proxy("apps", aggregate_in=where if mode == "aggregate" else None) as url:
            proxied = await scores(url, where / "runs")
        assert conformance.compare(direct, proxied) == [], mode
        assert proxied == direct, mode
