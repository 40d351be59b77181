"""Properties: rendered records parse back unchanged, no input makes the readers raise, and random legal
debates end exactly as the seed's consensus rule (checked by an independent oracle here) says.

Example counts (kept modest; the CPU is shared): pure properties 250 examples each, properties that
write files 60.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Sequence
from pathlib import Path

from agora_helpers import EVIDENCE, config
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from moot.core.files import CheckReport, decode_text
from moot.core.machine import Outcome
from moot.detect import check_path
from moot.errors import Violation
from moot.protocols.agora import record as agora
from moot.protocols.agora.machine import (
    CONSENSUS,
    MEDIATOR,
    METHODOLOGIES,
    SIGNALS,
    TIMEOUT,
    AgoraConfig,
    AgoraProtocol,
    AgoraReply,
    AgoraState,
    AgoraTurn,
    Evidence,
    Position,
    Signal,
    line_problem,
    role_problem,
)

PURE = settings(max_examples=250, deadline=None)
ON_DISK = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])

roles = st.text(st.sampled_from("abcxyzABC_-.09éЖ架"), min_size=1, max_size=10).filter(
    lambda r: role_problem(r) is None
)
one_line = st.text(st.characters(blacklist_categories=("Cs", "Cc", "Zl", "Zp")), min_size=1, max_size=30).filter(
    lambda v: line_problem(v) is None
)
any_text = st.text(st.characters(codec="utf-8"), max_size=40)  # no lone surrogates
finite = st.floats(allow_nan=False, allow_infinity=False)
evidence = st.builds(Evidence, source=any_text, content=any_text, confidence=finite)


@st.composite
def configs(draw: st.DrawFn) -> AgoraConfig:
    names = draw(st.lists(roles, min_size=2, max_size=4, unique=True))
    return AgoraConfig(
        dialogue_id=draw(one_line),
        topic=draw(one_line),
        methodology=draw(st.sampled_from(METHODOLOGIES)),
        participants=tuple(Position(role=name, position=draw(one_line)) for name in names),
        max_turns=draw(st.integers(len(names) + 1, 999_999_999)),
        deadlock_window=draw(st.integers(1, 999_999_999)),
    )


@st.composite
def any_turns(draw: st.DrawFn) -> AgoraTurn:
    """Any well-typed turn, legal or not: the format must carry it unchanged."""
    return AgoraTurn(
        number=draw(st.integers(0, 999_999_999)),
        role=draw(roles),
        proposal_id=draw(st.none() | one_line),
        signal=draw(st.sampled_from(SIGNALS)),
        message=draw(any_text),
        confidence=draw(finite),
        target=draw(st.none() | any_text),
        evidence=tuple(draw(st.lists(evidence, max_size=3))),
    )


outcomes = st.none() | st.builds(
    lambda name, reason: Outcome(name=name, reason=reason, consensus=name == CONSENSUS),
    st.sampled_from([CONSENSUS, TIMEOUT]),
    one_line,
)
records = st.builds(
    agora.AgoraRecord,
    config=configs(),
    started=st.none() | one_line,
    turns=st.lists(any_turns(), max_size=4).map(tuple),
    outcome=outcomes,
)


@PURE
@given(records)
def test_parse_of_render_is_identity(record: agora.AgoraRecord) -> None:
    text = agora.render(record)
    assert agora.parse(text, "r.md") == (record, [])
    assert [source.text for source in agora.turn_sources(text)] == [agora.render_turn(t) for t in record.turns]


# --- fuzz: only typed results ------------------------------------------------------------------

FRAGMENTS = [
    "# Agora Debate: t",
    "- Dialogue: d",
    "- Methodology: opinion",
    "- Participants:",
    "  - a: x",
    "  - b: y",
    "## Turn 1 — a",
    "## Turn 2 — b",
    "## Outcome",
    "- Result: CONSENSUS",
    "Proposal: proposal-a",
    "```json",
    "```",
    '{"signal": "propose", "message": "m", "confidence": 0.5}',
    '{"signal": "approve", "message": "m", "confidence": 0.5, "target": "proposal-a"}',
    "",
]
record_like = st.lists(st.sampled_from(FRAGMENTS) | st.text(max_size=20), max_size=25).map("\n".join)


def assert_typed(result: tuple[agora.AgoraRecord | None, list[Violation]]) -> None:
    record, violations = result
    assert record is None or isinstance(record, agora.AgoraRecord)
    assert all(isinstance(v, Violation) and v.rule for v in violations)
    assert record is not None or violations  # no silent failure


@PURE
@given(st.text())
def test_arbitrary_text_gives_a_record_or_violations(text: str) -> None:
    assert_typed(agora.parse(text))


@PURE
@given(record_like)
def test_record_like_text_gives_a_record_or_violations(text: str) -> None:
    assert_typed(agora.parse(text))


@PURE
@given(st.binary())
def test_arbitrary_bytes_give_a_record_or_violations(data: bytes) -> None:
    text, problems = decode_text(data, "x.md")
    if text is None:
        assert problems
    else:
        assert_typed(agora.parse(text))


@ON_DISK
@given(st.binary(max_size=400) | record_like.map(lambda t: t.encode("utf-8")))
def test_check_never_raises(data: bytes) -> None:
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "debate.md"
        path.write_bytes(b"# Agora Debate: fuzz\n" + data)
        report = agora.check(path)
    assert isinstance(report, CheckReport) and report.protocol == "agora"


json_values = st.recursive(
    st.none() | st.booleans() | st.floats() | st.integers() | st.text(max_size=10),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=10), inner, max_size=4),
    max_leaves=12,
)
reply_like = st.fixed_dictionaries(
    {},
    optional={
        "signal": st.sampled_from([*SIGNALS, "agree"]) | json_values,
        "message": st.text(max_size=20) | json_values,
        "confidence": finite | json_values,
        "target": st.none() | st.text(max_size=10) | json_values,
        "evidence": st.lists(st.fixed_dictionaries({"source": st.text(max_size=5)}), max_size=2) | json_values,
    },
)


@PURE
@given(st.text() | json_values.map(json.dumps) | reply_like.map(json.dumps))
def test_parse_reply_gives_a_reply_or_located_violations(text: str) -> None:
    parsed = agora.parse_reply(text)
    if isinstance(parsed, AgoraReply):
        return
    assert parsed and all(v.rule in {"AGORA_TURN_JSON", "AGORA_TURN_SCHEMA"} and v.line for v in parsed)


# --- random legal debates against an independent reading of the seed ---------------------------


@st.composite
def legal_debates(draw: st.DrawFn) -> tuple[AgoraConfig, list[AgoraTurn], AgoraState]:
    """A debate where every turn is legal, stopped at its outcome or earlier."""
    names = [f"p{i}" for i in range(draw(st.integers(2, 4)))]
    cfg = config(
        *names,
        methodology=draw(st.sampled_from(METHODOLOGIES)),
        max_turns=draw(st.integers(len(names) + 1, 16)),
        deadlock_window=draw(st.integers(1, 3)),
    )
    protocol = AgoraProtocol(cfg)
    state, turns = protocol.initial_state(), list[AgoraTurn]()
    stop = draw(st.integers(0, cfg.max_turns))
    agreeable = draw(st.floats(0, 1))  # how often a speaker backs the first proposal: makes consensus common
    while state.outcome is None and len(turns) < stop:
        speaker = protocol.next_speaker(state)
        options: list[tuple[Signal, str | None]] = [("propose", None), ("no-change", None), ("defer", None)]
        options += [("counter", f"turn-{k}") for k in range(1, state.turns + 1)]
        options += [("approve", p) for p, owner in state.proposals.items() if owner != speaker]
        options += [("approve", f"turn-{k}") for k, p in state.proposal_turns.items() if state.proposals[p] != speaker]
        first = next(iter(state.proposals), None)
        if first is not None and draw(st.floats(0, 1)) < agreeable:
            signal: Signal = "no-change" if state.proposals[first] == speaker else "approve"
            target = None if signal == "no-change" else first
        else:
            signal, target = draw(st.sampled_from(options))
        with_evidence = cfg.methodology == "fact-based" or draw(st.booleans())
        reply = AgoraReply.model_validate(
            {
                "signal": signal,
                "message": "My point.",
                "confidence": draw(st.floats(0, 1)),
                "target": target,
                "evidence": EVIDENCE if with_evidence else (),
            }
        )
        turn = protocol.next_turn(state, reply)
        state, _ = protocol.step(state, turn)  # raises if the generator made an illegal turn
        turns.append(turn)
    return cfg, turns, state


def oracle_consensus(roles: Sequence[str], turns: Sequence[AgoraTurn]) -> bool:
    """The seed's rule, read directly off the turns: all last signals approve/no-change, at least one
    approve, all approves name one proposal P, no self-approval, and only P's owner holds no-change."""
    last = {t.role: t for t in turns if t.role in roles}
    if set(last) != set(roles) or any(t.signal not in {"approve", "no-change"} for t in last.values()):
        return False

    def proposal(target: str | None) -> str | None:
        if target is not None and target.startswith("turn-"):
            made = turns[int(target[5:]) - 1]
            return made.proposal_id
        return target

    approved = {proposal(t.target) for t in last.values() if t.signal == "approve"}
    if len(approved) != 1:
        return False
    (target,) = approved
    owner = next(t.role for t in turns if t.proposal_id == target)
    return all((t.signal == "approve") == (role != owner) for role, t in last.items())


@PURE
@given(legal_debates())
def test_outcome_follows_the_seed_consensus_rule(debate: tuple[AgoraConfig, list[AgoraTurn], AgoraState]) -> None:
    cfg, turns, state = debate
    earlier = [oracle_consensus(cfg.roles, turns[:k]) for k in range(1, len(turns))]
    assert not any(earlier)  # the debate stops at its first consensus
    now = oracle_consensus(cfg.roles, turns)
    if state.outcome is None:
        assert not now and len(turns) < cfg.max_turns
    elif state.outcome.name == CONSENSUS:
        assert now and state.outcome.consensus
    else:
        assert state.outcome.name == TIMEOUT and not now and len(turns) == cfg.max_turns


@PURE
@given(legal_debates())
def test_speakers_are_round_robin_with_the_mediator_after_deadlocked_rounds(
    debate: tuple[AgoraConfig, list[AgoraTurn], AgoraState],
) -> None:
    cfg, turns, state = debate
    n = len(cfg.roles)
    speakers = [t.role for t in turns]
    participants = [t for t in turns if t.role != MEDIATOR]
    assert [t.role for t in participants] == [cfg.roles[i % n] for i in range(len(participants))]
    # The round after which the deadlock window is first filled, from the participants' turns alone.
    streak, recruited_after = 0, None
    for r in range(len(participants) // n):
        streak = 0 if any(t.signal == "approve" for t in participants[r * n : (r + 1) * n]) else streak + 1
        if streak >= cfg.deadlock_window:
            recruited_after = r + 1
            break
    assert state.mediator_needed == (recruited_after is not None)

    def mediator_before(i: int) -> bool:
        return recruited_after is not None and i >= recruited_after * n and i % n == 0

    expected: list[str] = []
    for i, t in enumerate(participants):
        expected += [MEDIATOR, t.role] if mediator_before(i) else [t.role]
    if mediator_before(len(participants)):
        expected.append(MEDIATOR)  # due next, or spoke last
    assert speakers == expected[: len(speakers)] and len(expected) - len(speakers) in (0, 1)


@ON_DISK
@given(legal_debates())
def test_a_legal_debate_written_by_moot_checks_clean(debate: tuple[AgoraConfig, list[AgoraTurn], AgoraState]) -> None:
    cfg, turns, state = debate
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "debate.md"
        agora.create(path, cfg, started="2025-01-01T00:00:00Z")
        for turn in turns:
            agora.append_turn(path, turn)
        report = check_path(path)
        assert agora.parse(path.read_text(encoding="utf-8"))[0] == agora.AgoraRecord(
            config=cfg, started="2025-01-01T00:00:00Z", turns=tuple(turns), outcome=state.outcome
        )
    assert [v for v in report.violations if v.is_error] == []
    assert report.summary is not None and report.summary.outcome == state.outcome
