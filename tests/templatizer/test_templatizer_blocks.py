"""Text blocks, thirteenth pass: a tool that answers one text block per item (`Agent ID: 003` / `Status: ...`
lines, after a one-line heading) is read as rows, one per block, so a loop walks the items, not their positions."""

from __future__ import annotations

from tests.recorded import Session, reproduces, saved
from toolreel.core.model import JSON


def _agent(agent: str, name: str, status: str) -> dict[str, str]:
    return {"type": "text", "text": f"Agent ID: {agent}\nName: {name}\nStatus: {status}\nIP Address: 10.1.0.11"}


def test_one_text_block_per_item_is_read_as_rows_and_walked() -> None:
    blocks: JSON = [
        {"type": "text", "text": "Found 4 agents matching q=group=web-dmz:"},
        _agent("003", "web-dmz-01", "ACTIVE"),
        _agent("007", "web-dmz-02", "DISCONNECTED"),
        _agent("012", "web-dmz-03", "NEVER_CONNECTED"),
        _agent("015", "web-dmz-old", "DISCONNECTED"),
    ]
    s = Session()
    s.call("get_agents", {"q": "group=web-dmz", "limit": 100}, blocks)
    for agent in ("007", "015"):
        s.call("remove_agent_from_group", {"agent_id": agent, "group_id": "web-dmz"}, "removed")
    result = saved(s)
    reproduces(result, s.steps)
    rows = result.template.step("get_agents_1_rows")
    assert rows.input["text"] == "@get_agents_1"  # every block, wherever the items sit on the next run
    loop = next(step for step in result.template.steps if step.for_each is not None)
    assert loop.input["agent_id"] == '@item["Agent ID"]'
    assert loop.for_each == '@get_agents_1_rows[?(@.Status == "DISCONNECTED")]'
