"""The Roundtable's orchestration, as the guide's unattended relay does it, with moot as the relay.

- A speaker is asked with what the guide's step 2 has it read: AGENDA.md, ``prompt_for_speaker`` from
  turn.json, and the latest three speeches; a model whose server caches prompt prefixes reads every speech,
  in order, which its cache makes cheaper than a window that moves. Its reply is the
  protocol's :class:`~moot.protocols.roundtable.machine.RoundtableReply`; its ``prompt_for_next_speaker``
  becomes the next speaker's ``prompt_for_speaker``. moot writes the speech file and then turn.json
  (one commit, crash-recoverable).
- Once the meeting is concluding, the ``moderator`` reads every speech (each cut to fit the context)
  and answers with the four parts of the minutes; moot writes MINUTES.md and closes the meeting.

Failures (a role that gives no valid reply within its repairs, an agent error, a spent budget):

- the moderator, while concluding: moot writes MINUTES.md itself, the failure and its reason in the
  *Unresolved Disagreements* part, and closes the meeting, so the record ends as the guide's does;
- a speaker, while open: the guide's turn.json can only move on by a speech, and only a speech or the
  round limit may make it ``concluding``, so moot cannot close the meeting without inventing a speech.
  The record stays open and valid, the run ends with the outcome ``failed`` and its reason, the reason
  is appended to ``.moot.failures.jsonl`` in the meeting directory, and ``moot resume`` asks that
  speaker again.
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from moot.agents.base import AgentRequest
from moot.agents.tokens import clip_to_tokens, estimate_tokens
from moot.core.files import append_log_line, atomic_write_text, read_text, slugify
from moot.core.machine import Outcome, Summary
from moot.core.run_state import RUN_HALTED
from moot.engine.driver import Candidate, Driver, json_schema_of, reply_format_violation, taking_turns
from moot.engine.replies import parse_reply
from moot.engine.sealed import SealedPhase, SealedPhases, sealed_path
from moot.errors import ProtocolViolationError, RecordExists, UserError, Violation
from moot.limits import require_subject
from moot.paths import record_place

# Shared with the duel's driver: context budgeting for the embedded model.
from moot.protocols.roundtable import record
from moot.protocols.roundtable.machine import (
    AGENDA_FILE,
    MODERATOR,
    RULES,
    SPEECH_HEADINGS,
    Language,
    MeetingState,
    Minutes,
    RoundtableAction,
    RoundtableClosing,
    RoundtableProtocol,
    RoundtableReply,
    RoundtableTurn,
    Speech,
    close_state,
    name_problem,
    opening_state,
    same_role,
    speech_file_name,
    turn_from_reply,
)

LATEST_SPEECHES = 3  # the guide: "the latest 2-3 speech files"
INSTRUCTION_TOKENS = 120  # prompt_for_speaker is "a short expectation or question"
FAILURES_FILE = ".moot.failures.jsonl"  # hidden: the checker ignores it, like the digest chain

# The reply's budget is kept free in the participant's context and the prompt is fitted into the rest
# (the agenda and each speech are cut to their share).
TEMPLATE_TOKENS = 48
AGENDA_SHARE = 0.35

# A small model's caps: bounded strings keep it from running past max_tokens in the middle of the JSON. A CJK
# character costs about two tokens of SmolLM2's tokenizer, so Chinese meetings get shorter fields.
SPEECH_LIMITS: dict[str, dict[str, int]] = {
    "en": {"position": 240, "analysis": 400, "responses_and_questions": 240, "prompt_for_next_speaker": 160},
    "zh": {"position": 60, "analysis": 110, "responses_and_questions": 60, "prompt_for_next_speaker": 40},
}
MINUTES_LIMITS: dict[str, dict[str, int]] = {
    "en": {"summary": 400, "consensus": 240, "unresolved": 240, "action_items": 240},
    "zh": {"summary": 110, "consensus": 60, "unresolved": 60, "action_items": 60},
}
COMPACT_REPLY_TOKENS = {"en": 480, "zh": 560}

TEXT: dict[str, dict[str, str]] = {
    "en": {
        "speaker": "You are {role} in the roundtable meeting '{meeting}', round {round} of {max_rounds}. Speak only as "
        "{role}. Follow the instruction addressed to you, respond to the latest speeches, and be concrete.\n"
        "Write position, analysis and responses_and_questions in a few sentences each; prompt_for_next_speaker is "
        "a short instruction or question for {next}. {consensus}",
        "consensus_open": "Set consensus_reached to true only if every participant now agrees.",
        "consensus_closed": "consensus_reached stays false: not every speaker has spoken yet.",
        "moderator": "You are the moderator of the roundtable meeting '{meeting}'. The discussion is over: write the "
        "minutes from the speeches. summary: what was discussed; consensus: what everyone agreed on (write 'None' "
        "if nothing); unresolved: the disagreements still open; action_items: who does what next.",
        "agenda": "AGENDA.md:",
        "instruction": "Your instruction (prompt_for_speaker in turn.json):",
        "latest": "The latest speeches:",
        "none": "No speeches yet: you speak first.",
        "all": "Every speech of the meeting:",
        "earlier": "[{count} earlier speech(es) not shown]",
        "topic": "## Topic\n\n{topic}",
        "open": "Open the discussion of the agenda: state your position and your main argument.",
        "next_moderator": "the moderator, who writes the minutes",
        "failed_summary": "{count} speech(es) were given ({files}). The moderator gave no valid minutes, so moot "
        "wrote these minutes and closed the meeting.",
        "declared": "Declared by {role} in {file}; not confirmed by the moderator.",
        "undeclared": "None recorded.",
        "failed_unresolved": "The moderator's minutes failed: {reason}.",
        "failed_actions": "- Read the speeches and write the minutes by hand if they are needed.",
    },
    "zh": {
        "speaker": "你是圆桌会议「{meeting}」中的 {role}，当前第 {round} 轮，共 {max_rounds} 轮。只以 {role} 的身份发言；"
        "回应给你的指示和最新的发言，具体明确。\nposition、analysis、responses_and_questions 各写几句；"
        "prompt_for_next_speaker 写给 {next} 的简短指示或问题。{consensus}",
        "consensus_open": "只有在所有参与者都已同意时，consensus_reached 才设为 true。",
        "consensus_closed": "尚有发言者未发言，consensus_reached 保持 false。",
        "moderator": "你是圆桌会议「{meeting}」的主持人。讨论已结束：根据发言撰写会议纪要。summary：讨论摘要；"
        "consensus：最终共识（没有则写“无”）；unresolved：悬而未决的分歧；action_items：决议行动项。",
        "agenda": "AGENDA.md：",
        "instruction": "给你的指示（turn.json 中的 prompt_for_speaker）：",
        "latest": "最新的发言：",
        "none": "还没有发言：由你首先发言。",
        "all": "本次会议的全部发言：",
        "earlier": "[另有 {count} 份更早的发言未显示]",
        "topic": "## 议题\n\n{topic}",
        "open": "请就议程阐述你的立场和主要论据。",
        "next_moderator": "主持人（撰写会议纪要）",
        "failed_summary": "共有 {count} 份发言（{files}）。主持人未能给出有效的纪要，由 moot 撰写本纪要并结束会议。",
        "declared": "由 {role} 在 {file} 中宣布；未经主持人确认。",
        "undeclared": "无记录。",
        "failed_unresolved": "主持人的纪要失败：{reason}。",
        "failed_actions": "- 如需纪要，请阅读各发言后手工撰写。",
    },
}


@dataclass(frozen=True)
class RoundtableOptions:
    speakers: tuple[str, ...]
    topic: str | None = None
    agenda: Path | None = None  # --agenda FILE: the background, written into AGENDA.md
    name: str | None = None  # the meeting (directory) name; from the topic or the agenda file when absent
    max_rounds: int = 3
    language: Language | None = None  # None: Chinese when the topic, agenda or roles are written in Chinese
    first_prompt: str | None = None  # prompt_for_speaker of the first speaker
    background: str | None = None  # more background for AGENDA.md (the --source passages)
    sealed: bool = False  # every speaker's round-1 position is asked at once, none seeing another's


SEALED_OPENING = "round-1"


class RoundtableDriver(Driver, SealedPhases):
    protocol = "roundtable"
    options_type = RoundtableOptions

    def __init__(self, path: Path, language: Language | None = None) -> None:
        self.record_path = path
        self.failure: Outcome | None = None
        self._language = language
        self._finish_interrupted_commit()
        self._load()

    @classmethod
    def resume(cls, path: Path, context: str | None = None) -> RoundtableDriver:
        repaired = record.repair(path)
        driver = cls(path)
        driver.repaired_chain = repaired
        return driver

    @classmethod
    def start(cls, root: Path, options: RoundtableOptions, started: str) -> RoundtableDriver:
        require_subject("topic", options.topic)
        speakers = tuple(s.strip() for s in options.speakers if s.strip())
        if len(speakers) < 2 or len(set(speakers)) != len(speakers):
            raise UserError("--speakers needs at least two different roles, in speaking order, like --speakers A,B,C.")
        for role in speakers:
            problem = name_problem(role)
            if problem is not None:
                raise UserError(f"the role {role!r} {problem}; rename it, since it becomes part of file names.")
        if MODERATOR in speakers:  # one role would both speak and write the minutes
            raise UserError(
                f"--speakers names '{MODERATOR}', the role that writes the minutes after the last round; give that "
                "speaker another name."
            )
        if options.max_rounds < 1:
            raise UserError(f"--max-rounds {options.max_rounds} is below 1; give at least one round.")
        agenda = _agenda_text(options)
        language = options.language or ("zh" if _has_cjk(agenda + "".join(speakers)) else "en")
        fallback = options.agenda.stem if options.agenda is not None else "meeting"
        name = options.name or slugify(options.topic or "", fallback)
        prompt = options.first_prompt or TEXT[language]["open"]
        record_place(root, record.ROUNDTABLE_DIR)
        try:
            directory = record.start_meeting(root, name, agenda, speakers, options.max_rounds, prompt)
        except ValueError as exc:  # an unsafe meeting name: it would leave .roundtable/
            raise UserError(str(exc)) from exc
        except FileExistsError as exc:
            existing = root / record.ROUNDTABLE_DIR / name
            raise RecordExists(
                existing,
                f"the meeting {name!r} already exists; resume it with `moot resume {existing}` or choose another --name.",
            ) from exc
        except ProtocolViolationError as exc:
            raise UserError(f"cannot start the meeting: {exc.violations[0].message}") from exc
        if options.sealed:  # the sealed answers' sidecar, present from the start, marks the opening as sealed
            atomic_write_text(sealed_path(directory), "")
        return cls(directory, language)

    def _finish_interrupted_commit(self) -> None:
        """A crash between a speech (or the minutes) and its turn.json: finish that commit first."""
        report = record.check(self.record_path)
        if report.repairable:
            record.finish_commit(self.record_path)

    def _load(self) -> None:
        try:
            self.writer = record.MeetingWriter(self.record_path)
        except ProtocolViolationError as exc:
            first = exc.violations[0] if exc.violations else "unreadable"
            raise UserError(
                f"{self.record_path} cannot be continued ({first}); run `moot check {self.record_path}` on it."
            ) from exc
        turn = self.state.turn
        self.machine = RoundtableProtocol(opening_state(turn.conference, turn.speaker_order, turn.max_rounds, ""))
        self.agenda, _ = read_text(self.record_path / AGENDA_FILE)
        self.language: Language = self._language or self._detect_language()
        self.sealed = sealed_path(self.record_path).is_file()

    @property
    def state(self) -> MeetingState:
        """The meeting as its writer last read or wrote it (see :meth:`request_for` for when it reads again)."""
        return self.writer.state

    def _detect_language(self) -> Language:
        first = self._speeches()[:1]
        if first:
            return "zh" if first[0].body.startswith(f"## {SPEECH_HEADINGS['zh'][0]}") else "en"
        return "zh" if _has_cjk((self.agenda or "") + "".join(self.state.turn.speaker_order)) else "en"

    def roles(self) -> list[str]:
        return list(dict.fromkeys([*self.state.turn.speaker_order, MODERATOR]))

    def next_speaker(self) -> str | None:
        if self.failure is not None:
            return None
        return self.machine.next_speaker(self.state)

    # --- the sealed opening ------------------------------------------------------------------------

    def sealed_phase(self) -> SealedPhase | None:
        """With --sealed, round 1 is one sealed phase: the speakers who have not spoken yet, asked at once.

        A speaker that failed is asked again by ``moot resume``, as in an unsealed meeting.
        """
        turn = self.state.turn
        order = turn.speaker_order
        if not self.sealed or self.failure is not None or turn.status != "open" or turn.round != 1:
            return None
        return SealedPhase(SEALED_OPENING, tuple(order[self.state.speeches :]), retry_failures=True)

    def sealed_text(self, turn: Any) -> str:
        reply: RoundtableReply = turn
        return reply.model_dump_json()

    def reveal(self, phase: SealedPhase, answers: Mapping[str, Any], failures: Mapping[str, str], now: str) -> None:
        """Every speech of the round in speaking order, each written as the seed writes a speech (the
        speech, then turn.json); with any failure, none, and the meeting stops until ``moot resume``."""
        if failures:
            role = next(r for r in phase.roles if r in failures)
            self.fail(role, failures[role], now)
            return
        for role in phase.roles:
            action = turn_from_reply(self.state, answers[role], self.language)
            if action.speech.role != role:
                raise ProtocolViolationError(
                    [reply_format_violation(f"{role} is not the speaker after the last speech.")]
                )
            self.commit(action)

    # --- asking ----------------------------------------------------------------------------------

    def _concluding(self, role: str) -> bool:
        return role == MODERATOR and self.state.turn.status == "concluding"

    def request_for(self, role: str) -> AgentRequest:
        return self._ask(role, "")

    def repair_prompt(self, request: AgentRequest, reply: str, violations: list[Violation]) -> AgentRequest:
        """The original request again, with the rule ids and messages after its instruction; rebuilt rather than
        appended to so that it still fits the small model's context after several repairs."""
        problems = "\n".join(f"- {v.rule}: {v.message}" for v in violations if v.is_error)
        extra = (
            f"Your previous reply was:\n{clip_to_tokens(reply, 160)}\n\nIt broke these rules of the protocol:\n"
            f"{clip_to_tokens(problems, 200)}\n\nFix the errors and try again."
        )
        return self._ask(request.role, extra)

    def _ask(self, role: str, extra: str) -> AgentRequest:
        # Someone else (the agent tools) may have written the meeting since: read it again, cheaply unless so. A
        # meeting that can no longer be read keeps the state last read; the commit then says what is wrong.
        with contextlib.suppress(ProtocolViolationError):
            self.writer.fresh()
        if self._concluding(role):
            return self._moderator_request(role, extra)
        return self._speaker_request(role, extra)

    def _speaker_request(self, role: str, extra: str) -> AgentRequest:
        text = TEXT[self.language]
        turn = self.state.turn
        sealed = self.sealed_phase() is not None
        # A sealed speaker hears no one else in round 1, so cannot declare that everyone agrees.
        everyone_spoke = not sealed and self._everyone_will_have_spoken()
        speaker = text["speaker"].format(
            role=role,
            meeting=turn.conference,
            round=turn.round,
            max_rounds=turn.max_rounds,
            next=self._next_role(role if sealed else None),
            consensus=text["consensus_open" if everyone_spoke else "consensus_closed"],
        )
        schema = _schema(RoundtableReply, SPEECH_LIMITS[self.language], self.bounds(role).compact)
        if not everyone_spoke and not self.caches_prefix(role):  # read_reply refuses it from the others
            schema["properties"]["consensus_reached"]["enum"] = [False]
        return self._fit(role, speaker, schema, extra)

    def _moderator_request(self, role: str, extra: str) -> AgentRequest:
        moderator = TEXT[self.language]["moderator"].format(meeting=self.state.turn.conference)
        schema = _schema(Minutes, MINUTES_LIMITS[self.language], self.bounds(role).compact)
        return self._fit(role, moderator, schema, extra)

    def _fit(self, role: str, directions: str, schema: dict[str, Any], extra: str) -> AgentRequest:
        """The request: the agenda and the speeches, cut to the context left, then the instruction.

        A model whose server caches prefixes reads every speech (the guide lets a speaker go further back than
        the latest): the agenda and the speeches are the stable prefix that every speaker's requests share, and
        its directions (who it is, the round) follow them, where they change. Any other participant reads the
        latest speeches only (the guide's step 2), with its directions in the system message. The minutes are
        asked once, so their prefix is not marked: a cache written for them would never be read.
        """
        text = TEXT[self.language]
        turn = self.state.turn
        bounds = self.bounds(role)
        stable = bounds.prefix_cache
        max_tokens = bounds.turn_tokens(COMPACT_REPLY_TOKENS[self.language])
        budget = bounds.context_tokens - TEMPLATE_TOKENS - max_tokens
        budget -= estimate_tokens(directions) + estimate_tokens(extra) + INSTRUCTION_TOKENS
        budget -= 60  # labels and separators
        agenda = clip_to_tokens(self.agenda or "", int(max(0, budget) * AGENDA_SHARE))
        speeches = self._speeches()
        concluding = self._concluding(role)
        shown = speeches if concluding or stable else speeches[-LATEST_SPEECHES:]
        parts = [f"{text['agenda']}\n{agenda}\n\n"]
        if shown:
            share = max(0, budget - estimate_tokens(agenda)) // len(shown)
            omitted = len(speeches) - len(shown)
            listed = [text["earlier"].format(count=omitted)] if omitted else []
            listed += [
                f"### {speech_file_name(s.sequence, s.role)}\n{clip_to_tokens(s.body.strip(), share - 8)}"
                for s in shown
            ]
            heading = text["all" if concluding or stable else "latest"] + "\n\n"
            parts += [heading + listed[0] + "\n\n", *(item + "\n\n" for item in listed[1:])]
        instruction = [] if shown else [text["none"]]
        instruction.append(f"{text['instruction']}\n{clip_to_tokens(turn.prompt_for_speaker, INSTRUCTION_TOKENS)}")
        if stable:
            instruction.append(directions)
        if extra:
            instruction.append(extra)
        request = AgentRequest.with_prefix(
            parts,
            "\n\n".join(instruction),
            system=None if stable else directions,
            json_schema=schema,
            max_tokens=max_tokens,
            role=role,
            protocol=self.protocol,
            cache_key=self.shared_cache_key() if stable else None,
        )
        return request.model_copy(update={"prefix_ends": ()}) if concluding else request

    def _speeches(self) -> tuple[Speech, ...]:
        """Every speech of the meeting, in order."""
        return self.writer.speeches

    def _everyone_will_have_spoken(self) -> bool:
        """Whether this speech completes everyone's first speech: only then can all agree."""
        return self.state.speeches + 1 >= len(self.state.turn.speaker_order)

    def _next_role(self, after: str | None = None) -> str:
        """Who speaks after ``after`` (default: the current speaker): the next in order, or the moderator
        after the last round."""
        turn = self.state.turn
        index = (turn.current_speaker_index if after is None else turn.speaker_order.index(after)) + 1
        if index < len(turn.speaker_order):
            return turn.speaker_order[index]
        if turn.round + 1 > turn.max_rounds:
            return TEXT[self.language]["next_moderator"]
        return turn.speaker_order[0]

    # --- reading and writing ---------------------------------------------------------------------

    def read_reply(self, role: str, text: str, now: str) -> Candidate:
        action: RoundtableAction
        if self._concluding(role):
            minutes, problem = parse_reply(text, Minutes)
            if minutes is None:
                return Candidate(None, [problem] if problem else [])
            minutes = _plain_parts(minutes)
            action = RoundtableClosing(minutes=minutes, next_state=close_state(self.state.turn))
        else:
            reply, problem = parse_reply(text, RoundtableReply)
            if reply is None:
                return Candidate(None, [problem] if problem else [])
            if self.sealed_phase() is not None:  # checked as a turn when revealed, in speaking order
                if reply.consensus_reached:
                    early = "consensus_reached is true in a sealed opening, where no one has heard the others."
                    return Candidate(None, [reply_format_violation(early)])
                return Candidate(reply)
            current = self.state.turn.current_speaker
            if not same_role(role, current):  # the meeting moved on under us: never write this reply as another's
                taken = f"the floor is {current}'s now (the meeting changed since {role} was asked); {role} waits."
                return Candidate(None, [RULES.violation("ROUNDTABLE_CURRENT_SPEAKER", taken)])
            if reply.consensus_reached and not self._everyone_will_have_spoken():
                early = "consensus_reached is true before every speaker has spoken; set it to false."
                return Candidate(None, [reply_format_violation(early)])
            action = turn_from_reply(self.state, reply, self.language)
        return Candidate(action, self.machine.validate(self.state, action))

    def commit(self, turn: RoundtableAction) -> None:
        """A speech keeps the meeting's state in memory (record.MeetingWriter); the minutes, which close it, and
        any refusal read the meeting back."""
        try:
            if isinstance(turn, RoundtableTurn):
                self.writer.commit_speech(turn.speech, turn.next_state)  # speech, then turn.json
                return
            if isinstance(turn, RoundtableClosing):
                record.write_minutes(self.record_path, turn.minutes, self.language)  # MINUTES.md, then turn.json
        except BaseException:
            with contextlib.suppress(UserError):  # a meeting left unreadable: the refusal itself says more
                self._load()  # the record may have changed under us; the caller sees the refusal
            raise
        self._load()

    def fail(self, role: str, reason: str, now: str) -> Outcome:
        reason = " ".join(reason.split()) or f"{role} gave no valid reply"
        line = json.dumps({"at": now, "role": role, "reason": reason}, ensure_ascii=False)
        append_log_line(self.record_path / FAILURES_FILE, line)
        if self._concluding(role):
            try:
                record.write_minutes(self.record_path, self._failure_minutes(reason), self.language)
                self._load()
            except (ProtocolViolationError, UserError, OSError):
                pass  # the record changed under us: it stays concluding and `moot resume` asks the moderator again
            self.failure = Outcome(
                name="closed", reason=f"moot closed the meeting after the moderator failed: {reason}"
            )
        else:
            self.failure = Outcome(name=RUN_HALTED, reason=f"{reason}; `moot resume` asks {role} again")
        return self.failure

    def _failure_minutes(self, reason: str) -> Minutes:
        """The minutes moot writes when the moderator cannot: what happened, and the failure unresolved."""
        text = TEXT[self.language]
        speeches = self._speeches()
        names = [speech_file_name(s.sequence, s.role) for s in speeches]
        turn = self.state.turn
        # Concluding inside the round limit means the last speech declared consensus.
        declared = turn.round <= turn.max_rounds and speeches
        consensus = text["declared"].format(role=speeches[-1].role, file=names[-1]) if declared else text["undeclared"]
        return Minutes(
            summary=text["failed_summary"].format(count=len(speeches), files=", ".join(names)),
            consensus=consensus,
            unresolved=text["failed_unresolved"].format(reason=reason.rstrip(".")),
            action_items=text["failed_actions"],
        )

    def summary(self) -> Summary:
        summary = self.machine.summary(self.state)
        detail = {**summary.detail, "record": str(self.record_path), "language": self.language}
        if self.failure is not None:
            return summary.model_copy(update={"outcome": self.failure, "next_speaker": None, "detail": detail})
        return summary.model_copy(update={"detail": detail})

    @classmethod
    def limit_refusal(cls, option: str) -> str | None:
        return (
            "the roundtable spec closes a meeting once its rounds are used (the moderator's minutes end it), so its "
            "round limit cannot be raised; start a new meeting with `moot run roundtable`."
        )

    def call_plan(self) -> list[str]:
        """The speakers in their order, round after round up to the round limit, then the moderator's minutes."""
        turn = self.state.turn
        speeches = taking_turns(turn.speaker_order, self.next_speaker(), turn.max_rounds * len(turn.speaker_order))
        return [*speeches, MODERATOR]


# --- helpers -----------------------------------------------------------------------------------

_CJK = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]")


_STRUCTURE_LINE = re.compile(r"^( {0,3})(#|```|~~~)", re.MULTILINE)


def _plain_parts(minutes: Minutes) -> Minutes:
    """Each part's text with its Markdown headings and code fences escaped (``\\#``), so that MINUTES.md
    reads back as the four parts the moderator wrote: a heading inside a part would end it."""
    escaped = {
        name: _STRUCTURE_LINE.sub(lambda m: f"{m.group(1)}\\{m.group(2)}", getattr(minutes, name).strip())
        for name in Minutes.model_fields
    }
    return Minutes(**escaped)


def _has_cjk(text: str) -> bool:
    return _CJK.search(text) is not None


def _agenda_text(options: RoundtableOptions) -> str:
    """AGENDA.md's background: the --agenda file, the --topic, or both."""
    parts: list[str] = []
    if options.agenda is not None:
        text, problems = read_text(options.agenda)
        if text is None:
            raise UserError(f"cannot read the agenda file: {problems[0].message}")
        parts.append(text.strip())
    if options.topic and options.topic.strip():
        language: Language = options.language or ("zh" if _has_cjk(options.topic) else "en")
        parts.insert(0, TEXT[language]["topic"].format(topic=" ".join(options.topic.split())))
    if not any(parts):
        raise UserError("a meeting needs a subject; give --topic TEXT or --agenda FILE.")
    if options.background:
        parts.append(options.background.strip())
    return "\n\n".join(parts)


def _schema(model: type[RoundtableReply] | type[Minutes], limits: dict[str, int], compact: bool) -> dict[str, Any]:
    """The model's JSON Schema with non-empty strings (bounded for a small model), every property required."""
    schema = json_schema_of(model)
    for name, limit in limits.items():
        schema["properties"][name].update({"minLength": 1, **({"maxLength": limit} if compact else {})})
    schema["required"] = list(schema["properties"])
    return schema
