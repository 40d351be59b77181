"""Shared batches: the lines of one ``moot run --batch`` file, taken one at a time by every host sharing the ledger.

A batch is named by the SHA-256 of its file, so hosts given the same file join the same batch; the first to
open it writes one row per line (``waiting``), the others find them. A host takes the next line with
``SELECT … FOR UPDATE SKIP LOCKED`` (PostgreSQL; SQLite's one writer needs no skipping): a line that waits, or
one whose host stopped heartbeating past its lease. The take is one transaction that marks the line
``running`` under this host, bumps its claim number and sets the lease's expiry; hosts that take at the same
moment skip each other's locked rows instead of queueing on them. A heartbeat moves the expiry of every line
the host still holds; a finish marks the line ``done`` only under the claim that took it, so a host whose
lease ran out (and whose line another host took) cannot mark it done a second time.

Statements here are constants run through a ``Tx`` (see :mod:`moot.ledger.sqltx`); the ledger opens the
transaction and reads the clock.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from moot.ledger.sqltx import Tx


@dataclass(frozen=True)
class BatchClaim:
    """A line this host took: ``claim`` is the line's claim number, which its finish must name."""

    line: int
    claim: int


@dataclass(frozen=True)
class BatchProgress:
    """Where a shared batch stands across every host."""

    lines: int
    done: int
    running: int
    waiting: int


def open_batch(tx: Tx, batch_id: str, name: str, lines: Sequence[int], now: str) -> None:
    """Create the batch and its lines, unless another host already has (then nothing changes)."""
    created = tx.run(
        "INSERT INTO batches (id, name, lines, created_at) VALUES (?, ?, ?, ?) ON CONFLICT (id) DO NOTHING",
        (batch_id, name, len(lines), now),
    )  # a host opening it at the same moment waits for this insert, then inserts nothing
    if created != 1:
        return
    for line in lines:
        tx.run("INSERT INTO batch_lines (batch_id, line, status) VALUES (?, ?, 'waiting')", (batch_id, line))


def claim_line(tx: Tx, batch_id: str, host: str, now: str, expires_at: str, skip_locked: str) -> BatchClaim | None:
    """Take the first line that waits or whose lease ran out; None when every line is done or held."""
    row = tx.one(
        "SELECT line, claims FROM batch_lines WHERE batch_id = ? AND (status = 'waiting' OR "
        "(status = 'running' AND lease_expires_at <= ?)) ORDER BY line LIMIT 1" + skip_locked,
        (batch_id, now),
    )
    if row is None:
        return None
    line, claims = int(row[0]), int(row[1]) + 1
    tx.run(
        "UPDATE batch_lines SET status = 'running', host = ?, claims = ?, lease_expires_at = ? "
        "WHERE batch_id = ? AND line = ?",
        (host, claims, expires_at, batch_id, line),
    )
    return BatchClaim(line, claims)


def heartbeat(tx: Tx, batch_id: str, host: str, now: str, expires_at: str) -> int:
    """Extend the lease of every line ``host`` still holds (an expired one is no longer its); how many."""
    return tx.run(
        "UPDATE batch_lines SET lease_expires_at = ? WHERE batch_id = ? AND host = ? AND status = 'running' "
        "AND lease_expires_at > ?",
        (expires_at, batch_id, host, now),
    )


def finish_line(tx: Tx, batch_id: str, host: str, claim: BatchClaim, result: str, now: str) -> bool:
    """Mark the line done with its JSON row, if this claim still holds it; whether it did."""
    return (
        tx.run(
            "UPDATE batch_lines SET status = 'done', finished_at = ?, result = ?, lease_expires_at = NULL "
            "WHERE batch_id = ? AND line = ? AND host = ? AND claims = ? AND status = 'running'",
            (now, result, batch_id, claim.line, host, claim.claim),
        )
        == 1
    )


def progress(tx: Tx, batch_id: str) -> BatchProgress:
    counts: dict[str, int] = dict(
        tx.all("SELECT status, COUNT(*) FROM batch_lines WHERE batch_id = ? GROUP BY status", (batch_id,))
    )
    done, running, waiting = (int(counts.get(status, 0)) for status in ("done", "running", "waiting"))
    return BatchProgress(done + running + waiting, done, running, waiting)
