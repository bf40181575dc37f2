"""Verified before saved: the replayer's dry replay of a template against its own recordings.

Every corpus session (real recordings on real servers) verifies with its likely inputs applied and
with its several recordings; a template changed by hand names the step and field that differ."""

from __future__ import annotations

import dataclasses

import pytest

from fixtures.recordings import HELDOUT_DIR, CorpusEntry, load_corpus
from toolreel.core.template import StepSpec
from toolreel.replayer import dry_replay
from toolreel.templatizer import summary, templatize, verify

CORPUS = load_corpus()
EVERY_SESSION = CORPUS + load_corpus(HELDOUT_DIR)  # verification must hold on the held-out part too


@pytest.mark.parametrize("entry", EVERY_SESSION, ids=lambda e: e.name)
def test_every_corpus_session_verifies_with_its_likely_inputs_applied(entry: CorpusEntry) -> None:
    first = templatize([entry.steps], name="t")
    chosen = {likely.name: likely.value for likely in first.likely_inputs}
    result = templatize([entry.steps], name="t", inputs=chosen)
    verification = verify(result, [entry.steps])
    assert verification.verified, verification.to_json()
    folded = {name for loop in result.loops for name in loop.folded_inputs}  # one input per call: one list
    assert set(chosen) <= set(result.template.inputs) | folded
    assert not folded & set(result.template.inputs)


@pytest.mark.parametrize("entry", [e for e in CORPUS if len(e.recordings) > 1], ids=lambda e: e.name)
def test_several_recordings_verify_each_with_its_own_values(entry: CorpusEntry) -> None:
    result = templatize(list(entry.recordings), name="t")
    verification = verify(result, list(entry.recordings))
    assert verification.recordings == len(entry.recordings)
    assert verification.verified, verification.to_json()


def test_a_template_that_does_not_replay_names_the_step_and_field() -> None:
    entry = next(e for e in CORPUS if e.name == "ids-order-flow")
    result = templatize([entry.steps], name="t")
    target = next(s for s in result.template.steps if s.name == "get_order_1")
    changed = dataclasses.replace(target, input={"order_id": "ord_000000000000"})
    steps = tuple(changed if s.name == target.name else s for s in result.template.steps)
    broken = dataclasses.replace(result, template=dataclasses.replace(result.template, steps=steps))
    verification = verify(broken, [entry.steps])
    assert not verification.verified
    assert [(m.step, m.field) for m in verification.mismatches] == [("get_order_1", "$.order_id")]
    assert "'ord_000000000000'" in verification.mismatches[0].got
    text = summary(broken, verification, saved="Not saved", note=None)
    assert "NOT verified" in text and "get_order_1" in text


def test_a_ref_to_a_step_missing_from_the_recording_is_a_difference() -> None:
    entry = next(e for e in CORPUS if e.name == "ids-order-flow")
    result = templatize([entry.steps], name="t")
    extra = StepSpec(name="again", tool="ids__get_order", input={"order_id": "@nowhere_1.order_id"})
    template = dataclasses.replace(result.template, steps=(*result.template.steps, extra))
    found = dry_replay(template, result.input_values, entry.steps)
    assert [d.step for d in found] == ["again"]
