"""Membership, thirteenth pass: a loop that handled the elements whose field holds a value another read listed (the
alerts of the devices of a group) walks the elements among what that read lists on each run, not a name prefix the
handled ones share by chance."""

from __future__ import annotations

from typing import Any

from tests.recorded import Session, reproduces, saved
from toolreel.core.sandbox import run_code


def _alert(alert: int, device: int, host: str) -> dict[str, Any]:
    return {"id": alert, "device_id": device, "hostname": host, "state": 1}


def test_the_elements_among_what_another_read_lists_are_walked() -> None:
    s = Session()
    s.call("list_device_groups", {}, {"groups": [{"id": 3, "name": "Core switches lab"}, {"id": 5, "name": "Core"}]})
    s.call(
        "get_devices_by_group", {"name": "Core"}, {"devices": [{"device_id": 12}, {"device_id": 14}, {"device_id": 19}]}
    )
    alerts = [_alert(881, 14, "core-sw-02"), _alert(883, 31, "acc-sw-11"), _alert(890, 19, "core-sw-03")]
    s.call("list_alerts", {"state": 1}, {"alerts": [*alerts, _alert(891, 40, "fw-01")]})
    for alert in (881, 890):
        s.call("ack_alert", {"alert_id": alert, "note": "RMA in progress"}, {"status": "ok"})
    result = saved(s)
    reproduces(result, s.steps)
    select = next(step for step in result.template.steps if step.name.startswith("select_"))
    assert select.input["where"] == [
        {"key": "device_id", "op": "among", "value": "@get_devices_by_group_1.devices[*].device_id"}
    ]
    assert not [item for item in result.likely_inputs if "prefix" in item.name]  # not `core-sw-`
    assert select.code is not None  # the next run: another group, other devices
    kept = run_code(select.code, {"items": alerts, "where": [{"key": "device_id", "op": "among", "value": [31]}]})
    assert kept == [alerts[1]]
