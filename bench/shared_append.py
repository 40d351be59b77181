"""shared_append: what storing each turn's text in the ledger costs an append, against the digest-only append.

An agent tool's append is, on the ledger's side, one guarded write under the lease. Before the ledger held
the debate, that write read the recorded digests and stored one more digest; now it reads the debate (the
turns' text too, from which the host's record is checked and then written) and stores the turn's text with
its digest. Both are timed here on the same debates: six real duel turns (the
hand-written consensus duel, about 1 KB each) per debate, the two kinds interleaved debate by debate, one
process, PostgreSQL (``MOOT_TEST_DATABASE_URL``, else what ``.ci/postgres.sh`` prints; skipped when
unreachable) and SQLite for reference. The files themselves are not written here: both appends write the
same record.

A roundtable speech is the third kind: the same guarded write, storing the speech's text with where it goes
and the ``turn.json`` it commits (the six duel turns stand in for six speeches of about the same length).
"""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

from tests.ledger.ledger_helpers import PostgresSchema, join, secret_of

from bench.common import BenchResult, Table, fmt, fmt_ratio, median, ratio
from bench.leases import DEFAULT_POSTGRES_URL
from moot.core.chain import build_chain
from moot.ledger import Lease, LeaseGuard, Ledger, open_ledger
from moot.protocols.duel.record import parse_document
from moot.protocols.roundtable.machine import advance, opening_state, speech_file_name
from moot.protocols.roundtable.record import render_turn_json
from moot.protocols.roundtable.sharing import turn_files

EXAMPLE = Path(__file__).resolve().parents[1] / "tests" / "duel" / "examples" / "valid" / "consensus-six-turns.md"
KINDS = ("digest only", "with text", "speech")
SPEAKERS = ("architect", "reviewer", "operator")


def turn_texts() -> list[str]:
    document, _ = parse_document(EXAMPLE.read_text(encoding="utf-8"))
    if document is None:
        raise RuntimeError(f"{EXAMPLE} no longer parses")
    return document.turn_texts


def _guarded(ledger: Ledger, lease: Lease) -> AbstractContextManager[LeaseGuard]:
    """The lease holder's guarded write, as the agent tools open it."""
    return ledger.guarded_write(
        lease.debate_id,
        lease.participant_id,
        lease.lease_token,
        lease.fencing_token,
        participant_secret=secret_of(lease.participant_id),
    )


def _append_digest(ledger: Ledger, lease: Lease, number: int, row: dict[str, object], _text: str) -> None:
    with _guarded(ledger, lease) as guard:
        guard.turns()
        guard.record_turn(number, str(row["digest"]), str(row["chain"]))


def _append_text(ledger: Ledger, lease: Lease, number: int, row: dict[str, object], text: str) -> None:
    with _guarded(ledger, lease) as guard:
        guard.record()  # the debate, from which the host's record is checked and, after the commit, written
        guard.record_turn(number, str(row["digest"]), str(row["chain"]), body=text)


def _speech_files(number: int) -> str:
    """Where speech ``number`` goes and the turn.json it commits, as the roundtable's speak records them."""
    state = opening_state("cache", SPEAKERS, 2, "Read AGENDA.md and open the discussion.")
    for sequence in range(1, number + 1):
        state = advance(state, prompt=f"Read {speech_file_name(sequence, state.current_speaker)} and continue.")
    return turn_files(speech_file_name(number, SPEAKERS[(number - 1) % 3]), render_turn_json(state))


def _append_speech(ledger: Ledger, lease: Lease, number: int, row: dict[str, object], text: str) -> None:
    files = _speech_files(number)  # built before the transaction, as speak does
    with _guarded(ledger, lease) as guard:
        guard.record()
        guard.record_turn(number, str(row["digest"]), str(row["chain"]), body=text, files=files)


APPENDS: dict[str, Callable[[Ledger, Lease, int, dict[str, object], str], None]] = {
    "digest only": _append_digest,
    "with text": _append_text,
    "speech": _append_speech,
}


def one_debate(ledger: Ledger, root: Path, slug: str, kind: str, texts: list[str]) -> list[float]:
    """Seconds of each of the six appends of a new debate."""
    alice = join(ledger, root, "alice", slug=slug)
    join(ledger, root, "bob", slug=slug)
    lease = ledger.claim(alice.debate.id, alice.participant.id, participant_secret=secret_of(alice.participant.id))
    if not isinstance(lease, Lease):
        raise RuntimeError(f"a claim on a new debate was refused: {lease}")
    rows = build_chain(texts)
    times = []
    for number, (row, text) in enumerate(zip(rows, texts, strict=True), start=1):
        started = time.perf_counter()
        APPENDS[kind](ledger, lease, number, row, text)
        times.append(time.perf_counter() - started)
    ledger.release(
        lease.debate_id, lease.participant_id, lease.lease_token, participant_secret=secret_of(lease.participant_id)
    )
    return times


def measure(target: str, root: Path, debates: int, runs: int) -> dict[str, Any]:
    texts = turn_texts()
    per_run: dict[str, list[float]] = {kind: [] for kind in KINDS}
    with open_ledger(target) as ledger:
        for run_number in range(runs):
            samples: dict[str, list[float]] = {kind: [] for kind in KINDS}
            for i in range(debates):
                for kind in KINDS:  # interleaved: a slow moment of the machine hits both
                    samples[kind] += one_debate(ledger, root, f"append-{run_number}-{i}-{kind[0]}", kind, texts)
            for kind in KINDS:
                per_run[kind].append(median(samples[kind]))
    result: dict[str, Any] = {f"{kind} µs": 1e6 * median(per_run[kind]) for kind in KINDS}
    result["ratio"] = ratio(result["with text µs"], result["digest only µs"])
    result["speech ratio"] = ratio(result["speech µs"], result["digest only µs"])
    result["turn_bytes"] = [len(t.encode("utf-8")) for t in texts]
    return result


def postgres(debates: int, runs: int) -> dict[str, Any]:
    url = os.environ.get("MOOT_TEST_DATABASE_URL") or DEFAULT_POSTGRES_URL
    try:
        import psycopg
    except ModuleNotFoundError:
        return {"skipped": "psycopg is not installed"}
    schema = PostgresSchema(url)
    try:
        schema.execute("CREATE SCHEMA {}")
    except psycopg.Error as exc:
        return {"skipped": f"PostgreSQL is unreachable ({str(exc).strip().splitlines()[0]})"}
    try:
        with tempfile.TemporaryDirectory(prefix="moot-bench-append-") as tmp:
            return measure(schema.url, Path(tmp), debates, runs)
    finally:
        schema.execute("DROP SCHEMA {} CASCADE")


def sqlite(debates: int, runs: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="moot-bench-append-") as tmp:
        return measure(str(Path(tmp) / "work"), Path(tmp), debates, runs)


def run(quick: bool) -> BenchResult:
    debates, runs = (10, 1) if quick else (60, 3)
    data: dict[str, Any] = {
        "debates_per_run": debates,
        "runs": runs,
        "postgres": postgres(debates, runs),
        "sqlite": sqlite(debates, runs),
        "load_average": list(os.getloadavg()),
    }
    rows = []
    for name, key in (("PostgreSQL", "postgres"), ("SQLite", "sqlite")):
        found = data[key]
        if "skipped" in found:
            rows.append([name, "skipped", "", "", found["skipped"], ""])
            continue
        rows.append(
            [
                name,
                fmt(found["digest only µs"], 0),
                fmt(found["with text µs"], 0),
                fmt_ratio(found["ratio"]),
                fmt(found["speech µs"], 0),
                fmt_ratio(found["speech ratio"]),
            ]
        )
    table = Table(
        "One append's ledger write: turn text stored vs digest only (µs, median)",
        ["Ledger", "Digest only", "With the turn's text", "Ratio", "Roundtable speech", "Ratio"],
        rows,
        [
            f"{debates} debates × 6 turns per kind and run, kinds interleaved; median of {runs} run(s). "
            "With text: the guarded write reads the whole debate (turns with their text) and stores the turn's "
            "text; a speech also stores its file name and turn.json. Load average during the run: "
            + ", ".join(f"{x:.1f}" for x in data["load_average"])
            + "."
        ],
    )
    pg = data["postgres"]
    summary = (
        "PostgreSQL skipped"
        if "skipped" in pg
        else f"Storing the turn's text makes a PostgreSQL append's ledger write {fmt_ratio(pg['ratio'])} the "
        f"digest-only write it replaces; a roundtable speech's, {fmt_ratio(pg['speech ratio'])}"
    )
    losses = (
        []
        if "skipped" in pg or pg["ratio"] <= 1.2
        else [
            f"An append on PostgreSQL costs {fmt_ratio(pg['ratio'])} the digest-only append: it reads every turn's "
            "text (to check and write the host's record) and stores the new one."
        ]
    )
    return BenchResult("shared_append", summary, [table], data, losses=losses)
