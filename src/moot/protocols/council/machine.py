"""The Council: members answer a question sealed, review each other's answers anonymously, and a
chairman writes the final answer from the aggregate ranking.

- **Stage 1.** Every member answers the question, sealed and in parallel: no answer is in another's
  prompt. A member that gives no valid answer is recorded as such. Fewer valid answers than the
  council's quorum (two unless its header says more) end the council in ``NO_QUORUM``.
- **Stage 2.** Every member with a valid answer reviews the *other* valid answers, shown as
  ``Answer A``, ``Answer B``, … in an order shuffled per reviewer by :func:`review_order` from the
  council's seed (passed in; the protocol draws no randomness of its own). Member names and models
  are taken out of everything a reviewer is shown (:func:`redact`) and must not appear in a review.
  A review ranks every answer it was shown, best first, with a reason for each. Reviews are sealed too.
- **Confidence.** A council whose header names its aggregation (every council moot writes now) has each
  member state a confidence, 0.0 to 1.0, with its answer and with its review; a record written before
  confidences names none and states none, and aggregates by Borda.
- **Stage 3.** The chairman writes the final answer. The aggregate ranking is the Borda count of the
  reviews (:func:`borda`: in a review of k answers, place p earns k - p points; with the ``confidence``
  aggregation each review's points are multiplied by its reviewer's stated confidence); agreement is
  Kendall's W for the balanced incomplete design the reviews form (:func:`kendall_w`). The chairman
  names the top-ranked answer's member in the basis and, for every other member's answer, what it
  held and why it was not adopted. A chairman that fails (its agent errors, or it gives no valid
  synthesis) is recorded as such, and the top-ranked member with a valid answer, other than the
  chairman, writes the synthesis in its place (:func:`fallback_for`); the outcome is then degraded. With two
  valid answers each reviewer ranks only the other's, so the reviews rank nothing: that synthesis is no consensus.

Pure: the seed, times and texts arrive in the configuration and the turns.
"""

from __future__ import annotations

import random
import re
import string
from dataclasses import dataclass, replace
from typing import ClassVar, Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field

from moot.core.confidence import in_range
from moot.core.machine import DeliberationProtocol, Outcome, Rule, RuleBook, Summary
from moot.errors import Violation

NAME = "council"
CHAIRMAN = "chairman"  # the role of a chairman that is not a member
MAX_MEMBERS = len(string.ascii_uppercase)  # a reviewer sees at most Answer A … Answer Z
SYNTHESIZED = "SYNTHESIZED"
NO_QUORUM = "NO_QUORUM"
FAILED = "FAILED"
QUORUM = 2  # the fewest valid answers a council needs, unless its header names more
RESERVED_NAMES = frozenset({CHAIRMAN, "answer", "moot"})
_MEMBER_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_-]{1,39}")
REDACTED = "[redacted]"
BORDA = "borda"  # each review's Borda points count the same
CONFIDENCE = "confidence"  # each review's Borda points are weighted by its reviewer's stated confidence
AGGREGATIONS = (BORDA, CONFIDENCE)
WEIGHTED_DECIMALS = 3  # confidence-weighted points as the record writes and compares them

RULES = RuleBook(
    [
        Rule(
            "COUNCIL_HEADER",
            "The record starts with '# Council: <title>', the question, the seed and 2 to 26 members with distinct "
            "names of 2-40 letters, digits, '-' or '_' (not 'chairman', 'answer' or 'moot'), names its chairman, "
            "and may name a quorum from 2 to the number of members (2 when it names none) and its aggregation, "
            "borda or confidence.",
        ),
        Rule(
            "COUNCIL_FORMAT",
            "Each section is a stage heading ('## Stage 1 — Answer of NAME (time)', …) with its fields as "
            "docs/formats.md shows; free text is quoted ('> ').",
        ),
        Rule(
            "COUNCIL_STAGE_ORDER",
            "Every member answers once (stage 1), then every member with a valid answer reviews once (stage 2), "
            "then the chairman writes the synthesis (stage 3); nothing follows it.",
        ),
        Rule(
            "COUNCIL_FALLBACK",
            "Only a chairman's recorded failure lets another write the synthesis: the top-ranked member with a "
            "valid answer other than the chairman, once.",
        ),
        Rule(
            "COUNCIL_SEALED",
            "A revealed answer or review, with its stated confidence, matches the digest committed when it was sealed.",
        ),
        Rule(
            "COUNCIL_CONFIDENCE",
            "In a record whose header names its aggregation, every answer and review states its member's confidence, "
            "a number from 0.0 to 1.0; a record that names none (written before confidences) states none.",
        ),
        Rule(
            "COUNCIL_ANONYMITY",
            "No member name or model appears in what a reviewer is shown or in a review.",
        ),
        Rule(
            "COUNCIL_SHUFFLE",
            "A reviewer is shown the other valid answers as Answer A, B, … in the order the seed gives that reviewer.",
        ),
        Rule("COUNCIL_SELF_RANKING", "No member is shown or ranks their own answer."),
        Rule(
            "COUNCIL_EVERY_ANSWER_REVIEWED",
            "A review ranks every answer it was shown, each once with a reason, and every valid answer is ranked "
            "by at least one review before the synthesis.",
        ),
        Rule(
            "COUNCIL_AGGREGATE",
            "The synthesis's aggregate ranking and Kendall's W are the Borda count of the reviews (weighted by each "
            "reviewer's confidence under the confidence aggregation) and the W of the reviews.",
        ),
        Rule(
            "COUNCIL_CHAIRMAN_RANKING",
            "The chairman's basis cites the aggregate ranking: it names the top-ranked member (one of them, in a tie).",
        ),
        Rule(
            "COUNCIL_CHAIRMAN_DISSENT",
            "The synthesis names every other member's position and why it was not adopted, once each.",
        ),
        Rule(
            "COUNCIL_OUTCOME",
            "The outcome section agrees with the stages: SYNTHESIZED, NO_QUORUM (fewer valid answers than the "
            "quorum) or FAILED.",
        ),
    ]
)


# --- configuration and turns -------------------------------------------------------------------


class Member(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    model: str  # the agent spec it answers with, e.g. "openai:gpt-4o-mini"


class CouncilConfig(BaseModel):
    """The council's header: the question, members, chairman and the seed of the review shuffles."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    question: str
    members: tuple[Member, ...]
    chairman: str  # a member's name, or CHAIRMAN for a separate agent
    chairman_model: str | None = None  # the separate chairman's agent spec
    seed: int = Field(ge=0)
    started: str | None = None
    quorum: int = QUORUM  # the fewest valid answers that let the council go on to its reviews
    # BORDA or CONFIDENCE; None in a record written before members stated confidences (Borda, no confidences)
    aggregate: str | None = None

    @property
    def confident(self) -> bool:
        """Whether its members state a confidence with each answer and review (a record that names its aggregation)."""
        return self.aggregate is not None

    @property
    def names(self) -> list[str]:
        return [member.name for member in self.members]

    def problems(self) -> list[str]:
        """Why this configuration cannot run a council (empty when it can)."""
        found: list[str] = []
        if not self.question.strip():
            found.append("the question is empty")
        names = self.names
        if not 2 <= len(names) <= MAX_MEMBERS:
            found.append(f"a council has 2 to {MAX_MEMBERS} members, not {len(names)}")
        for name in names:
            if not _MEMBER_NAME.fullmatch(name) or name.lower() in RESERVED_NAMES:
                found.append(
                    f"member name {name!r} must be 2-40 letters, digits, '-' or '_', starting with a letter, "
                    "and not chairman, answer or moot"
                )
        lowered = [name.lower() for name in names]
        if len(set(lowered)) != len(lowered):
            found.append("member names must differ (case aside)")
        if self.chairman != CHAIRMAN and self.chairman not in names:
            found.append(f"the chairman {self.chairman!r} is neither a member nor a separate chairman")
        if len(names) >= 2 and not QUORUM <= self.quorum <= len(names):
            found.append(f"the quorum is {self.quorum}, but it must be from {QUORUM} to the {len(names)} members")
        if self.aggregate is not None and self.aggregate not in AGGREGATIONS:
            found.append(f"the aggregation {self.aggregate!r} must be {' or '.join(AGGREGATIONS)}")
        if (self.chairman == CHAIRMAN) != (self.chairman_model is not None):
            found.append("a separate chairman has a model, and a member chairman has none of its own")
        return found


class Answer(BaseModel):
    """Stage 1: one member's sealed answer, or why the member has none (``failure``)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    stage: Literal[1] = 1
    member: str
    at: str | None = None
    text: str | None = None
    digest: str | None = None  # the commitment recorded when the answer was sealed
    failure: str | None = None
    confidence: float | None = None  # how sure the member is of its answer, 0.0 to 1.0

    @property
    def valid(self) -> bool:
        return self.failure is None and bool(self.text and self.text.strip())


class Review(BaseModel):
    """Stage 2: a member's ranking of the other answers (``shown`` maps Answer A, B, … to members)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    stage: Literal[2] = 2
    reviewer: str
    at: str | None = None
    shown: tuple[str, ...] = ()  # members, in the order of the labels A, B, …
    ranking: tuple[str, ...] = ()  # labels, best first
    reasons: tuple[str, ...] = ()  # one per ranked label, in ranking order
    digest: str | None = None
    failure: str | None = None
    confidence: float | None = None  # how sure the reviewer is of its ranking, 0.0 to 1.0

    @property
    def valid(self) -> bool:
        return self.failure is None

    def ranked_members(self) -> list[str]:
        """The ranking as members, best first (labels that name no shown answer are left out)."""
        return [self.shown[index] for label in self.ranking if (index := label_index(label)) < len(self.shown)]


class Dissent(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    member: str
    position: str
    why_not_adopted: str


class Synthesis(BaseModel):
    """Stage 3: the chairman's final answer with the aggregate ranking it cites."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    stage: Literal[3] = 3
    chairman: str
    at: str | None = None
    ranking: tuple[tuple[str, int | float], ...]  # (member, Borda points: whole, or weighted), best first, as written
    agreement: float | None  # Kendall's W as written, None where it cannot be measured
    answer: str
    basis: str
    dissent: tuple[Dissent, ...] = ()


class ChairmanFailure(BaseModel):
    """Stage 3: the chairman gave no synthesis (``failure`` says why), so ``fallback`` writes it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    stage: Literal[3] = 3
    chairman: str
    at: str | None = None
    failure: str
    fallback: str


CouncilTurn = Answer | Review | Synthesis | ChairmanFailure


@dataclass(frozen=True)
class CouncilState:
    answers: tuple[Answer, ...] = ()
    reviews: tuple[Review, ...] = ()
    synthesis: Synthesis | None = None
    failure: Outcome | None = None  # a run that could not go on (recorded in the outcome section)
    chairman_failure: ChairmanFailure | None = None  # the chairman failed; its fallback writes the synthesis

    @property
    def turns(self) -> int:
        return (
            len(self.answers) + len(self.reviews) + (self.chairman_failure is not None) + (self.synthesis is not None)
        )

    def valid_answers(self) -> list[Answer]:
        return [answer for answer in self.answers if answer.valid]


# --- pure helpers the driver and the checker share ---------------------------------------------


def label(index: int) -> str:
    return f"Answer {string.ascii_uppercase[index]}"


def label_index(value: str) -> int:
    """``"Answer C"`` -> 2; anything else -> a number past every label."""
    match = re.fullmatch(r"Answer ([A-Z])", value.strip())
    return string.ascii_uppercase.index(match[1]) if match else MAX_MEMBERS


def review_order(seed: int, reviewer: str, answered: list[str]) -> list[str]:
    """The members whose answers ``reviewer`` is shown, in label order: the others, shuffled by the seed."""
    others = [member for member in answered if member != reviewer]
    random.Random(f"{seed}:{reviewer}").shuffle(others)
    return others


def identities(config: CouncilConfig) -> list[str]:
    """What would unmask a member: every member's name and what its agent spec names (:func:`spec_identities`)."""
    found: set[str] = set()
    for member in config.members:
        found.add(member.name)
        found |= spec_identities(member.model)
    return sorted(found, key=len, reverse=True)


# A program that only runs another (``cmd:python agent.py``, ``cmd:llm -m MODEL``): what it runs is what tells.
_LAUNCHERS = frozenset(
    {"python", "python3", "node", "npx", "uv", "uvx", "sh", "bash", "env", "deno", "bun", "ruby", "llm"}
)
# What a model file's or a script's name ends with; the stem before it names the model or agent.
_FILE_SUFFIX = re.compile(r"\.(?:gguf|bin|safetensors|py|js|mjs|ts|sh|json|jsonl|exe)$", re.IGNORECASE)
# Parts of a host name that name no one: a generic prefix or a top-level domain.
_GENERIC_HOST_PARTS = frozenset({"api", "www", "app", "localhost", "com", "net", "org", "io", "ai", "dev", "cloud"})
# Where a spec's model part ends and a server's URL begins (``openai:MODEL@https://HOST/v1``).
_URL_START = re.compile(r"@(?=[A-Za-z][A-Za-z0-9+.-]*://)")


def spec_identities(spec: str) -> set[str]:
    """What in an agent spec would unmask the member that answers with it, in every spec form.

    ``NAME:MODEL``, ``ollama:MODEL:TAG``, ``NAME:OWNER/MODEL``, ``NAME:MODEL@URL``, ``local:PATH``,
    ``cmd:COMMAND``, ``acp:COMMAND``, ``script:FILE`` and a plugin's ``NAME:ARGS``: the spec, its model
    part, each name in that part (a path's file name and its stem, a model without its tag or owner, the
    program a command runs, an argument that names a model), and the server's URL, host and the parts of
    the host that name a provider. A bare backend name (``local``, ``human``) names no model and is an
    ordinary word, so it is not one; neither is a word of a command that names nothing (``python``, a flag).
    """
    _, colon, rest = spec.strip().partition(":")
    if not colon:
        return set()
    model, url = [*_URL_START.split(rest.strip(), maxsplit=1), ""][:2]
    found = {spec.strip(), model.strip()} | _command_names(model) | _url_names(url)
    return {name for name in found if len(name) >= 2}


def _distinctive(name: str) -> bool:
    """A name unlike an ordinary word (or a bare number): it has a digit, or joins words with '-', '_', '.' or '/'."""
    has_letter = any(char.isalpha() for char in name)
    return len(name) >= 3 and has_letter and any(char.isdigit() or char in "-_./" for char in name)


def _command_names(model: str) -> set[str]:
    """The names in a model part or a command: the program it runs (unless a mere launcher), and each
    argument's path, file name, stem and untagged name that is distinctive."""
    found: set[str] = set()
    words = model.split()
    for index, word in enumerate(words):
        value = word.split("=", 1)[1] if word.startswith("-") and "=" in word else word
        if not value or value.startswith("-"):
            continue
        base = re.split(r"[/\\]", value.rstrip("/\\"))[-1]
        stem = _FILE_SUFFIX.sub("", base)
        owner = value.split("/", 1)[0]  # OWNER/MODEL names a model family too
        untagged = base.split(":", 1)[0]  # MODEL:TAG
        names = {value, base, stem, owner, untagged, value.split(":", 1)[0]}
        # The program a command runs names its agent even as a plain word (codex, gemini).
        program = {base, stem, untagged} if index == 0 and stem.lower() not in _LAUNCHERS else set()
        found |= {name for name in names if name in program or _distinctive(name)}
    return found


def _url_names(url: str) -> set[str]:
    """A server URL, its host (with and without the port), and the parts of the host that name a provider."""
    if not url:
        return set()
    parts = urlsplit(url.strip())
    host = parts.hostname or ""
    labels = host.split(".")
    named = [label for label in labels[:-1] if label not in _GENERIC_HOST_PARTS and not label.isdigit()]
    return {url.strip(), parts.netloc, host, *(label for label in named if len(label) >= 3)}


def _identity_pattern(names: list[str]) -> re.Pattern[str] | None:
    if not names:
        return None
    alternatives = "|".join(re.escape(name) for name in names)
    return re.compile(rf"(?<![\w-])(?:{alternatives})(?![\w-])", re.IGNORECASE)


def redact(text: str, config: CouncilConfig) -> str:
    """``text`` with every member name and model replaced by ``[redacted]``."""
    pattern = _identity_pattern(identities(config))
    return text if pattern is None else pattern.sub(REDACTED, text)


def unmasked(text: str, config: CouncilConfig) -> list[str]:
    """The member names and models that appear in ``text``."""
    pattern = _identity_pattern(identities(config))
    return [] if pattern is None else sorted({match[0] for match in pattern.finditer(text)})


def shown_to(config: CouncilConfig, state: CouncilState, review: Review) -> str:
    """Everything a reviewer is shown besides the instructions: the question and the anonymized answers."""
    return "\n\n".join(shown_parts(config, state, review))


def shown_parts(config: CouncilConfig, state: CouncilState, review: Review) -> list[str]:
    """:func:`shown_to` as its parts: the question, then each answer in the order the reviewer is shown them."""
    texts = {answer.member: answer.text or "" for answer in state.valid_answers()}
    parts = [f"Question: {redact(config.question, config)}"]
    for index, member in enumerate(review.shown):
        parts.append(f"{label(index)}:\n{redact(texts.get(member, ''), config)}")
    return parts


def borda(config: CouncilConfig, state: CouncilState) -> list[tuple[str, float]]:
    """(member, points) for every valid answer, best first, by the council's aggregation; ties (equal points) keep
    the members' listed order.

    Borda: in a review of k answers, place p earns k - p points. Confidence: each review's points times its
    reviewer's stated confidence, rounded to :data:`WEIGHTED_DECIMALS` places; a review that states none (which
    breaks COUNCIL_CONFIDENCE in such a council) weighs 1, as under Borda.
    """
    answered = [answer.member for answer in state.valid_answers()]
    weighted = config.aggregate == CONFIDENCE
    points: dict[str, float] = dict.fromkeys(answered, 0)
    for review in state.reviews:
        if not review.valid:
            continue
        ranked = review.ranked_members()
        weight = review.confidence if weighted and review.confidence is not None else 1
        for place, member in enumerate(ranked):
            if member in points:
                points[member] += (len(ranked) - 1 - place) * weight
    if weighted:
        points = {member: round(value, WEIGHTED_DECIMALS) for member, value in points.items()}
    order = {name: index for index, name in enumerate(config.names)}
    return sorted(points.items(), key=lambda item: (-item[1], order.get(item[0], len(order))))


def points_text(points: float) -> str:
    """Aggregate points as the record writes them: a whole number as one, weighted points with their decimals."""
    return f"{points:g}"


def ranked_first(aggregate: list[tuple[str, float]]) -> list[str]:
    """The members the Borda count puts first: one, or several tied on the same points."""
    return [member for member, points in aggregate if points == aggregate[0][1]] if aggregate else []


def fallback_for(config: CouncilConfig, state: CouncilState) -> str | None:
    """Who writes the synthesis when the chairman fails: the top-ranked member with a valid answer (in the Borda
    count, ties in listed order) other than the chairman; None when there is no such member."""
    return next((member for member, _ in borda(config, state) if member != config.chairman), None)


def first_place_text(aggregate: list[tuple[str, float]]) -> str:
    """Who the reviews ranked first, as the outcome says it; a tie is named as a tie, never as one winner."""
    first = ranked_first(aggregate)
    if not first:
        return "nobody ranked first"
    if len(first) == 1:
        return f"{first[0]} ranked first"
    together = ", ".join(first[:-1]) + f" and {first[-1]}"
    if len(first) == len(aggregate):
        return (
            f"no answer ranked above another ({together} tied with {points_text(aggregate[0][1])} Borda point(s) each)"
        )
    return f"{together} tied first with {points_text(aggregate[0][1])} Borda point(s) each"


def confidences(state: CouncilState) -> dict[str, dict[str, float]]:
    """Each member's stated confidence in its answer and in its review, where it stated one."""
    found: dict[str, dict[str, float]] = {}
    for answer in state.answers:
        if answer.confidence is not None:
            found.setdefault(answer.member, {})["answer"] = answer.confidence
    for review in state.reviews:
        if review.confidence is not None:
            found.setdefault(review.reviewer, {})["review"] = review.confidence
    return found


def kendall_w(state: CouncilState) -> float | None:
    """Kendall's W of the reviews, 0 (no agreement) to 1 (all reviewers agree), or None where undefined.

    Each of the n answerers ranks the n - 1 others: a balanced incomplete block design (every answer is
    ranked r = n - 1 times, every pair together λ = n - 2 times), for which
    W = 12 Σ (R_j - r(k+1)/2)² / (λ² n (n² - 1)) with k = n - 1 and R_j the sum of answer j's ranks.
    It needs at least three answers and a valid review from every answerer.
    """
    answered = [answer.member for answer in state.valid_answers()]
    n = len(answered)
    reviews = [review for review in state.reviews if review.valid]
    if n < 3 or sorted(r.reviewer for r in reviews) != sorted(answered):
        return None
    sums = dict.fromkeys(answered, 0)
    for review in reviews:
        ranked = review.ranked_members()
        if sorted(ranked) != sorted(m for m in answered if m != review.reviewer):
            return None
        for place, member in enumerate(ranked, start=1):
            sums[member] += place
    r, k, lam = n - 1, n - 1, n - 2
    spread = sum((total - r * (k + 1) / 2) ** 2 for total in sums.values())
    return 12 * spread / (lam**2 * n * (n**2 - 1))


def rounded_w(value: float | None) -> float | None:
    """W as the record writes it: three decimals."""
    return None if value is None else round(value, 3)


def mentions(text: str, name: str) -> bool:
    return re.search(rf"(?<![\w-]){re.escape(name)}(?![\w-])", text, re.IGNORECASE) is not None


# --- the state machine -------------------------------------------------------------------------


class CouncilProtocol(DeliberationProtocol[CouncilTurn, CouncilState]):
    name: ClassVar[str] = NAME
    rules: ClassVar[RuleBook] = RULES
    turn_model: ClassVar[type[BaseModel]] = Answer

    def __init__(self, config: CouncilConfig) -> None:
        self.config = config

    def initial_state(self) -> CouncilState:
        return CouncilState()

    def stage(self, state: CouncilState) -> int | None:
        """The stage open now (1, 2 or 3), or None once the council has ended."""
        if self.outcome(state) is not None:
            return None
        if len(state.answers) < len(self.config.members):
            return 1
        if len(state.reviews) < len(state.valid_answers()):
            return 2
        return 3

    def pending(self, state: CouncilState) -> list[str]:
        """Who still has to act in the open stage."""
        stage = self.stage(state)
        if stage == 1:
            done = {answer.member for answer in state.answers}
            return [name for name in self.config.names if name not in done]
        if stage == 2:
            done = {review.reviewer for review in state.reviews}
            return [answer.member for answer in state.valid_answers() if answer.member not in done]
        return [self.writer(state)] if stage == 3 else []

    def writer(self, state: CouncilState) -> str:
        """Who writes the synthesis: the chairman, or after its recorded failure the fallback it names."""
        return state.chairman_failure.fallback if state.chairman_failure is not None else self.config.chairman

    def next_speaker(self, state: CouncilState) -> str | None:
        pending = self.pending(state)
        return pending[0] if pending else None

    def validate(self, state: CouncilState, turn: CouncilTurn) -> list[Violation]:
        if self.outcome(state) is not None:
            return [RULES.violation("COUNCIL_STAGE_ORDER", "the council has ended; nothing may follow its outcome.")]
        if isinstance(turn, Answer):
            return self._validate_answer(state, turn)
        if isinstance(turn, Review):
            return self._validate_review(state, turn)
        if isinstance(turn, ChairmanFailure):
            return self._validate_chairman_failure(state, turn)
        return self._validate_synthesis(state, turn)

    def _validate_answer(self, state: CouncilState, answer: Answer) -> list[Violation]:
        if self.stage(state) != 1:
            return [RULES.violation("COUNCIL_STAGE_ORDER", f"{answer.member} answers after stage 1 closed.")]
        if answer.member not in self.pending(state):
            who = "is not a member" if answer.member not in self.config.names else "has already answered"
            return [RULES.violation("COUNCIL_STAGE_ORDER", f"{answer.member} {who}.")]
        return self._confidence(f"{answer.member}'s answer", answer.confidence, stated=answer.valid)

    def _confidence(self, what: str, value: float | None, *, stated: bool) -> list[Violation]:
        """COUNCIL_CONFIDENCE for the confidence ``what`` states (``stated``: an answer or review it must state)."""
        if not self.config.confident:
            if value is None:
                return []
            message = f"{what} states a confidence, but the header names no aggregation; add '- **Aggregation:**'."
            return [RULES.violation("COUNCIL_CONFIDENCE", message)]
        if value is None:
            if not stated:
                return []
            return [RULES.violation("COUNCIL_CONFIDENCE", f"{what} states no confidence; give one from 0.0 to 1.0.")]
        if not in_range(value):
            return [
                RULES.violation("COUNCIL_CONFIDENCE", f"{what} has confidence {value}; give a number from 0.0 to 1.0.")
            ]
        return []

    def _validate_review(self, state: CouncilState, review: Review) -> list[Violation]:
        name = review.reviewer
        if self.stage(state) != 2:
            return [RULES.violation("COUNCIL_STAGE_ORDER", f"{name}'s review is not in stage 2.")]
        if name not in self.pending(state):
            who = (
                "has no valid answer of their own"
                if name not in self.config.names or not any(a.member == name and a.valid for a in state.answers)
                else "has already reviewed"
            )
            return [RULES.violation("COUNCIL_STAGE_ORDER", f"{name} {who}, so cannot review now.")]
        if not review.valid:
            return self._confidence(f"{name}'s review", review.confidence, stated=False)
        found = self._confidence(f"{name}'s review", review.confidence, stated=True)
        answered = [answer.member for answer in state.valid_answers()]
        if name in review.shown:
            found.append(RULES.violation("COUNCIL_SELF_RANKING", f"{name} is shown, and ranks, their own answer."))
        if list(review.shown) != review_order(self.config.seed, name, answered):
            found.append(
                RULES.violation(
                    "COUNCIL_SHUFFLE",
                    f"{name} was shown {', '.join(review.shown) or 'nothing'}, not the other valid answers in the "
                    "order the seed gives.",
                )
            )
        labels = [label(index) for index in range(len(review.shown))]
        if sorted(review.ranking) != labels:
            found.append(
                RULES.violation(
                    "COUNCIL_EVERY_ANSWER_REVIEWED",
                    f"{name}'s ranking {', '.join(review.ranking) or '(empty)'} must rank each of "
                    f"{', '.join(labels)} exactly once.",
                )
            )
        elif len(review.reasons) != len(review.ranking) or not all(reason.strip() for reason in review.reasons):
            found.append(
                RULES.violation("COUNCIL_EVERY_ANSWER_REVIEWED", f"{name} gives no reason for a ranked answer.")
            )
        leaks = unmasked(" ".join(review.reasons), self.config)
        if leaks:
            found.append(RULES.violation("COUNCIL_ANONYMITY", f"{name}'s review names {', '.join(leaks)}."))
        shown_leaks = unmasked(shown_to(self.config, state, review), self.config)
        if shown_leaks:
            found.append(
                RULES.violation("COUNCIL_ANONYMITY", f"{name} was shown the identity {', '.join(shown_leaks)}.")
            )
        return found

    def _validate_chairman_failure(self, state: CouncilState, failure: ChairmanFailure) -> list[Violation]:
        if self.stage(state) != 3:
            return [RULES.violation("COUNCIL_STAGE_ORDER", "the chairman's failure comes before every review is in.")]
        if state.chairman_failure is not None:
            return [
                RULES.violation("COUNCIL_FALLBACK", "the chairman's failure is recorded once; its fallback writes.")
            ]
        found: list[Violation] = []
        if failure.chairman != self.config.chairman:
            found.append(
                RULES.violation(
                    "COUNCIL_FALLBACK", f"{failure.chairman} is recorded as failing, but {self.config.chairman} chairs."
                )
            )
        expected = fallback_for(self.config, state)
        if failure.fallback != expected:
            who = f"{expected}, the top-ranked member with a valid answer" if expected else "nobody (no other answer)"
            found.append(RULES.violation("COUNCIL_FALLBACK", f"the fallback is {failure.fallback}, not {who}."))
        if not failure.failure.strip():
            found.append(RULES.violation("COUNCIL_FALLBACK", "the chairman's failure gives no reason."))
        return found

    def _validate_synthesis(self, state: CouncilState, synthesis: Synthesis) -> list[Violation]:
        if self.stage(state) != 3:
            return [RULES.violation("COUNCIL_STAGE_ORDER", "the synthesis comes before every review is in.")]
        found: list[Violation] = []
        writer = self.writer(state)
        if synthesis.chairman != writer and state.chairman_failure is None and synthesis.chairman in self.config.names:
            found.append(
                RULES.violation(
                    "COUNCIL_FALLBACK",
                    f"the synthesis is by {synthesis.chairman}, but {writer} chairs the council and no failure of "
                    f"{writer} is recorded before it.",
                )
            )
        elif synthesis.chairman != writer:
            found.append(
                RULES.violation(
                    "COUNCIL_STAGE_ORDER", f"the synthesis is by {synthesis.chairman}, but {writer} writes it."
                )
            )
        reviewed = {member for review in state.reviews if review.valid for member in review.ranked_members()}
        unreviewed = [a.member for a in state.valid_answers() if a.member not in reviewed]
        if unreviewed:
            found.append(
                RULES.violation(
                    "COUNCIL_EVERY_ANSWER_REVIEWED", f"the answer of {', '.join(unreviewed)} was never reviewed."
                )
            )
        aggregate = borda(self.config, state)
        if list(synthesis.ranking) != aggregate:
            shown = ", ".join(f"{m} {points_text(p)}" for m, p in aggregate)
            weighted = " (confidence-weighted)" if self.config.aggregate == CONFIDENCE else ""
            found.append(
                RULES.violation("COUNCIL_AGGREGATE", f"the aggregate ranking of the reviews{weighted} is {shown}.")
            )
        agreement = rounded_w(kendall_w(state))
        if synthesis.agreement != agreement:
            expected = "not measurable" if agreement is None else f"{agreement:.3f}"
            found.append(RULES.violation("COUNCIL_AGGREGATE", f"Kendall's W of the reviews is {expected}."))
        first = ranked_first(aggregate)
        if first and not any(mentions(synthesis.basis, member) for member in first):
            found.append(
                RULES.violation(
                    "COUNCIL_CHAIRMAN_RANKING",
                    f"the basis does not name {' or '.join(first)}, ranked first by the reviews.",
                )
            )
        others = [member for member, _ in aggregate[1:]]
        named = [dissent.member for dissent in synthesis.dissent]
        missing = [member for member in others if member not in named]
        extra = sorted({m for m in named if m not in others} | {m for m in named if named.count(m) > 1})
        empty = [d.member for d in synthesis.dissent if not (d.position.strip() and d.why_not_adopted.strip())]
        if missing:
            found.append(
                RULES.violation("COUNCIL_CHAIRMAN_DISSENT", f"the dissent of {', '.join(missing)} is not named.")
            )
        if extra:
            found.append(
                RULES.violation(
                    "COUNCIL_CHAIRMAN_DISSENT",
                    f"{', '.join(extra)} named as dissent more than once or without a dissenting answer.",
                )
            )
        if empty:
            found.append(
                RULES.violation(
                    "COUNCIL_CHAIRMAN_DISSENT", f"the dissent of {', '.join(empty)} lacks its position or reason."
                )
            )
        return found

    def apply(self, state: CouncilState, turn: CouncilTurn) -> CouncilState:
        """The state after ``turn``. An answer or a review out of its place (its stage closed, its author already
        acted or is no member, the council ended) is left out: the state holds at most what the stages allow,
        so that checking a record that repeats turns by the thousand costs each turn the same."""
        stage = self.stage(state)
        if isinstance(turn, Answer):
            if stage != 1 or turn.member not in self.pending(state):
                return state
            return replace(state, answers=(*state.answers, turn))
        if isinstance(turn, Review):
            if stage != 2 or turn.reviewer not in self.pending(state):
                return state
            return replace(state, reviews=(*state.reviews, turn))
        if stage != 3:
            return state
        if isinstance(turn, ChairmanFailure):
            return state if state.chairman_failure is not None else replace(state, chairman_failure=turn)
        return replace(state, synthesis=turn)

    def missing(self, state: CouncilState) -> str | None:
        """What a synthesis lacks of a whole council: the members with no valid answer, the answerers with no
        valid review; None when every member answered and reviewed."""
        answered = [a.member for a in state.valid_answers()]
        silent = [name for name in self.config.names if name not in answered]
        reviewed = {review.reviewer for review in state.reviews if review.valid}
        unreviewed = [name for name in answered if name not in reviewed]
        lacks = []
        if silent:
            lacks.append(
                f"{', '.join(silent)} gave no valid answer ({len(answered)} of {len(self.config.names)} answered)"
            )
        if unreviewed:
            lacks.append(f"{', '.join(unreviewed)} gave no valid review")
        if state.chairman_failure is not None:
            lacks.append(
                f"the chairman failed: {state.chairman_failure.failure}; "
                f"{state.chairman_failure.fallback} wrote the synthesis"
            )
        return "; ".join(lacks) or None

    def failed(self, state: CouncilState, reason: str) -> CouncilState:
        """The state after a run that could not go on (an agent failed, a budget was spent)."""
        return replace(state, failure=Outcome(name=FAILED, reason=reason))

    def outcome(self, state: CouncilState) -> Outcome | None:
        if state.synthesis is not None:
            aggregate = borda(self.config, state)
            agreement = rounded_w(kendall_w(state))
            measured = "not measurable" if agreement is None else f"{agreement:.3f}"
            degraded = self.missing(state)
            # Two answers: each reviewer ranks only the other's, so the reviews rank nothing and cannot agree.
            paired = len(state.valid_answers()) == 2
            unranked = "; with two answers nothing is ranked, so this is no consensus" if paired else ""
            return Outcome(
                name=SYNTHESIZED,
                reason=f"{len(aggregate)} answers reviewed; {first_place_text(aggregate)}; Kendall's W {measured}"
                f"{unranked}",
                consensus=degraded is None and not paired,
                degraded=degraded,
            )
        if len(state.answers) >= len(self.config.members) and len(state.valid_answers()) < self.config.quorum:
            return Outcome(
                name=NO_QUORUM,
                reason=f"{len(state.valid_answers())} valid answer(s) of {len(self.config.members)}; the quorum is "
                f"{self.config.quorum}",
            )
        return state.failure

    def summary(self, state: CouncilState) -> Summary:
        aggregate = borda(self.config, state) if state.reviews else []
        return Summary(
            protocol=NAME,
            turns=state.turns,
            next_speaker=self.next_speaker(state),
            round=self.stage(state),
            outcome=self.outcome(state),
            detail={
                "members": len(self.config.members),
                "valid_answers": len(state.valid_answers()),
                "aggregation": self.config.aggregate or BORDA,
                "ranking": [list(item) for item in aggregate],
                "agreement": rounded_w(kendall_w(state)),
                **({"confidences": confidences(state)} if self.config.confident else {}),
            },
        )
