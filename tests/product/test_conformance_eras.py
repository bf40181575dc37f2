"""Through the gateway, the conformance suite scores exactly what it scores directly, check by check.

For both spec versions, on two servers: the conformance fixture, and `fixtures.asking`, a server written with
the SDK's high-level API whose sampling and elicitation tools *push* their questions and, when one cannot be
sent, answer with a normal text result in their own words. A handshake-era (2025-11-25) client that declared
sampling and elicitation gets those questions through the gateway only if its calls take the server's
handshake-era connection by design: nothing in that server's answer says a question was lost. Each gateway
serves the server wrapped (`serve -- ...`) and in aggregate mode (`serve --config`, with a second server).
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Final

import pytest

from fixtures.servers import http_fixture
from tests import conformance
from tests.conformance import SPEC_2025, SPEC_2026, SPEC_VERSIONS, SuiteRun

pytestmark = [
    pytest.mark.npm,
    pytest.mark.anyio,
    pytest.mark.slow,
    pytest.mark.xdist_group("conformance_eras"),
    pytest.mark.timeout(600),  # the first test's setup runs four whole suites (`direct_runs`), on a busy machine
]

FIXTURES: Final = ("asking", "conformance_server")
MODES: Final = ("wrap", "aggregate")
# The scenarios in which a server asks its client something, by era: through the gateway they must run.
ASKING_SCENARIOS: Final = {
    SPEC_2025: (
        "tools-call-sampling",
        "tools-call-elicitation",
        "elicitation-sep1034-defaults",
        "elicitation-sep1330-enums",
    ),
    SPEC_2026: (
        "input-required-result-basic-elicitation",
        "input-required-result-basic-sampling",
        "input-required-result-multi-round",
    ),
}


@pytest.fixture(scope="module")
def suite_installed() -> Iterator[None]:
    reason = conformance.missing_tools()
    if reason is not None:
        if os.environ.get("TOOLREEL_REQUIRE_NPM") == "1":
            pytest.fail(f"TOOLREEL_REQUIRE_NPM=1 but {reason}")
        pytest.skip(reason)
    yield


@pytest.fixture(scope="module")
async def direct_runs(
    suite_installed: None, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[dict[tuple[str, str], SuiteRun]]:
    """Every fixture's suites, both spec versions, against the fixture itself over HTTP."""
    out = tmp_path_factory.mktemp("conformance-direct")
    runs: dict[tuple[str, str], SuiteRun] = {}
    for fixture in FIXTURES:
        async with http_fixture(fixture) as url:
            for version in SPEC_VERSIONS:
                runs[fixture, version] = await conformance.run_suite(url, version, out / fixture / version)
    yield runs


@pytest.mark.parametrize("spec_version", SPEC_VERSIONS)
async def test_the_asking_server_passes_every_check_directly(
    direct_runs: dict[tuple[str, str], SuiteRun], spec_version: str
) -> None:
    run = direct_runs["asking", spec_version]
    assert run.with_status("FAILURE") == {}
    passed, failed = run.console_totals()
    assert failed == 0 and passed > 40, run.console[-3000:]
    assert set(ASKING_SCENARIOS[spec_version]) <= {check.scenario for check in run.checks}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("spec_version", SPEC_VERSIONS)
@pytest.mark.parametrize("fixture", FIXTURES)
async def test_the_gateway_scores_what_the_server_scores(
    direct_runs: dict[tuple[str, str], SuiteRun], fixture: str, spec_version: str, mode: str, tmp_path: Path
) -> None:
    direct = direct_runs[fixture, spec_version]
    aggregate_in = tmp_path if mode == "aggregate" else None
    async with conformance.toolreel_proxy(fixture, aggregate_in=aggregate_in) as url:
        proxied = await conformance.run_suite(url, spec_version, tmp_path / spec_version)
    assert conformance.compare(direct.statuses, proxied.statuses) == []
    assert proxied.statuses == direct.statuses
    asked = {key for key in proxied.statuses if key.split("/")[0] in ASKING_SCENARIOS[spec_version]}
    assert asked, "no check of a scenario that asks the client ran through the gateway"
    if fixture == "asking":  # it passes every check directly: so, through the gateway, do the asking ones
        assert {proxied.statuses[key] for key in asked} == {"SUCCESS"}
