"""The Council's pure parts: the seeded shuffle, redaction, the Borda count and Kendall's W, the stage rules."""

from __future__ import annotations

import pytest

from moot.protocols.council.machine import (
    CHAIRMAN,
    Answer,
    CouncilConfig,
    CouncilProtocol,
    CouncilState,
    Dissent,
    Member,
    Review,
    Synthesis,
    borda,
    kendall_w,
    label,
    redact,
    review_order,
    unmasked,
)

NAMES = ["ada", "bo", "cy", "dee"]


def config(names: list[str] = NAMES, seed: int = 11) -> CouncilConfig:
    models = ["openai:gpt-4o-mini", "anthropic:claude-sonnet-4", "local", "ollama:qwen2.5:7b"]
    members = tuple(Member(name=n, model=models[i % len(models)]) for i, n in enumerate(names))
    return CouncilConfig(question="Q?", members=members, chairman=CHAIRMAN, chairman_model="openai:gpt-4o", seed=seed)


def answered(names: list[str]) -> CouncilState:
    return CouncilState(answers=tuple(Answer(member=n, text=f"answer of {n}", digest="d") for n in names))


def reviewed(cfg: CouncilConfig, order: list[str]) -> CouncilState:
    """Every member ranks the others as ``order`` ranks them (full agreement)."""
    state = answered(order)
    reviews = []
    for reviewer in cfg.names:
        shown = review_order(cfg.seed, reviewer, cfg.names)
        ranked = [m for m in order if m != reviewer]
        ranking = tuple(label(shown.index(m)) for m in ranked)
        reviews.append(Review(reviewer=reviewer, shown=tuple(shown), ranking=ranking, reasons=("r",) * len(ranking)))
    return CouncilState(answers=state.answers, reviews=tuple(reviews))


def test_the_shuffle_is_fixed_by_the_seed_and_differs_between_reviewers() -> None:
    assert review_order(5, "ada", NAMES) == review_order(5, "ada", NAMES)
    orders = {tuple(review_order(seed, "ada", NAMES)) for seed in range(20)}
    assert len(orders) > 1 and all("ada" not in order for order in orders)
    assert {tuple(sorted(review_order(5, r, NAMES))) for r in NAMES} == {tuple(sorted(set(NAMES) - {r})) for r in NAMES}


def test_redaction_takes_out_names_and_models_but_not_ordinary_words() -> None:
    cfg = config()
    text = "As Ada (gpt-4o-mini) said, a local cache is fine; claude-sonnet-4 and qwen2.5:7b disagree. Adam agrees."
    redacted = redact(text, cfg)
    assert unmasked(redacted, cfg) == []
    assert "local cache" in redacted and "Adam" in redacted  # a bare backend name and a longer word stay
    assert unmasked(text, cfg) == ["Ada", "claude-sonnet-4", "gpt-4o-mini", "qwen2.5:7b"]


def test_full_agreement_gives_w_one_and_the_borda_order() -> None:
    for names in (NAMES[:3], NAMES):
        cfg = config(names)
        state = reviewed(cfg, names)
        assert kendall_w(state) == pytest.approx(1.0)
        points = [p for _, p in borda(cfg, state)]
        assert [m for m, _ in borda(cfg, state)] == names and points == sorted(points, reverse=True)


def test_opposed_reviewers_give_a_low_w() -> None:
    cfg = config(NAMES[:3])
    # ada prefers bo, bo prefers cy, cy prefers ada: a cycle, no agreement at all.
    prefer = {"ada": ["bo", "cy"], "bo": ["cy", "ada"], "cy": ["ada", "bo"]}
    reviews = []
    for reviewer, ranked in prefer.items():
        shown = review_order(cfg.seed, reviewer, cfg.names)
        reviews.append(
            Review(
                reviewer=reviewer,
                shown=tuple(shown),
                ranking=tuple(label(shown.index(m)) for m in ranked),
                reasons=("r", "r"),
            )
        )
    state = CouncilState(answers=answered(cfg.names).answers, reviews=tuple(reviews))
    assert kendall_w(state) == pytest.approx(0.0)
    assert [p for _, p in borda(cfg, state)] == [1, 1, 1]  # a three-way tie keeps the listed order


def test_w_is_not_measurable_with_two_answers_or_a_missing_review() -> None:
    cfg = config(NAMES[:2])
    assert kendall_w(reviewed(cfg, NAMES[:2])) is None
    cfg3 = config(NAMES[:3])
    full = reviewed(cfg3, NAMES[:3])
    assert kendall_w(CouncilState(answers=full.answers, reviews=full.reviews[:2])) is None


def test_stages_follow_each_other_and_no_one_reviews_twice() -> None:
    cfg = config(NAMES[:3])
    machine = CouncilProtocol(cfg)
    state = answered(NAMES[:2])
    assert machine.stage(state) == 1 and machine.pending(state) == ["cy"]
    early = Review(reviewer="ada", shown=("bo",), ranking=(label(0),), reasons=("r",))
    assert [v.rule for v in machine.validate(state, early)] == ["COUNCIL_STAGE_ORDER"]
    state = machine.apply(state, Answer(member="cy", failure="cy's agent failed"))
    assert machine.stage(state) == 2 and machine.pending(state) == ["ada", "bo"]  # cy has no answer to defend
    first = Review(reviewer="ada", shown=("bo",), ranking=(label(0),), reasons=("clear",))
    assert machine.validate(state, first) == []
    state = machine.apply(state, first)
    assert [v.rule for v in machine.validate(state, first)] == ["COUNCIL_STAGE_ORDER"]


def test_fewer_than_two_valid_answers_is_no_quorum() -> None:
    cfg = config(NAMES[:3])
    machine = CouncilProtocol(cfg)
    state = CouncilState(
        answers=(
            Answer(member="ada", text="yes", digest="d"),
            Answer(member="bo", failure="timeout"),
            Answer(member="cy", failure="timeout"),
        )
    )
    outcome = machine.outcome(state)
    assert outcome is not None and outcome.name == "NO_QUORUM" and not outcome.consensus
    assert machine.next_speaker(state) is None


def test_a_bad_configuration_is_named() -> None:
    bad = CouncilConfig(
        question=" ",
        members=(Member(name="a", model="local"), Member(name="Answer", model="local")),
        chairman="zed",
        seed=1,
    )
    problems = " ".join(bad.problems())
    assert "question is empty" in problems and "'a'" in problems and "'Answer'" in problems and "zed" in problems


def _cycle(cfg: CouncilConfig) -> CouncilState:
    """ada prefers bo, bo prefers cy, cy prefers ada: every member ends on the same Borda points."""
    prefer = {"ada": ["bo", "cy"], "bo": ["cy", "ada"], "cy": ["ada", "bo"]}
    reviews = []
    for reviewer, ranked in prefer.items():
        shown = review_order(cfg.seed, reviewer, cfg.names)
        ranking = tuple(label(shown.index(m)) for m in ranked)
        reviews.append(Review(reviewer=reviewer, shown=tuple(shown), ranking=ranking, reasons=("r", "r")))
    return CouncilState(answers=answered(cfg.names).answers, reviews=tuple(reviews))


def _synthesized(cfg: CouncilConfig, state: CouncilState, basis: str) -> CouncilState:
    aggregate = borda(cfg, state)
    dissent = tuple(Dissent(member=m, position="p", why_not_adopted="w") for m, _ in aggregate[1:])
    synthesis = Synthesis(
        chairman=CHAIRMAN, ranking=tuple(aggregate), agreement=0.0, answer="A.", basis=basis, dissent=dissent
    )
    return CouncilState(answers=state.answers, reviews=state.reviews, synthesis=synthesis)


def test_a_tie_is_reported_as_a_tie_and_the_chairman_may_build_on_any_member_tied_first() -> None:
    cfg = config(NAMES[:3])
    protocol = CouncilProtocol(cfg)
    tied = _cycle(cfg)
    on_cy = _synthesized(cfg, tied, "Built on cy's answer, tied first with the others.")
    outcome = protocol.outcome(on_cy)
    assert outcome is not None and "ranked first" not in outcome.reason
    assert "no answer ranked above another (ada, bo and cy tied with 1 Borda point(s) each)" in outcome.reason
    assert not [v for v in protocol.validate(tied, on_cy.synthesis) if v.rule == "COUNCIL_CHAIRMAN_RANKING"]
    on_nobody = _synthesized(cfg, tied, "Built on the clearest answer.")
    assert [v.rule for v in protocol.validate(tied, on_nobody.synthesis)] == ["COUNCIL_CHAIRMAN_RANKING"]

    ordered = reviewed(cfg, NAMES[:3])  # full agreement: one member first
    outcome = protocol.outcome(_synthesized(cfg, ordered, "ada's answer."))
    assert outcome is not None and "; ada ranked first;" in outcome.reason
