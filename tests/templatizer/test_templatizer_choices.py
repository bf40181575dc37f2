"""Choices, twentieth pass: a loop over the elements the user's category, device or user names (`cat == "tv"`)
walks a select step whose value is an input, so another run handles another category; a state of the task
(`status == "exited"`, a priority level), a number, a code or an address stays the filter's literal. The ticket
named in a note's label (`NET-812: planned firmware upgrade`) is the user's, as the note is. A short id inside a
text is the field of the element the call's other arguments come from."""

from __future__ import annotations

from tests.recorded import Session, saved, steps_of


def _paused(field: str, handled: str, others: tuple[str, str]) -> Session:
    """The queue read, then a pause for each of the two slots whose `field` is `handled` (the others' is not)."""
    values = [handled, others[0], handled, others[1]]
    slots = [
        {"nzo_id": f"SABnzbd_nzo_a{n}", "filename": f"Show.S01E0{n}", "cat": "tv", "status": "Queued", field: value}
        for n, value in enumerate(values, start=1)
    ]
    s = Session()
    s.call("get_queue", {}, {"queue": {"slots": slots}})
    for slot in slots[0], slots[2]:
        s.call("pause_item", {"nzo_id": slot["nzo_id"]}, {"status": True})
    return s


def test_a_loop_over_the_category_the_user_named_walks_a_select_on_an_input() -> None:
    result = saved(_paused("cat", "tv", ("movies", "music")))
    steps = steps_of(result)
    assert steps["select_slots"]["input"] == {
        "items": "@get_queue_1.queue.slots",
        "where": [{"key": "cat", "op": "==", "value": "@input.cat"}],
    }
    assert steps["pause_item_each"]["for_each"] == "@select_slots"
    assert steps["pause_item_each"]["input"] == {"nzo_id": "@item.nzo_id"}
    assert result.input_values == {"cat": "tv"}


def test_a_loop_over_the_elements_in_a_state_keeps_the_filter_literal() -> None:
    for field, state in (("status", "Failed"), ("priority", "High"), ("albumType", "Album")):
        result = saved(_paused(field, state, ("Queued", "Paused")))
        steps = steps_of(result)
        assert steps["pause_item_each"]["for_each"] == f'@get_queue_1.queue.slots[?(@.{field} == "{state}")]'
        assert not any(name.startswith("select_") for name in steps), field
        assert result.input_values == {}, field


def test_a_code_a_number_or_an_address_the_elements_share_stays_the_filter_s_literal() -> None:
    for value in ("ar-33189", "1", "ops@corp.example"):
        result = saved(_paused("owner", value, ("ar-40213", "ops@other.example")))
        steps = steps_of(result)
        assert not any(name.startswith("select_") for name in steps), value
        assert value not in result.input_values.values(), value


def test_the_ticket_in_a_note_s_label_is_an_input_beside_the_note() -> None:
    s = Session()
    sensors = [
        {"objid": 2101, "device": "core-sw-01", "status": "Down"},
        {"objid": 2102, "device": "core-sw-01-mgmt", "status": "Down"},
        {"objid": 2104, "device": "core-sw-01", "status": "Down"},
    ]
    s.call("get_sensors", {"filter_status": 5}, {"sensors": sensors})
    for objid in (2101, 2104):
        s.call("acknowledge_alarm", {"id": objid, "ackmsg": "NET-812: planned firmware upgrade"}, {})
    result = saved(s)
    values = {value: name for name, value in result.input_values.items()}
    assert set(values) == {"core-sw-01", "NET-812", "planned firmware upgrade"}
    ackmsg = steps_of(result)["acknowledge_alarm_each"]["input"]["ackmsg"]
    assert ackmsg == f"{{{{@input.{values['NET-812']}}}}}: {{{{@input.{values['planned firmware upgrade']}}}}}"


def test_a_short_id_in_a_title_is_the_field_of_the_element_the_other_arguments_come_from() -> None:
    """`session 1qa2ws1` in the task's name, the session's recording link its description: the id is that session's
    (a piece too short to be evidence alone), so the calls are one loop over the sessions."""
    s = Session()
    sessions = [
        {"sessionId": f"1qa2ws{n}", "clickCount": 40 - n, "recordingUrl": f"https://clarity.example/player/rec{n}"}
        for n in (1, 2)
    ]
    s.call("list_session_recordings", {"count": 10}, {"total": 2, "sessions": sessions})
    for session in sessions:
        name = f"Rage clicks on /checkout: session {session['sessionId']}"
        s.call("create_task", {"name": name, "tasklist_id": 70312, "description": session["recordingUrl"]}, "ok")
    steps = steps_of(saved(s))
    assert steps["create_task_each"]["for_each"] == "@list_session_recordings_1.sessions"
    assert steps["create_task_each"]["input"]["name"] == "Rage clicks on /checkout: session {{@item.sessionId}}"
    assert steps["create_task_each"]["input"]["description"] == "@item.recordingUrl"
