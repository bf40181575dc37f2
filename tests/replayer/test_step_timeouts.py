"""A template step's timeout is the step's: its message says to raise it in the template (not the server's
timeout in the config), and a step kind that cannot honour a timeout (approve, return) refuses one."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from tests.callers import harness, template
from toolreel.core.errors import TemplateError
from toolreel.core.model import ExecutionStatus
from toolreel.core.template_io import parse_template

pytestmark = pytest.mark.anyio


@pytest.mark.slow
async def test_a_step_timeout_message_points_at_the_step(tmp_path: Path) -> None:
    t = template(
        {
            "name": "slowly",
            "steps": [{"name": "wait", "tool": "features__slow", "input": {"seconds": 20}, "timeout": "300ms"}],
        }
    )
    async with harness(tmp_path) as h:
        with anyio.fail_after(10):
            execution = await h.engine.run_template(t, {})
        assert execution.status == ExecutionStatus.FAILED
        error = h.store.get_steps(execution.id)[0].error or ""
        assert "within 0.3 s" in error and "raise the 'timeout' of step 'wait' in the template" in error, error
        assert "server's 'timeout'" not in error, error


@pytest.mark.parametrize(
    "step",
    [
        {"name": "ok", "approve": "Go on?", "timeout": "10s"},
        {"name": "out", "return": {"a": 1}, "timeout": "10s"},
    ],
)
def test_a_timeout_on_a_step_that_cannot_honour_it_is_refused(step: dict[str, object]) -> None:
    with pytest.raises(
        TemplateError, match=r"step has no timeout \(tool, template, code and script steps do"
    ) as caught:
        parse_template({"name": "t", "steps": [step]})
    assert caught.value.field == "timeout"
