"""Whose call a server's question belongs to on a handshake-era connection, where the wire does not say
(gateway.relay.caller_among): the calls in flight there, oldest first."""

from __future__ import annotations

from toolreel.gateway.links import Call, ClientLink
from toolreel.gateway.relay import caller_among


def _calls(count: int) -> list[Call]:
    return [Call(None, ClientLink(f"client{i}"), None) for i in range(count)]


def test_no_call_in_flight_has_no_caller() -> None:
    assert caller_among([]) is None


def test_questions_go_to_the_calls_in_the_order_they_were_forwarded() -> None:
    first, second, third = calls = _calls(3)
    first.asking = first.asked = 1
    assert caller_among(calls) is second
    second.asking = second.asked = 1
    assert caller_among(calls) is third


def test_a_call_whose_question_was_answered_is_not_given_a_later_one() -> None:
    # the first caller's question was answered and its call is finishing when the second's question comes
    first, second = calls = _calls(2)
    first.asked = 1
    assert caller_among(calls) is second


def test_a_call_asking_again_after_its_answer_is_the_oldest_not_waiting() -> None:
    first, second = calls = _calls(2)
    first.asked = 1
    second.asking = second.asked = 1
    assert caller_among(calls) is first  # every call has asked: the oldest not waiting on an answer now
    first.asking = 1
    assert caller_among(calls) is first  # all waiting: the oldest
