"""Thousands of scripted debates in one process, with durable records and one SQLite ledger: memory does
not grow with the count, and every record is valid.

Nine debates in ten run through moot's engine, cycling the four protocols, each in its own work root;
every tenth is a six-turn duel through the agent tools (moot.tools) against one ledger file shared by
the whole soak, so the ledger's connection and the tools' caches are soaked too. Every record is
checked with ``moot check`` (check_path) as soon as its debate ends — in the long run as well, after
which its work root is deleted to keep the disk small.

The records are written by moot's durable writer (temp file, fsync, rename, directory fsync) onto the
tmpfs /dev/shm where the machine has one: there an fsync costs microseconds instead of the shared
disk's milliseconds (measured: 0.11 s instead of 0.37 s a debate), and this test measures moot's memory,
not the disk.
"""

from __future__ import annotations

import shutil
import tempfile
import time
from collections.abc import Iterator
from itertools import cycle
from pathlib import Path

import pytest
from reliability_helpers import LONG, record_result, scale
from soak_helpers import ENGINE_DEBATES, engine_debate, growth_per_debate, rss_bytes, tools_duel

from moot import tools
from moot.detect import check_path

DEBATES = scale(200, 10_000)
WARMUP = scale(40, 500)  # imports, caches and allocator arenas settle in the first debates
CHECKPOINT = scale(20, 250)
TOOLS_EVERY = 10
MiB = 1024 * 1024

# The bound on growth after warm-up. A leak of LEAK_BYTES per debate would add LEAK_BYTES × (debates
# after warm-up): 4 KiB × 9,500 = 37 MiB in the long run, far above NOISE (what RSS moves by without a
# leak: allocator arenas and fragmentation; measured here +0.3 MiB over the long run's 9,500 debates and
# -1 MiB over the quick run's 160), so the long run catches a leak of a few KB a debate. The quick run
# can only catch leaks of tens of KB a debate: its bound is NOISE plus what 32 KiB a debate would add.
NOISE = 4 * MiB
LEAK_BYTES = scale(32 * 1024, 4 * 1024)


TMPFS = Path("/dev/shm")


@pytest.fixture
def records_dir(tmp_path: Path) -> Iterator[Path]:
    if not TMPFS.is_dir():
        yield tmp_path
        return
    where = Path(tempfile.mkdtemp(prefix="moot-soak-", dir=TMPFS))
    try:
        yield where
    finally:
        shutil.rmtree(where, ignore_errors=True)


def test_soak_memory_stays_flat_and_every_record_is_valid(records_dir: Path) -> None:
    ledger_root = records_dir / "ledger"
    ledger_root.mkdir()
    protocols = cycle(ENGINE_DEBATES)
    first_ending: dict[str, tuple[str | None, int]] = {}  # every later debate of a protocol must end the same
    invalid: list[str] = []
    samples: list[tuple[int, int]] = []
    warm = 0
    started = time.monotonic()
    with tools.open_workspace(ledger_root) as ws:
        for number in range(1, DEBATES + 1):
            root = records_dir / "debates" / str(number)
            if number % TOOLS_EVERY == 0:
                protocol = "tools-duel"
                record, outcome = tools_duel(ws, number)
            else:
                protocol = next(protocols)
                result = engine_debate(protocol, root)
                record, outcome = result.record_path, None if result.outcome is None else result.outcome.name
            report = check_path(record)
            if report.exit_code != 0:
                invalid.append(f"{record}: {[str(v) for v in report.violations]}")
            ending = (outcome, report.summary.turns if report.summary is not None else -1)
            assert first_ending.setdefault(protocol, ending) == ending, f"debate {number} ({protocol}): {ending}"
            if LONG and root.exists():
                shutil.rmtree(root)
            if number == WARMUP:
                warm = rss_bytes()
            if number >= WARMUP and number % CHECKPOINT == 0:
                samples.append((number, rss_bytes()))
                print(f"soak: {number} debates, {time.monotonic() - started:.0f} s, RSS {samples[-1][1] / MiB:.1f} MiB")
        ledger_duels = len(list((ledger_root / "debates").glob("*.md")))
    seconds = time.monotonic() - started
    end = rss_bytes()
    slope = growth_per_debate(samples)
    figures = {
        "debates": DEBATES,
        "engine_debates": DEBATES - DEBATES // TOOLS_EVERY,
        "tool_duels_on_one_sqlite_ledger": ledger_duels,
        "seconds": round(seconds, 1),
        "rss_after_warmup_mib": round(warm / MiB, 2),
        "rss_end_mib": round(end / MiB, 2),
        "rss_max_mib": round(max(warm, end, *(y for _, y in samples)) / MiB, 2),
        "growth_mib": round((end - warm) / MiB, 2),
        "growth_per_1000_debates_kib": round(slope * 1000 / 1024, 1),
        "bound_mib": round((NOISE + LEAK_BYTES * (DEBATES - WARMUP)) / MiB, 2),
        "records_checked": DEBATES,
        "records_valid": DEBATES - len(invalid),
        "endings": {p: list(e) for p, e in first_ending.items()},
    }
    print(figures)
    assert not invalid, invalid[:5]
    assert ledger_duels == DEBATES // TOOLS_EVERY
    assert first_ending["tools-duel"][0] == "ACCEPTED_CONSENSUS"
    assert end - warm < NOISE + LEAK_BYTES * (DEBATES - WARMUP), figures
    record_result("soak", figures)


@pytest.mark.parametrize("protocol", sorted(ENGINE_DEBATES))
def test_the_scripted_agent_writes_no_hollow_turn(tmp_path: Path, protocol: str) -> None:
    """The soak's records are checked by exit code, which a warning leaves at 0: an echo would go unseen."""
    result = engine_debate(protocol, tmp_path / protocol)
    report = check_path(result.record_path)
    assert [str(v) for v in report.violations] == []
