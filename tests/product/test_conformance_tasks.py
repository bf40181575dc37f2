"""The Tasks extension (SEP-2663) through the gateway scores what it scores directly, check by check.

`fixtures.tasks` implements the extension on the SDK's low-level server; the conformance suite's `tasks-*`
scenarios run against it directly, then through `toolreel serve --http` wrapping it and in aggregate mode (next
to a second server, so a task's handle must say which server it lives on). Every check that passes directly
passes through the gateway, and the ones that need a task to reach the client (created, polled, updated with
answers, cancelled) are among them.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Final

import anyio
import pytest

from fixtures.servers import http_fixture
from tests import conformance
from tests.conformance import SPEC_2026

pytestmark = [
    pytest.mark.npm,
    pytest.mark.anyio,
    pytest.mark.slow,
    pytest.mark.xdist_group("conformance-tasks"),
    pytest.mark.timeout(600),  # ten scenarios of the suite per gateway, on a busy machine
]

SCENARIOS: Final = (
    "tasks-lifecycle",
    "tasks-capability-negotiation",
    "tasks-wire-fields",
    "tasks-request-state-removal",
    "tasks-mrtr-input",
    "tasks-request-headers",
    "tasks-dispatch-and-envelope",
    "tasks-status-notifications",
    "tasks-required-task-error",
    "tasks-mrtr-composition",
)
PARALLEL_SCENARIOS: Final = 3
# Checks that only pass when a task made by the server reaches the client and is driven through the gateway.
THROUGH_A_TASK: Final = (
    "tasks-lifecycle/sep-2663-result-type-task-on-create",
    "tasks-lifecycle/sep-2663-tasks-get-status-completed",
    "tasks-lifecycle/sep-2663-cancel-ack-empty-result",
    "tasks-mrtr-input/tasks-mrtr-partial-fulfillment",
    "tasks-capability-negotiation/tasks-per-request-meta-opt-in",
    "tasks-capability-negotiation/sep-2663-tasks-methods-non-declaring",
    "tasks-request-headers/sep-2663-server-rejects-mismatched-mcp-name-on-tasks-get",
    "tasks-dispatch-and-envelope/sep-2663-tasks-get-invalid-task-id-32602",
    "tasks-mrtr-composition/sep-2663-mrtr-synchronous-before-task-creation",
)


@pytest.fixture(scope="module")
def suite_installed() -> Iterator[None]:
    reason = conformance.missing_tools((SPEC_2026,))
    if reason is not None:
        if os.environ.get("TOOLREEL_REQUIRE_NPM") == "1":
            pytest.fail(f"TOOLREEL_REQUIRE_NPM=1 but {reason}")
        pytest.skip(reason)
    yield


async def _run_all(url: str, out: Path) -> dict[str, str]:
    """Every scenario, a few at a time: they mostly wait on the fixture's slow tools, not on a core."""
    statuses: dict[str, str] = {}
    limiter = anyio.CapacityLimiter(PARALLEL_SCENARIOS)

    async def one(scenario: str) -> None:
        async with limiter:
            run = await conformance.run_suite(url, SPEC_2026, out / scenario, scenario=scenario, extension=True)
        statuses.update(run.statuses)

    async with anyio.create_task_group() as tg:
        for scenario in SCENARIOS:
            tg.start_soon(one, scenario)
    return statuses


@pytest.fixture(scope="module")
async def direct(suite_installed: None, tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[dict[str, str]]:
    async with http_fixture("tasks") as url:
        yield await _run_all(url, tmp_path_factory.mktemp("tasks-direct"))


async def test_the_fixture_passes_the_tasks_scenarios_directly(direct: dict[str, str]) -> None:
    failed = {key: status for key, status in direct.items() if status == "FAILURE"}
    assert failed == {}
    assert set(THROUGH_A_TASK) <= {key for key, status in direct.items() if status == "SUCCESS"}


@pytest.mark.parametrize("mode", ["wrap", "aggregate"])
async def test_tasks_through_the_gateway_score_what_they_score_directly(
    direct: dict[str, str], mode: str, tmp_path: Path
) -> None:
    aggregate_in = tmp_path if mode == "aggregate" else None
    async with conformance.toolreel_proxy("tasks", aggregate_in=aggregate_in) as url:
        proxied = await _run_all(url, tmp_path / "runs")
    assert conformance.compare(direct, proxied) == []
    assert proxied == direct
    assert {proxied[key] for key in THROUGH_A_TASK} == {"SUCCESS"}
