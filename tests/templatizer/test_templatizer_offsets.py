"""Offsets, thirteenth pass: a date-time that is a clock's reading moved by whole quarter hours, its seconds kept
(`now + 4 hours`), is worked out from the clock on each run; hours ahead are the user's choice, a look back is not."""

from __future__ import annotations

from tests.recorded import Session, reproduces, saved
from toolreel.core.sandbox import run_code
from toolreel.templatizer import TemplatizeResult, templatize

CLOCK = {"timezone": "Europe/Berlin", "datetime": "2026-12-08T22:40:12+01:00", "is_dst": False}


def _downtime(start: str, end: str) -> Session:
    s = Session()
    s.call("get_current_time", {"timezone": "Europe/Berlin"}, CLOCK)
    s.call("create_downtime", {"host": "ber1-db-07", "start": start, "end": end}, {"ok": True})
    return s


def _offset_step(result: TemplatizeResult) -> str:
    step = next(step for step in result.template.steps if step.name.startswith("offset_time_"))
    assert step.code is not None
    return step.code


def test_hours_ahead_of_the_clock_are_the_users_and_worked_out_on_each_run() -> None:
    s = _downtime("2026-12-08T22:40:12+01:00", "2026-12-09T02:40:12+01:00")
    result = saved(s)
    reproduces(result, s.steps)
    assert result.input_values["hours"] == 4
    end = result.template.step("create_downtime_1").input["end"]
    code = _offset_step(result)
    assert end == "@offset_time_1"
    assert result.template.step("offset_time_1").input == {
        "text": "@get_current_time_1.datetime",
        "hours": "@input.hours",
    }
    # the next run: another reading, six hours asked for, the clock's zone kept
    assert run_code(code, {"text": "2026-03-28T23:15:00+02:00", "hours": 6}) == "2026-03-29T05:15:00+02:00"


def test_a_look_back_is_the_tasks_own_window_and_no_input() -> None:
    s = Session()
    s.call("get_current_time", {"timezone": "UTC"}, {"timezone": "UTC", "datetime": "2026-12-03T14:20:07+00:00"})
    s.call("query_range", {"query": 'sum(rate({app="checkout"}[5m]))', "start": "2026-12-03T13:20:07Z"}, {"data": []})
    result = templatize([s.steps], name="t")
    assert "hours" not in {item.name for item in result.likely_inputs}
    assert result.template.step("query_range_1").input["start"] == "@offset_time_1"
    assert run_code(_offset_step(result), {"text": "2026-12-31T00:30:00+00:00", "hours": -1}) == "2026-12-30T23:30:00Z"


def test_a_time_the_user_typed_is_no_offset_of_the_clock() -> None:
    s = _downtime("2026-12-09T06:00:00+01:00", "2026-12-09T08:00:00+01:00")  # the clock's seconds are :12
    result = templatize([s.steps], name="t")
    assert not [step for step in result.template.steps if step.name.startswith("offset_time_")]


def test_a_time_every_call_of_a_loop_takes_from_the_clock_is_worked_out_once_before_it() -> None:
    s = Session()
    s.call("get_current_time", {"timezone": "Europe/Berlin"}, CLOCK)
    s.call("list_devices", {"site": "ber1"}, {"results": [{"name": "ber1-db-07"}, {"name": "ber1-app-12"}]})
    for host in ("ber1-db-07", "ber1-app-12"):
        s.call("create_downtime", {"host": host, "end": "2026-12-09T02:40:12+01:00"}, {"ok": True})
    result = saved(s)
    reproduces(result, s.steps)
    loop = next(step for step in result.template.steps if step.for_each is not None)
    assert loop.input == {"host": "@item.name", "end": "@offset_time_1"}
    assert result.input_values["hours"] == 4


def test_a_reading_on_a_whole_minute_leads_only_to_whole_hours() -> None:
    reading = {"timezone": "Europe/Vienna", "datetime": "2026-12-10T17:20:00+01:00"}
    s = Session()
    s.call("get_current_time", {"timezone": "Europe/Vienna"}, reading)
    s.call("create_timesheet", {"begin": "2026-12-10T09:00:00", "end": "2026-12-10T12:30:00"}, {"id": 1})
    result = templatize([s.steps], name="t")  # 8h20 and 4h50 before the reading: times a person typed
    assert not [step for step in result.template.steps if step.name.startswith("offset_time_")]
