"""Conformance: workflow events (rp1 ``agent-tools emit``) and reading them for ``--follow``."""

from __future__ import annotations

from typing import Any

import pytest
from ledger_helpers import FakeClock, Store

from moot.errors import ConflictError, InvalidInputError
from moot.ledger import EVENT_TYPES, Ledger
from moot.ledger.models import to_iso


def emit(ledger: Ledger, run_id: str = "run-1", **overrides: Any) -> Any:
    fields: dict[str, Any] = {
        "workflow": "socratic-duel",
        "type": "status_change",
        "run_id": run_id,
        "step": "preparing",
        "data": {"status": "running", "target": "/src/a.md", "topic": "Caching"},
    }
    fields.update(overrides)
    return ledger.append_event(**fields)


def test_an_event_is_stored_with_every_field(ledger: Ledger, clock: FakeClock) -> None:
    data = {"status": "completed", "event": "lock_acquired", "nested": {"ok": [1, 2.5, None, True]}, "ünï": "çødé"}

    appended = emit(ledger, step="debating", unit="participant:p1", harness="codex", data=data)

    (read,) = ledger.read_events()
    assert read == appended
    assert (read.workflow, read.type, read.run_id, read.step) == ("socratic-duel", "status_change", "run-1", "debating")
    assert (read.unit, read.harness, read.data, read.close_run) == ("participant:p1", "codex", data, False)
    assert read.created_at == to_iso(clock.now)


def test_event_ids_increase_and_readers_can_resume_after_the_last_seen(ledger: Ledger) -> None:
    ids = [emit(ledger, run_id=run).id for run in ("a", "b", "a", "b", "a")]

    assert ids == sorted(ids) and len(set(ids)) == 5
    assert [e.id for e in ledger.read_events(after_id=ids[1])] == ids[2:]
    assert [e.id for e in ledger.read_events(run_id="a")] == [ids[0], ids[2], ids[4]]
    assert [e.id for e in ledger.read_events(run_id="b", after_id=ids[1])] == [ids[3]]
    assert [e.id for e in ledger.read_events(limit=2)] == ids[:2]
    assert ledger.read_events(after_id=ids[-1]) == []


def test_every_documented_event_type_is_accepted(ledger: Ledger) -> None:
    data_for = {
        "status_change": {"status": "waiting"},
        "artifact_registered": {"path": "debates/x.md", "storageRoot": "work_dir", "type": "markdown"},
        "btw_update": {"message": "Candidate convergence detected.", "metadata": {"turn_number": "3"}},
    }

    for event_type in sorted(EVENT_TYPES):
        emit(ledger, type=event_type, data=data_for.get(event_type, {"turn": 1}))

    assert sorted(e.type for e in ledger.read_events()) == sorted(EVENT_TYPES)


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"type": "status"}, "Unknown event type 'status'; use one of"),
        ({"data": ["not", "an", "object"]}, "must be a JSON object"),
        ({"data": {1: "int key"}}, "must be a JSON object with string keys"),
        ({"data": {"status": "running", "x": float("nan")}}, "not plain JSON"),
        ({"data": {"status": "running", "x": object()}}, "not plain JSON"),
        ({"data": {"status": "running", "x": "y" * 70_000}}, "larger than"),
        ({"data": {"status": "sleeping"}}, "needs data.status set to one of completed, failed, running, waiting"),
        ({"type": "artifact_registered", "data": {"storageRoot": "work_dir"}}, "needs a non-empty string data.path"),
        ({"type": "btw_update", "data": {"message": ""}}, "needs a non-empty string data.message"),
        ({"close_run": True}, "Only a status_change event with data.status completed or failed can close a run"),
        ({"run_id": ""}, "run_id must be a non-empty string"),
        ({"unit": ""}, "unit must be a non-empty string"),
    ],
)
def test_an_invalid_event_is_refused_and_not_stored(ledger: Ledger, overrides: dict[str, Any], message: str) -> None:
    with pytest.raises(InvalidInputError, match=message):
        emit(ledger, **overrides)

    assert ledger.read_events() == []


def test_a_closed_run_accepts_no_more_events(ledger: Ledger) -> None:
    closing = emit(ledger, step="completed", close_run=True, data={"status": "completed", "outcome": "DISSENT"})

    with pytest.raises(ConflictError, match=f"closed by event {closing.id}; emit with a new run id"):
        emit(ledger)

    emit(ledger, run_id="run-2")  # other runs are unaffected
    assert [(e.run_id, e.close_run) for e in ledger.read_events()] == [("run-1", True), ("run-2", False)]


def test_a_second_ledger_sees_events_as_they_are_committed(store: Store, ledger: Ledger) -> None:
    follower = store.open()
    first = emit(ledger)
    assert [e.id for e in follower.read_events()] == [first.id]

    second = emit(ledger)

    assert [e.id for e in follower.read_events(after_id=first.id)] == [second.id]
