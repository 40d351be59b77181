"""Conformance, property-based: random sequences of lease calls agree with a ten-line reference model.

Two participants, an injected clock that jumps forward, and every credential a caller could hold (the
current token, an older one, a guess; the current fencing number or a stale one). Both backends.
Budget: 25 sequences of up to 30 steps per backend (hypothesis max_examples=25).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import hypothesis.strategies as st
from hypothesis import HealthCheck, settings
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule, run_state_machine_as_test
from ledger_helpers import FakeClock, join, secret_of

from moot.errors import DebateClosedError, LeaseError
from moot.ledger import Lease, Ledger, Refusal
from moot.ledger.models import from_iso


@dataclass
class ModelLease:
    holder: str
    token: str
    fencing: int
    expires: datetime


def test_lease_calls_agree_with_the_reference_model(ledger: Ledger, clock: FakeClock, tmp_path: Path) -> None:
    class LeaseMachine(RuleBasedStateMachine):
        @initialize()
        def open_duel(self) -> None:
            slug = f"model-{uuid.uuid4().hex[:12]}"
            first = join(ledger, tmp_path, "alice", slug=slug)
            second = join(ledger, tmp_path, "bob", slug=slug)
            self.debate = first.debate.id
            self.people = [first.participant.id, second.participant.id]
            self.lease: ModelLease | None = None
            self.tokens: list[str] = ["a-guessed-token"]
            self.fencing = 0
            self.turns = 0
            self.closed = False

        def live(self) -> ModelLease | None:
            return self.lease if self.lease is not None and clock.now < self.lease.expires else None

        def may_write(self, who: int, token: int, fencing: int | None) -> bool:
            lease = self.live()
            return (
                not self.closed
                and lease is not None
                and lease.holder == self.people[who]
                and lease.token == self.tokens[token % len(self.tokens)]
                and (fencing is None or fencing == self.fencing)
            )

        @rule(seconds=st.sampled_from([0, 1, 4, 9, 31]))
        def time_passes(self, seconds: int) -> None:
            clock.advance(seconds)

        @rule(who=st.integers(0, 1), ttl=st.sampled_from([5, 10, 30]), for_timeout=st.booleans())
        def claim(self, who: int, ttl: int, for_timeout: bool) -> None:
            if self.closed:
                try:
                    ledger.claim(
                        self.debate,
                        self.people[who],
                        ttl_seconds=ttl,
                        for_timeout=for_timeout,
                        participant_secret=secret_of(self.people[who]),
                    )
                except DebateClosedError:
                    return
                raise AssertionError("a closed debate granted or refused a claim instead of raising")
            result = ledger.claim(
                self.debate,
                self.people[who],
                ttl_seconds=ttl,
                for_timeout=for_timeout,
                participant_secret=secret_of(self.people[who]),
            )
            live = self.live()
            if live is not None:
                assert isinstance(result, Refusal) and result.holder_participant_id == live.holder
                return
            assert isinstance(result, Lease)
            self.fencing += 1
            assert result.fencing_token == self.fencing
            self.lease = ModelLease(
                self.people[who], result.lease_token, self.fencing, from_iso(result.lease_expires_at)
            )
            self.tokens.append(result.lease_token)

        @rule(who=st.integers(0, 1), token=st.integers(0, 99), ttl=st.sampled_from([5, 30]))
        def refresh(self, who: int, token: int, ttl: int) -> None:
            allowed = self.may_write(who, token, None)
            try:
                refreshed = ledger.refresh(
                    self.debate,
                    self.people[who],
                    self.tokens[token % len(self.tokens)],
                    ttl_seconds=ttl,
                    participant_secret=secret_of(self.people[who]),
                )
            except LeaseError:
                assert not allowed
                return
            assert allowed and self.lease is not None
            self.lease.expires = from_iso(refreshed.lease_expires_at)

        @rule(who=st.integers(0, 1), token=st.integers(0, 99), close=st.booleans())
        def release(self, who: int, token: int, close: bool) -> None:
            allowed = self.may_write(who, token, None)
            try:
                ledger.release(
                    self.debate,
                    self.people[who],
                    self.tokens[token % len(self.tokens)],
                    close=close,
                    outcome="DISSENT" if close else None,
                    participant_secret=secret_of(self.people[who]),
                )
            except LeaseError:
                assert not allowed
                return
            assert allowed
            self.lease, self.closed = None, close

        @rule(who=st.integers(0, 1), token=st.integers(0, 99), stale=st.booleans())
        def write_turn(self, who: int, token: int, stale: bool) -> None:
            fencing = self.fencing - 1 if stale else self.fencing
            allowed = self.may_write(who, token, fencing)
            try:
                with ledger.guarded_write(
                    self.debate,
                    self.people[who],
                    self.tokens[token % len(self.tokens)],
                    fencing,
                    participant_secret=secret_of(self.people[who]),
                ) as guard:
                    guard.record_turn(self.turns + 1, f"{self.turns + 1:064x}", "0" * 64)
            except LeaseError:
                assert not allowed
                return
            assert allowed
            self.turns += 1

        @invariant()
        def status_agrees(self) -> None:
            if not hasattr(self, "debate"):
                return
            status = ledger.status(self.debate)
            assert status.last_fencing_token == self.fencing
            assert status.turn_count == self.turns
            assert (status.debate.status.value == "closed") == self.closed
            if self.lease is None:
                assert status.lease is None
            else:
                assert status.lease is not None
                assert status.lease.holder_participant_id == self.lease.holder
                assert status.lease.expired == (self.live() is None)

    run_state_machine_as_test(
        LeaseMachine,
        settings=settings(
            max_examples=25,
            stateful_step_count=30,
            deadline=None,
            suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
        ),
    )
