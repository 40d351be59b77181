"""SIGKILL ``moot run``/``moot resume`` at random moments in all four protocols, then resume until the debate ends.

After every kill the record passes ``moot check`` (or is reported repairable, which the next resume
finishes) and its turns are a clean start of the turns an unkilled run writes; at the end every
debate has exactly the unkilled run's turns and outcome. The scripted participant
(protocol_agent.py, a ``cmd:`` agent) derives each reply from the request and sleeps a little,
so kills land in moot's start-up, inside agent calls and inside commits.

The kill moments come from a seeded RNG; the seed is printed and is in every failure message, and
``MOOT_CRASH_SEED=N`` reuses it (the moments repeat, though the machine's timing varies).
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from crash_helpers import (
    SCRIPTED_AGENT,
    SOURCE_NAME,
    Tally,
    check_after_kill,
    find_record,
    finished_report,
    minutes_written,
    prepare_root,
    read_turns,
    run_or_resume_args,
    sealed_problems,
    start_moot,
    wait_for_a_new_turn,
)
from protocol_agent import ASKED_ENV, SLEEP_ENV
from reliability_helpers import LONG, record_result, scale

from moot.core.files import atomic_write_text
from moot.detect import check_path
from moot.protocols.roundtable.machine import AGENDA_FILE
from moot.protocols.roundtable.record import ROUNDTABLE_DIR, meeting_dir, render_agenda

SEED = int(os.environ.get("MOOT_CRASH_SEED") or random.SystemRandom().randrange(2**31))
KILLS_PER_PROTOCOL = scale(3, 30)
LOCAL_KILLS_PER_PROTOCOL = scale(0, 2)
AGENT_SLEEP_S = 0.08  # each scripted reply waits 0..this long
RUN_TIMEOUT_S = 300  # an unkilled scripted run that takes longer has hung
MAX_DEBATES = 20 * KILLS_PER_PROTOCOL  # kills that keep missing the runs fail the test instead of looping
# A reply of the embedded model took 40 s on this 2-core machine under load (a 2-turn duel with two
# repairs: 200 s), so a local run gets far longer before it counts as hung.
LOCAL_RUN_TIMEOUT_S = 1200

# What each debate runs; each ends by the protocol's own rule well before any budget.
COUNCIL_MEMBERS = [arg for name in ("ada", "bo", "cy", "dee") for arg in ("--member", f"{name}={SCRIPTED_AGENT}")]
SCRIPTED_RUNS = {
    "critique": ["--topic", "Adopt a monorepo", "--max-rounds", "4"],  # 8 turns, DONE
    "duel": [SOURCE_NAME],  # 6 turns, ACCEPTED_CONSENSUS
    "agora": ["--topic", "Adopt a monorepo", "--max-turns", "12"],  # a mediator, CONSENSUS
    "roundtable": ["--topic", "Cache design", "--speakers", "architect,reviewer,security", "--max-rounds", "2"],
    # Two sealed stages of four members asked at once, then the chairman: SYNTHESIZED after 9 entries.
    "council": ["--question", "Should tenants share one cache?", *COUNCIL_MEMBERS, "--seed", "5"],
}
LOCAL_RUNS = {  # small, so a debate on the embedded model takes minutes, not tens of minutes
    "critique": ["--topic", "Adopt a monorepo", "--max-rounds", "1"],
    "duel": [SOURCE_NAME, "--max-turns", "2"],
    "agora": ["--topic", "Tabs or spaces", "--max-turns", "4"],
    "roundtable": ["--topic", "Cache design", "--speakers", "architect,reviewer", "--max-rounds", "1"],
}


@dataclass(frozen=True)
class Reference:
    """An unkilled run of the same debate: what every killed one must end with, and how long it takes."""

    headings: list[str]
    outcome: str
    turns: int
    wall_s: float
    startup_s: float  # the part of wall_s before the debate's first request


def reference_run(protocol: str, root: Path, env: dict[str, str]) -> Reference:
    prepare_root(root)
    started = time.monotonic()
    process = start_moot(root, ["run", protocol, *SCRIPTED_RUNS[protocol]], SCRIPTED_AGENT, env)
    stdout, stderr = process.communicate(timeout=RUN_TIMEOUT_S)
    wall = time.monotonic() - started
    report = finished_report(process, stdout, stderr)
    record = find_record(protocol, root)
    assert record is not None and check_path(record).exit_code == 0
    turns = read_turns(protocol, record)
    assert turns.consecutive and len(turns.headings) + minutes_written(protocol, record) == report["turns"] > 0
    startup = max(0.0, wall - report["elapsed_s"])
    return Reference(turns.headings, report["outcome"], report["turns"], wall, startup)


# Called once the run to kill has started, with the process and the turns on disk before it: how many
# more seconds to let it run before the SIGKILL (it may wait for something first).
KillMoment = Callable[["subprocess.Popen[str]", int], float]


def kill_and_resume(
    protocol: str,
    root: Path,
    run_args: list[str],
    agents: str | None,
    env: dict[str, str],
    kills: int,
    kill_moment: KillMoment,
    reference: list[str] | None,
    tally: Tally,
    finish_within_s: float = RUN_TIMEOUT_S,
) -> dict[str, Any]:
    """Start the debate and SIGKILL it ``kills`` times at ``kill_moment`` (a resume each time), then let a
    resume finish it; a run that ends before its kill ends the debate too."""
    prepare_root(root)
    tally.debates += 1
    on_disk = 0
    for kill in range(kills + 1):
        args = run_or_resume_args(protocol, root, run_args)
        ended = ended_report(protocol, root) if args[0] == "resume" else None
        if ended is not None:  # killed after its last write: there is nothing left to resume
            return ended
        tally.resumes += args[0] == "resume"
        started = time.monotonic()
        process = start_moot(root, args, agents, env)
        delay = kill_moment(process, on_disk) if kill < kills else finish_within_s
        try:
            stdout, stderr = process.communicate(timeout=delay)
            if args[0] == "run" and kill < kills:  # the whole debate ran before its kill came
                wall = time.monotonic() - started
                tally.fastest_unkilled_run_s = min(wall, tally.fastest_unkilled_run_s or wall)
        except subprocess.TimeoutExpired:
            process.kill()  # SIGKILL
            process.communicate()
            assert kill < kills, f"{protocol}: moot {args[0]} did not finish in {finish_within_s} s"
            tally.kills += 1
            record = find_record(protocol, root)
            if record is None:
                tally.kills_before_record += 1
                continue
            context = f"{protocol} kill {tally.kills} after {delay:.3f} s, seed {SEED}"
            count = check_after_kill(protocol, record, reference, tally, context)
            tally.kills_before_a_new_turn += count <= on_disk
            on_disk = count
            continue
        return finished_report(process, stdout, stderr)
    raise AssertionError("unreachable: the last run is never killed")


def ended_report(protocol: str, root: Path) -> dict[str, Any] | None:
    """The outcome and turns of a record that reached its protocol outcome, as a run's report gives them: a
    run counts the moderator's minutes as a turn, the record's own summary counts speeches."""
    record = find_record(protocol, root)
    report = check_path(record) if record is not None else None
    summary = report.summary if report is not None else None
    ended = summary is not None and summary.outcome is not None and summary.next_speaker is None
    # A meeting's minutes are its last write: killed before their turn.json, it still reads as concluding.
    if record is None or report is None or not (ended or minutes_written(protocol, record)):
        return None
    if report.repairable:  # killed between its last write and the one that commits it (turn.json, the chain)
        resumed = start_moot(root, ["resume", str(record)], None, {})
        _, stderr = resumed.communicate(timeout=RUN_TIMEOUT_S)
        report = check_path(record)
        assert "nothing to resume" in stderr and report.exit_code == 0, stderr
        summary = report.summary
    assert summary is not None and summary.outcome is not None, f"{record} has ended without an outcome"
    turns = len(read_turns(protocol, record).headings) + minutes_written(protocol, record)
    return {"outcome": summary.outcome.name, "turns": turns}


@pytest.fixture(scope="module")
def tallies() -> Iterator[dict[str, Tally]]:
    """Each passing test's tally; the long run records them all once the module is done."""
    found: dict[str, Tally] = {}
    yield found
    scripted = {p: t for p, t in found.items() if p in SCRIPTED_RUNS}
    local = {p.removeprefix("local:"): t for p, t in found.items() if p.startswith("local:")}
    if len(scripted) == len(SCRIPTED_RUNS) and len(local) == len(LOCAL_RUNS):
        every = [*scripted.values(), *local.values()]
        record_result(
            "crash",
            {
                "seed": SEED,
                "kills": sum(t.kills for t in every),
                "scripted": {p: t.figures() for p, t in scripted.items()},
                "local": {p: t.figures() for p, t in local.items()},
                "lost_turns": sum(t.lost_turns for t in every),
                "duplicated_turns": sum(t.duplicated_turns for t in every),
            },
        )


@pytest.fixture
def rng(request: pytest.FixtureRequest) -> random.Random:
    """The test's kill moments, from the seed; printed so that a failure's output shows it."""
    print(f"crash seed {SEED} (rerun with MOOT_CRASH_SEED={SEED})")
    return random.Random(f"{SEED}:{request.node.name}")


@pytest.mark.parametrize("protocol", list(SCRIPTED_RUNS))
def test_sigkill_at_random_moments_then_resume_loses_and_repeats_no_turn(
    protocol: str, tmp_path: Path, rng: random.Random, tallies: dict[str, Tally]
) -> None:
    env = {SLEEP_ENV: f"{AGENT_SLEEP_S}:{SEED}"}
    reference = reference_run(protocol, tmp_path / "reference", env)
    tally = Tally()

    def kill_moment(_: subprocess.Popen[str], on_disk: int) -> float:
        """From inside moot's start-up to the end of the turns still to come: in start-up, agent calls and commits.
        The reference's times shrink to a faster whole run seen since (timed beside a busy worker, the reference
        can take several times longer than the runs after it, whose kills would then all come too late)."""
        fastest = tally.fastest_unkilled_run_s
        scale = min(1.0, fastest / reference.wall_s) if fastest is not None else 1.0
        startup_s, debate_s = reference.startup_s * scale, (reference.wall_s - reference.startup_s) * scale
        left = 1 - on_disk / reference.turns
        return rng.uniform(startup_s / 2, startup_s + debate_s * left)

    while tally.kills < KILLS_PER_PROTOCOL:
        assert tally.debates < MAX_DEBATES, f"{protocol}: {tally.kills} kills in {tally.debates} debates, seed {SEED}"
        root = tmp_path / f"debate-{tally.debates + 1}"
        kills = min(KILLS_PER_PROTOCOL - tally.kills, rng.randint(1, 4))  # several debates, several kills each
        report = kill_and_resume(
            protocol, root, SCRIPTED_RUNS[protocol], SCRIPTED_AGENT, env, kills, kill_moment, reference.headings, tally
        )
        context = f"{protocol} debate {tally.debates}, seed {SEED}"
        record = find_record(protocol, root)
        assert record is not None, context
        assert check_path(record).exit_code == 0, context  # a repairable record was repaired by the resume
        assert read_turns(protocol, record).headings == reference.headings, context
        assert (report["outcome"], report["turns"]) == (reference.outcome, reference.turns), context
    assert not tally.problems, tally.problems
    assert tally.lost_turns == tally.duplicated_turns == 0
    print(f"{protocol}: {tally.figures()}")
    tallies[protocol] = tally


def local_kill_moment(protocol: str, root: Path, rng: random.Random) -> KillMoment:
    """The first kill lands while the model writes a turn (a few seconds after the one before it landed),
    the later ones in the first seconds of a resume (loading the model, or its first reply)."""
    kills = 0

    def moment(process: subprocess.Popen[str], on_disk: int) -> float:
        nonlocal kills
        kills += 1
        if kills == 1:
            wait_for_a_new_turn(protocol, root, process, on_disk, LOCAL_RUN_TIMEOUT_S)
            return rng.uniform(0.0, 10.0)
        return rng.uniform(2.0, 12.0)

    return moment


@pytest.mark.skipif(not LONG, reason="the long run only: the embedded model's own crash tests run in tests/engine")
@pytest.mark.parametrize("protocol", list(LOCAL_RUNS))
def test_sigkill_on_the_embedded_model_then_resume_ends_with_a_valid_record(
    protocol: str, tmp_path: Path, rng: random.Random, tallies: dict[str, Tally]
) -> None:
    tally = Tally()
    report = kill_and_resume(
        protocol, tmp_path, LOCAL_RUNS[protocol], None, {}, LOCAL_KILLS_PER_PROTOCOL,
        local_kill_moment(protocol, tmp_path, rng), None, tally, LOCAL_RUN_TIMEOUT_S,
    )  # fmt: skip
    record = find_record(protocol, tmp_path)
    assert record is not None
    assert check_path(record).exit_code == 0, f"seed {SEED}"
    turns = read_turns(protocol, record)
    assert turns.consecutive and report["turns"] == len(turns.headings) + minutes_written(protocol, record), (
        turns.numbers,
        report,
    )
    assert not tally.problems, tally.problems
    print(f"local {protocol}: {tally.figures()} outcome {report['outcome']}")
    tallies[f"local:{protocol}"] = tally


def test_a_kill_while_a_meeting_is_created_leaves_no_half_meeting(tmp_path: Path) -> None:
    """What a SIGKILL of ``moot run roundtable`` leaves inside start_meeting, made exactly so (the random kills
    above hit this window of a few milliseconds only rarely): a staging directory with the agenda but no
    turn.json. The meeting's own name stays free, so running it again starts it and the record checks clean."""
    args = ["--topic", "Cache design", "--speakers", "architect,reviewer", "--max-rounds", "1"]
    staging = tmp_path / ROUNDTABLE_DIR / ".new-meeting.0123456789abcdef.tmp"
    atomic_write_text(
        staging / AGENDA_FILE, render_agenda("cache-design", "## Topic\n\nCache design", ("architect", "reviewer"), 1)
    )
    assert not meeting_dir(tmp_path, "cache-design").exists()
    again = start_moot(tmp_path, run_or_resume_args("roundtable", tmp_path, args), SCRIPTED_AGENT, {})
    _, stderr = again.communicate(timeout=RUN_TIMEOUT_S)
    assert again.returncode in (0, 1), stderr
    record = find_record("roundtable", tmp_path)
    assert record == meeting_dir(tmp_path, "cache-design") and check_path(record).exit_code == 0


def test_a_kill_inside_a_sealed_phase_resumes_losing_nothing_asking_nothing_twice_revealing_nothing_early(
    tmp_path: Path,
) -> None:
    """SIGKILL ``moot run council`` once some members' sealed answers are committed and others are still being
    asked; the record shows none of them yet, and ``moot resume`` asks only the others and reveals them all."""
    asked = tmp_path / "asked.txt"
    env = {SLEEP_ENV: f"1.5:{SEED}", ASKED_ENV: str(asked)}  # answers land over 1.5 s, so a kill can fall between
    root = prepare_root(tmp_path / "council")
    process = start_moot(root, ["run", "council", *SCRIPTED_RUNS["council"]], None, env)

    def committed_answers() -> dict[str, str]:
        record = find_record("council", root)
        sidecar = record and record.with_name(f".{record.name}.sealed.jsonl")
        if not (sidecar and sidecar.exists()):
            return {}
        rows = [json.loads(line) for line in sidecar.read_text(encoding="utf-8").splitlines() if line.endswith("}")]
        return {row["role"]: row["reply"] for row in rows if row["phase"] == "stage-1"}

    deadline = time.monotonic() + RUN_TIMEOUT_S
    committed: dict[str, str] = {}
    while process.poll() is None and time.monotonic() < deadline and not committed:
        committed = committed_answers()
        time.sleep(0.02)
    process.kill()
    process.communicate()
    time.sleep(0.5)  # the agents it had started log their request first thing
    committed = committed_answers()  # read again: another answer may have been committed before the kill landed
    assert 0 < len(committed) < 4, f"the kill missed the sealed phase: {sorted(committed)} committed, seed {SEED}"
    record = find_record("council", root)
    assert record is not None
    assert "## Stage" not in record.read_text(encoding="utf-8")  # nothing revealed before every answer is in
    assert check_path(record).exit_code == 0
    asks_before = asked.read_text(encoding="utf-8").splitlines()

    resumed = start_moot(root, ["resume", str(record)], None, env)
    stdout, stderr = resumed.communicate(timeout=RUN_TIMEOUT_S)
    report = finished_report(resumed, stdout, stderr)
    assert report["outcome"] == "SYNTHESIZED" and report["turns"] == 9
    asks_after = asked.read_text(encoding="utf-8").splitlines()[len(asks_before) :]
    answers_asked = [line.split()[0] for line in asks_after if line.split()[1:] == ["answer", "confidence"]]  # stage 1
    assert not set(answers_asked) & set(committed), f"committed members asked again: {answers_asked}"
    assert sorted(answers_asked) == sorted({"ada", "bo", "cy", "dee"} - set(committed))
    text = record.read_text(encoding="utf-8")
    for reply in committed.values():  # each committed answer is in the record exactly as it was committed
        assert text.count("> " + json.loads(reply)["answer"]) == 1
    assert check_path(record).exit_code == 0 and sealed_problems("council", record) == []
