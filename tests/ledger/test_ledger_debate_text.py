"""Conformance: the ledger holds the debate itself — turn and conclusion text, a host-independent source
identity with the creator's source text, joins by id — so that every host can write the same record."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
from ledger_helpers import Duel, granted, seated, secret_of

from moot.errors import InvalidInputError, NotFoundError, SourceMismatchError
from moot.ledger import JoinResult, Ledger


def digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def join_shared(ledger: Ledger, root: Path, name: str, text: str) -> JoinResult:
    """A join as a host makes it: the source named relative to the record, identified by its repository path."""
    return ledger.join(
        source_path="../docs/design.md",
        source_key="path:docs/design.md",
        source_digest=digest(text),
        source_text=text,
        topic="Caching",
        topic_slug="caching",
        participant_name=name,
        harness="codex",
        model="m",
        run_id=f"run-{name}",
        artifact_dir=root / "debates",
    )


def test_turn_and_conclusion_text_are_stored_with_their_digests(ledger: Ledger, duel: Duel) -> None:
    lease = granted(ledger.claim(duel.debate_id, duel.alice, participant_secret=secret_of(duel.alice)))
    with ledger.guarded_write(
        duel.debate_id, duel.alice, lease.lease_token, lease.fencing_token, participant_secret=secret_of(duel.alice)
    ) as guard:
        guard.record_turn(1, digest("turn one"), digest("c1"), body="turn one")
        guard.conclude("DISSENT", reason="r", summary="s", body="## Terminal Conclusion\n\nDISSENT\n")
        inside = guard.record()

    record = ledger.record(duel.debate_id)
    assert record == inside
    assert [(t.turn, t.body) for t in record.turns] == [(1, "turn one")]
    assert record.conclusion is not None and record.conclusion.body == "## Terminal Conclusion\n\nDISSENT\n"
    assert [p.id for p in record.participants] == [duel.alice, duel.bob]


def test_a_turn_text_that_does_not_match_its_digest_is_refused_and_nothing_is_stored(
    ledger: Ledger, duel: Duel
) -> None:
    lease = granted(ledger.claim(duel.debate_id, duel.alice, participant_secret=secret_of(duel.alice)))
    with (
        pytest.raises(InvalidInputError, match="does not match its digest"),
        ledger.guarded_write(
            duel.debate_id, duel.alice, lease.lease_token, lease.fencing_token, participant_secret=secret_of(duel.alice)
        ) as guard,
    ):
        guard.record_turn(1, digest("turn one"), digest("c1"), body="turn one, edited")

    assert ledger.turns(duel.debate_id) == []


def test_hosts_meet_by_source_key_and_a_different_source_text_is_refused_before_seating(
    ledger: Ledger, tmp_path: Path
) -> None:
    first = join_shared(ledger, tmp_path / "host-a", "alice", "# Design\n")

    with pytest.raises(SourceMismatchError) as refused:
        join_shared(ledger, tmp_path / "host-b", "bob", "# Design, edited\n")
    assert refused.value.debate_id == first.debate.id and refused.value.digest == digest("# Design\n")
    assert ledger.status(first.debate.id).participant_count == 1

    second = join_shared(ledger, tmp_path / "host-b", "bob", "# Design\n")
    assert second.debate.id == first.debate.id and second.participant_count == 2
    assert (second.debate.source_key, second.debate.source_path) == ("path:docs/design.md", "../docs/design.md")
    assert ledger.source_text(first.debate.id) == "# Design\n"


def test_a_participant_joins_by_debate_id(ledger: Ledger, tmp_path: Path) -> None:
    first = join_shared(ledger, tmp_path, "alice", "# Design\n")

    joined = ledger.join_debate(first.debate.id, participant_name="bob", harness="codex", model="m", run_id="r")
    again = ledger.join_debate(
        first.debate.id,
        participant_name="bob",
        harness="codex",
        model="m",
        run_id="r",
        participant_secret=joined.secret,
    )

    assert (joined.participant_count, joined.rejoined, again.rejoined) == (2, False, True)
    with pytest.raises(NotFoundError):
        ledger.join_debate("no-such-debate", participant_name="carol", harness="h", model="m", run_id="r")


def test_a_record_kept_as_several_files_stores_its_opening_and_where_each_turn_goes(
    ledger: Ledger, tmp_path: Path
) -> None:
    def join(name: str, opening: str) -> JoinResult:
        return seated(
            ledger.join(
                source_path=".roundtable/cache",
                source_key="meeting:cache",
                opening=opening,
                topic="cache",
                topic_slug="meeting",
                participant_name=name,
                harness="h",
                model="m",
                run_id=name,
                artifact_dir=tmp_path,
                protocol="roundtable",
                seats=3,
            )
        )

    first = join("moderator", '{"AGENDA.md": "# Agenda\\n"}')
    second = join("architect", '{"AGENDA.md": "another host\'s agenda"}')  # only the creator's is stored
    assert second.debate.id == first.debate.id
    lease = granted(
        ledger.claim(
            first.debate.id,
            second.participant.id,
            for_timeout=True,
            participant_secret=secret_of(second.participant.id),
        )
    )
    placed = '{"also": {"turn.json": "{}"}, "file": "001_architect.md"}'
    with ledger.guarded_write(
        first.debate.id,
        second.participant.id,
        lease.lease_token,
        lease.fencing_token,
        participant_secret=secret_of(second.participant.id),
    ) as guard:
        guard.open_record('{"AGENDA.md": "ignored: the debate has its opening"}')
        guard.record_turn(1, digest("speech"), digest("c1"), body="speech")
        guard.record_turn(1, digest("speech"), digest("c1"), body="speech", files=placed)  # fills in where it goes
        guard.record_turn(1, digest("speech"), digest("c1"), body="speech", files="{}")  # never changes it

    record = ledger.record(first.debate.id)
    assert record.opening == '{"AGENDA.md": "# Agenda\\n"}'
    assert [(t.body, t.files) for t in record.turns] == [("speech", placed)]
    assert ledger.find_debate(".roundtable/cache", "meeting", protocol="roundtable", source_key="meeting:cache")
    ledger.release(
        first.debate.id,
        second.participant.id,
        lease.lease_token,
        close=True,
        outcome="CLOSED",
        participant_secret=secret_of(second.participant.id),
    )
    assert ledger.find_debate("x", "meeting", protocol="roundtable", source_key="meeting:cache") is None
    latest = ledger.find_debate("x", "meeting", protocol="roundtable", source_key="meeting:cache", closed=True)
    assert latest is not None and latest.id == first.debate.id
