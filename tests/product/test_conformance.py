"""The conformance suite passes against the conformance fixture directly, for 2025-11-25 and 2026-07-28.

The direct run is the baseline the gateway is held to: `test_proxied_run_loses_no_check` runs the same suite
through `toolreel serve` and fails on any check that passes directly but not through the proxy.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Final

import pytest

from fixtures.servers import REPO_ROOT, http_fixture
from tests import conformance
from tests.conformance import SPEC_2025, SPEC_2026, SPEC_VERSIONS, SuiteRun

pytestmark = [pytest.mark.slow, pytest.mark.npm, pytest.mark.anyio, pytest.mark.xdist_group("conformance")]

# Enabling the proxied comparison is this one line: it runs as soon as the gateway's CLI exists.
GATEWAY_READY: Final = (REPO_ROOT / "gateway" / "cli.py").exists()

# How the suite reaches the gateway: its HTTP front, or its stdio front behind an HTTP one.
TRANSPORTS: Final = ("http", "stdio")
# Checks that do not pass when the suite talks to the fixture directly, and why. Empty: every check passes.
KNOWN_DIRECT_FAILURES: Final[dict[str, dict[str, str]]] = {SPEC_2025: {}, SPEC_2026: {}}
# Warnings (SHOULDs) seen directly, and why; informative, not asserted as failures.
KNOWN_DIRECT_WARNINGS: Final[dict[str, dict[str, str]]] = {
    SPEC_2025: {
        # Suite 0.1.x sends `MCP-Protocol-Version: 2025-03-26` on this probe; the SDK sends SSE priming
        # events and `retry` (SEP-1699) only to 2025-11-25 clients, so the probe sees neither.
        "server-sse-polling/server-sse-priming-event": "SDK primes SSE streams only for 2025-11-25 clients",
        "server-sse-polling/server-sse-retry-field": "SDK sends the retry field only for 2025-11-25 clients",
    },
    SPEC_2026: {},
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
) -> AsyncIterator[dict[str, SuiteRun]]:
    """Both spec versions' suites against one fixture process over HTTP (the suite tests HTTP servers only)."""
    out = tmp_path_factory.mktemp("conformance-direct")
    async with http_fixture("conformance_server") as url:
        yield {version: await conformance.run_suite(url, version, out / version) for version in SPEC_VERSIONS}


@pytest.mark.parametrize("spec_version", SPEC_VERSIONS)
async def test_direct_run_passes_every_check(direct_runs: dict[str, SuiteRun], spec_version: str) -> None:
    run = direct_runs[spec_version]
    failures = run.with_status("FAILURE")
    assert failures.keys() == KNOWN_DIRECT_FAILURES[spec_version].keys(), failures
    assert run.with_status("WARNING").keys() <= KNOWN_DIRECT_WARNINGS[spec_version].keys()
    passed, failed = run.console_totals()
    assert (passed, failed) == (sum(c.status == "SUCCESS" for c in run.checks), len(failures))
    assert passed > 40, f"suspiciously few checks ran:\n{run.console[-3000:]}"


async def test_compare_names_checks_the_proxy_breaks() -> None:
    direct = {"a/x": "SUCCESS", "a/y": "SUCCESS", "b/z": "FAILURE", "c/w": "SUCCESS"}
    proxied = {"a/x": "SUCCESS", "a/y": "FAILURE", "b/z": "FAILURE"}
    assert conformance.compare(direct, proxied) == ["a/y: FAILURE", "c/w: not reported"]


@pytest.mark.skipif(not GATEWAY_READY, reason="gateway not ready")
@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("spec_version", SPEC_VERSIONS)
async def test_proxied_run_loses_no_check(
    direct_runs: dict[str, SuiteRun], spec_version: str, transport: str, tmp_path: Path
) -> None:
    async with conformance.toolreel_proxy("conformance_server", transport=transport) as url:
        proxied = await conformance.run_suite(url, spec_version, tmp_path / spec_version)
    assert conformance.compare(direct_runs[spec_version].statuses, proxied.statuses) == []


@pytest.fixture(scope="module")
async def push_only_runs(
    suite_installed: None, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[dict[str, SuiteRun]]:
    """The suite against the push-only server directly: it asks only by pushing, so on 2026-07-28 the
    checks that need a question fail directly too (11), and a proxy must fail exactly those."""
    out = tmp_path_factory.mktemp("conformance-push-only")
    async with http_fixture("push_only") as url:
        yield {version: await conformance.run_suite(url, version, out / version) for version in SPEC_VERSIONS}


@pytest.mark.skipif(not GATEWAY_READY, reason="gateway not ready")
@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("spec_version", SPEC_VERSIONS)
async def test_a_push_only_server_scores_the_same_through_toolreel(
    push_only_runs: dict[str, SuiteRun], spec_version: str, transport: str, tmp_path: Path
) -> None:
    """Check for check: a 2025-11-25 client over HTTP gets the server's pushed questions (the gateway
    speaks the handshake era upstream for it), a 2026-07-28 client gets what it gets directly."""
    direct = push_only_runs[spec_version]
    assert direct.console_totals()[0] > 40, direct.console[-3000:]
    async with conformance.toolreel_proxy("push_only", transport=transport) as url:
        proxied = await conformance.run_suite(url, spec_version, tmp_path / spec_version)
    assert conformance.compare(direct.statuses, proxied.statuses) == []
    assert proxied.statuses == direct.statuses
