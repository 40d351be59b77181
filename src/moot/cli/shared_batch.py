"""``moot run --batch FILE --ledger postgresql://…``: one batch shared by every host that runs the same file.

The batch is named by the SHA-256 of the file, so hosts given the same file (each in its own work root, started
at any time) join the same batch in the shared ledger (:mod:`moot.ledger.batches`). Each of a process's
``--concurrency`` takers takes the next line with ``SELECT … FOR UPDATE SKIP LOCKED``, runs the debate here,
writes its record under this host's work root, and marks the line done; so every line runs once across hosts.

A taken line is leased for ``--lease`` seconds (60 by default) and a heartbeat thread extends the lease of every
line this process runs each quarter of it (15 s). A host that dies stops heartbeating: once the lease runs out,
another host takes the line and runs its debate afresh in its own work root. A host ends when every line is
done, waiting (a quarter lease between looks) while other hosts still run theirs, so that it can take over a
line whose host died.
"""

from __future__ import annotations

import asyncio
import json
import os
import secrets
import socket
import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import typer

from moot.errors import LedgerUnavailableError, UserError
from moot.ledger import Ledger, open_ledger
from moot.ledger.batches import BatchProgress

LEASE_S = 60.0  # a line's lease; its heartbeat and a waiting host's looks come every quarter of it


@dataclass(frozen=True)
class SharedBatch:
    """What a process needs to take part: the ledger, the batch's id and every line of its file."""

    url: str
    batch_id: str
    specs: dict[int, dict[str, Any]]
    lease_s: float = LEASE_S

    @property
    def lease(self) -> timedelta:
        return timedelta(seconds=self.lease_s)


def open_shared(url: str, batch_id: str, name: str, specs: dict[int, dict[str, Any]], lease_s: float) -> SharedBatch:
    """Join the batch (creating it when this host is the first); refused unless the ledger is PostgreSQL."""
    if not url.lower().startswith(("postgresql://", "postgres://")):
        raise UserError(
            f"--ledger {url} is not a postgresql:// URL; hosts share a batch through PostgreSQL (without --ledger "
            "the batch runs on this host alone)."
        )
    with open_ledger(url) as ledger:
        ledger.open_batch(batch_id, name, sorted(specs))
    return SharedBatch(url, batch_id, specs, lease_s)


def progress(shared: SharedBatch) -> BatchProgress:
    with open_ledger(shared.url) as ledger:
        return ledger.batch_progress(shared.batch_id)


def host_name() -> str:
    """This process among the batch's hosts: the machine, the process and a few random bytes."""
    return f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(2)}"


RunLine = Callable[[int, dict[str, Any]], Any]  # an awaitable of the line's JSON row


async def run_shared(shared: SharedBatch, concurrency: int, run_line: RunLine, emit: Callable[[Any], None]) -> None:
    """Take and run lines until every line of the batch is done, handing each row to ``emit``."""
    ledger = open_ledger(shared.url)
    host = host_name()
    stop = threading.Event()
    beat = threading.Thread(target=_heartbeat, args=(ledger, shared, host, stop), daemon=True)
    beat.start()
    try:
        await asyncio.gather(*(_taker(ledger, shared, host, run_line, emit) for _ in range(concurrency)))
    finally:
        stop.set()
        beat.join()
        ledger.close()


def _heartbeat(ledger: Ledger, shared: SharedBatch, host: str, stop: threading.Event) -> None:
    while not stop.wait(shared.lease_s / 4):
        try:
            ledger.heartbeat_batch(shared.batch_id, host, shared.lease)
        except LedgerUnavailableError:  # the next beat tries again; a lease that runs out meanwhile is taken over
            continue


async def _taker(
    ledger: Ledger, shared: SharedBatch, host: str, run_line: RunLine, emit: Callable[[Any], None]
) -> None:
    while True:
        claim = await asyncio.to_thread(ledger.claim_batch_line, shared.batch_id, host, shared.lease)
        if claim is None:
            now = await asyncio.to_thread(ledger.batch_progress, shared.batch_id)
            if now.done == now.lines:
                return
            await asyncio.sleep(shared.lease_s / 4)  # others still run theirs: take over any whose host dies
            continue
        row = await run_line(claim.line, shared.specs[claim.line])
        text = json.dumps(row, ensure_ascii=False)
        if not await asyncio.to_thread(ledger.finish_batch_line, shared.batch_id, host, claim, text):
            typer.echo(
                f"moot: line {claim.line} ran past its lease here and another host took it over; its record here "
                "is a second run.",
                err=True,
            )
        emit(row)


def summary(ran: list[int], now: BatchProgress) -> str:
    """What this host ran, and where the whole batch stands."""
    lines = ", ".join(str(line) for line in sorted(ran)) or "none"
    return (
        f"moot: this host ran {len(ran)} of the batch's {now.lines} debates (lines {lines}); the batch: "
        f"{now.done} done, {now.running} running, {now.waiting} waiting."
    )
