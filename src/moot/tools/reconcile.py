"""Keeping the record on disk and the ledger's turn digests in step, inside one guarded transaction.

Every write a tool makes under a lease runs as::

    with ledger.guarded_write(debate, participant, token, fencing) as guard:   # 1. the lease is checked
        reconcile(guard, texts_on_disk)                                        # 2. disk vs ledger
        <write the record: atomic replace, then the chain sidecar>            # 3. the file
        guard.record_turn(n, digest, chain)                                    # 4. the digest
    # the transaction commits: the digest and the fencing audit row become durable together

The transaction holds the ledger's write lock (SQLite ``BEGIN IMMEDIATE``, PostgreSQL ``FOR UPDATE`` on
the debate row) from step 1 to the commit, so no other lease can be granted, refreshed or used while the
file is written: a holder whose lease expired or was taken over is refused at step 1, before any byte of
the record changes.

The crash window is between step 3 and the commit: the record then holds one turn the ledger has not
recorded. That turn was validated under a lease that was valid while the lock was held, so it is not
discarded: the next guarded write (by anyone) *adopts* it — records its digest — after checking that every
turn the ledger did record is still byte for byte on disk. Agents treat the record as the debate's truth
(the seed says so), so a peer may already have read that turn. Re-sending the identical turn is therefore
idempotent: the tool finds it adopted (or already recorded) and reports ``already_appended``.

What is refused: a recorded turn whose text changed (``PRIOR_TURN_MODIFIED``) or vanished
(``PRIOR_TURN_REMOVED``), and more than one unrecorded turn (``TOOLS_UNRECORDED_TURNS``: no crash makes
two, so something else wrote them).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from moot.core.chain import build_chain
from moot.errors import Refused
from moot.ledger import LeaseGuard


@dataclass(frozen=True)
class ChainRow:
    """One accepted turn as the chain sidecar and the ledger hold it."""

    turn: int
    digest: str
    chain: str


def chain_rows(texts: Sequence[str]) -> list[ChainRow]:
    return [ChainRow(int(str(r["turn"])), str(r["digest"]), str(r["chain"])) for r in build_chain(texts)]


@dataclass(frozen=True)
class Reconciled:
    recorded: int
    """Turns the ledger had recorded before this write."""
    adopted: tuple[int, ...]
    """Turns found on disk but not in the ledger (a crash's), recorded now."""

    @property
    def count(self) -> int:
        return self.recorded + len(self.adopted)


def reconcile(
    guard: LeaseGuard,
    texts: Sequence[str],
    *,
    where: str,
    adopt_history: bool = False,
    written_turns: int | None = None,
    layouts: Sequence[str] | None = None,
) -> Reconciled:
    """Check ``texts`` (each accepted turn's exact text, in order) against the ledger and adopt a crash's turn.

    A record that lacks turns whose text the ledger holds is only behind (another host wrote them; the
    record is brought up to date from the ledger), unless the record itself says it held them:
    ``written_turns`` is the count its chain mark carries. ``adopt_history`` lets a record that was never
    coordinated through the ledger (a critique dialogue written without leases) be adopted whole on its
    first guarded write. Adopted turns are recorded with their text, and with ``layouts[i]`` (the ledger's
    ``files`` of turn i + 1) for a record kept as several files.
    """

    def files(index: int) -> str | None:
        return layouts[index] if layouts is not None else None

    rows = chain_rows(texts)
    recorded = guard.turns()
    for digest in recorded:
        index = digest.turn - 1
        if index >= len(rows):
            if digest.body is not None and (written_turns is None or digest.turn > written_turns):
                continue  # this host's record is behind the ledger
            raise Refused(
                f"Turn {digest.turn} of {where} was accepted but is no longer in the record; restore it from "
                "version control or close the debate as INVALIDATED.",
                rule="PRIOR_TURN_REMOVED",
            )
        if rows[index].digest != digest.digest:
            raise Refused(
                f"Turn {digest.turn} of {where} was edited after it was accepted; restore its original text or "
                "close the debate as INVALIDATED.",
                rule="PRIOR_TURN_MODIFIED",
            )
        if digest.body is None or (digest.files is None and layouts is not None):
            # recorded by an older moot: the ledger gets the text (and where it goes) as this host holds it
            guard.record_turn(digest.turn, digest.digest, digest.chain, body=texts[index], files=files(index))
    extra = rows[len(recorded) :]
    if len(extra) > 1 and not (adopt_history and not recorded):
        raise Refused(
            f"{where} holds {len(extra)} turns the ledger never accepted (a crash leaves at most one); remove "
            "the turns written outside moot or close the debate as INVALIDATED.",
            rule="TOOLS_UNRECORDED_TURNS",
        )
    for row in extra:
        guard.record_turn(row.turn, row.digest, row.chain, body=texts[row.turn - 1], files=files(row.turn - 1))
    return Reconciled(recorded=len(recorded), adopted=tuple(row.turn for row in extra))


def record_last(guard: LeaseGuard, texts: Sequence[str]) -> ChainRow:
    """Record the digest and text of the turn just written (the last of ``texts``)."""
    row = chain_rows(texts)[-1]
    guard.record_turn(row.turn, row.digest, row.chain, body=texts[-1])
    return row
