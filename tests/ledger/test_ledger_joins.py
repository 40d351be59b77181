"""Conformance: joining a duel (both backends)."""

from __future__ import annotations

import os
import re
import uuid
from pathlib import Path

import pytest
from ledger_helpers import Store, join, secret_of

from moot.errors import DebateFullError, InvalidInputError, NotFoundError
from moot.ledger import DebateState, Lease, Ledger


def test_first_join_creates_a_debate_waiting_for_a_peer(ledger: Ledger, tmp_path: Path) -> None:
    joined = join(ledger, tmp_path, "alice")

    assert joined.created and not joined.rejoined
    assert joined.participant_count == 1
    assert joined.debate.status is DebateState.WAITING
    assert joined.debate.source_path == os.path.realpath(tmp_path / "source.md")
    assert (joined.debate.topic, joined.debate.topic_slug) == ("Caching", "caching")
    artifact = Path(joined.debate.artifact_path)
    assert artifact.parent == tmp_path / "debates"
    assert re.fullmatch(r"\d{4}-\d{2}-\d{2}-caching\.md", artifact.name)  # the seed's YYYY-MM-DD-slug.md
    assert uuid.UUID(joined.participant.id).version == 4  # random, not derived from the name


def test_second_join_on_the_same_source_and_topic_starts_the_duel(ledger: Ledger, tmp_path: Path) -> None:
    alice = join(ledger, tmp_path, "alice")
    bob = join(ledger, tmp_path, "bob")

    assert bob.debate.id == alice.debate.id and not bob.created
    assert bob.participant_count == 2 and bob.participant.seat == 2
    assert bob.participant.id != alice.participant.id
    assert bob.debate.artifact_path == alice.debate.artifact_path
    assert ledger.get_debate(alice.debate.id).status is DebateState.DEBATING


def test_a_symlinked_source_joins_the_same_duel(ledger: Ledger, tmp_path: Path) -> None:
    alice = join(ledger, tmp_path, "alice")
    link = tmp_path / "link.md"
    link.symlink_to(tmp_path / "source.md")

    bob = ledger.join(
        source_path=link,
        topic="Caching",
        topic_slug="caching",
        participant_name="bob",
        harness="claude-code",
        model="m",
        run_id="r",
        artifact_dir=tmp_path / "elsewhere",
    )

    assert bob.debate.id == alice.debate.id
    assert ledger.find_debate(link, "caching") == ledger.get_debate(alice.debate.id)


def test_joining_again_with_the_same_name_returns_the_same_participant(ledger: Ledger, tmp_path: Path) -> None:
    first = join(ledger, tmp_path, "alice")
    again = join(ledger, tmp_path, "alice", secret=first.secret)

    assert again.rejoined and not again.created and again.secret is None  # the secret is shown once
    assert again.participant == first.participant
    assert again.participant_count == 1


def test_a_third_participant_is_refused_but_members_can_still_rejoin(ledger: Ledger, tmp_path: Path) -> None:
    alice = join(ledger, tmp_path, "alice")
    join(ledger, tmp_path, "bob")

    with pytest.raises(DebateFullError, match=r"already has its 2 participants \(alice, bob\)"):
        join(ledger, tmp_path, "carol")

    assert join(ledger, tmp_path, "alice", secret=alice.secret).participant.id == alice.participant.id
    assert ledger.status(alice.debate.id).participant_count == 2


def test_another_topic_on_the_same_source_is_another_debate(ledger: Ledger, tmp_path: Path) -> None:
    caching = join(ledger, tmp_path, "alice")
    naming = join(ledger, tmp_path, "alice", slug="naming")

    assert naming.debate.id != caching.debate.id
    assert naming.debate.artifact_path != caching.debate.artifact_path


def test_after_a_debate_closes_the_next_join_opens_a_new_one(ledger: Ledger, tmp_path: Path) -> None:
    alice = join(ledger, tmp_path, "alice")
    lease = ledger.claim(
        alice.debate.id, alice.participant.id, for_timeout=True, participant_secret=secret_of(alice.participant.id)
    )
    assert isinstance(lease, Lease)
    ledger.release(
        alice.debate.id,
        alice.participant.id,
        lease.lease_token,
        close=True,
        outcome="TIMEOUT",
        participant_secret=secret_of(alice.participant.id),
    )

    again = join(ledger, tmp_path, "alice")

    assert again.created and again.debate.id != alice.debate.id
    assert ledger.get_debate(alice.debate.id).status is DebateState.CLOSED
    assert ledger.find_debate(tmp_path / "source.md", "caching") == again.debate
    # The same topic again on the same day: the seed's name with a suffix, only because of the clash.
    assert again.debate.artifact_path == alice.debate.artifact_path.removesuffix(".md") + "-2.md"


@pytest.mark.parametrize("slug", ["../escape", "a/b", "", "has space", "trailing-", "a--b", "x" * 121])
def test_a_slug_that_is_not_a_plain_slug_is_refused(ledger: Ledger, tmp_path: Path, slug: str) -> None:
    with pytest.raises(InvalidInputError, match="slugify the topic"):
        join(ledger, tmp_path, "alice", slug=slug)


def test_a_unicode_slug_is_accepted(ledger: Ledger, tmp_path: Path) -> None:
    assert join(ledger, tmp_path, "alice", slug="圆桌-会议").debate.topic_slug == "圆桌-会议"


def test_empty_participant_fields_are_refused(ledger: Ledger, tmp_path: Path) -> None:
    with pytest.raises(InvalidInputError, match="participant_name must be a non-empty string"):
        join(ledger, tmp_path, " ")


def test_unknown_debates_are_reported(ledger: Ledger) -> None:
    with pytest.raises(NotFoundError, match="use the duel id that join returned"):
        ledger.status("nope")
    with pytest.raises(NotFoundError):
        ledger.claim("nope", "nobody", participant_secret="any")


def test_a_participant_of_another_debate_cannot_claim(ledger: Ledger, tmp_path: Path) -> None:
    caching = join(ledger, tmp_path, "alice")
    naming = join(ledger, tmp_path, "alice", slug="naming")

    with pytest.raises(NotFoundError, match="has not joined debate"):
        ledger.claim(
            caching.debate.id,
            naming.participant.id,
            for_timeout=True,
            participant_secret=secret_of(naming.participant.id),
        )


def test_two_ledgers_on_one_store_see_each_others_joins(store: Store, tmp_path: Path) -> None:
    first, second = store.open(), store.open()
    alice = join(first, tmp_path, "alice")

    bob = join(second, tmp_path, "bob")

    assert bob.debate.id == alice.debate.id
    assert [p.name for p in first.status(alice.debate.id).participants] == ["alice", "bob"]
