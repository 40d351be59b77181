"""Markdown turn records: a header, then turns, each turn's text digested into the record's chain.

A protocol whose record is kept this way subclasses :class:`TurnRecord` and writes only what is its own: how
the record reads (:meth:`TurnRecord.read`, with line numbers), how a turn renders, which protocol replays the
turns and what else its rules say of a record. The base gives it the rest, the same way for every protocol:

- ``check``: format, rules and the digest chain, every violation at its file and line;
- ``load``: the replayed state of a record that can take turns, its chain completed if a crash left it short;
- ``repair``: that completion alone (what ``moot resume`` does on opening a record);
- ``append``: validate turns against the record on disk, then write them (and the outcome, when they reach
  one) in one append + fsync with the chain's mark after them. A write that would not read back as the
  turns given is refused, and a record someone else wrote in between is read and checked again first.
  Several turns appended together appear together or not at all: how a sealed phase is revealed.
- ``writer``: the same appends for a run that writes many: the record is read, checked and replayed once,
  then each append is validated in memory, and only its new text is read back where the format can read a
  piece alone (:meth:`TurnRecord.read_piece`), so a turn costs the same at turn 600 as at turn 6.
  A format whose turns change what comes before them (:meth:`TurnRecord.rewritten`) has such a write replace
  the record in one atomic rename instead, every earlier turn's text kept byte for byte.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Generic, TypeVar

from moot.core.chain import ChainCheck, ChainMark, RecordAppender, inspect_chain, repair_chain
from moot.core.files import CheckReport, FileStamp, read_text, unreadable
from moot.core.machine import DeliberationProtocol, Outcome, StateT, TurnT
from moot.errors import ProtocolViolationError, RecordChangedError, Violation

ConfigT = TypeVar("ConfigT")


@dataclass
class Entry(Generic[TurnT]):
    """One turn as the record holds it."""

    turn: TurnT
    line: int  # 1-based line where the turn starts
    text: str  # the turn's exact text, which the digest chain covers


EntryT = TypeVar("EntryT", bound=Entry[Any])  # a format's entries may say more of a turn (where its parts are)


@dataclass
class Reading(Generic[ConfigT, EntryT]):
    """What :meth:`TurnRecord.read` found. Reading never raises: problems are located ``violations``."""

    config: ConfigT | None  # None: the header could not be read, so nothing is replayed
    turns: list[EntryT] = field(default_factory=list)
    violations: list[Violation] = field(default_factory=list)
    marks: list[ChainMark] = field(default_factory=list)  # the chain marks found after appends

    def chained(self) -> list[tuple[str, int]]:
        """(text, line) of everything the chain covers: the turns read; a format that keeps turns it cannot read
        (past the end of a protocol, say) adds them so that the chain still finds them edited or removed."""
        return [(entry.text, entry.line) for entry in self.turns]


@dataclass
class Inspection(Generic[ConfigT, TurnT, StateT, EntryT]):
    """A record read, replayed and held against its chain; ``protocol`` and ``state`` are None when unreadable."""

    reading: Reading[ConfigT, EntryT]
    protocol: DeliberationProtocol[TurnT, StateT] | None
    state: StateT | None
    violations: list[Violation]
    chain: ChainCheck = field(default_factory=ChainCheck)

    @property
    def config(self) -> ConfigT:
        """The header's configuration, for an inspection that replayed (``protocol`` is not None)."""
        assert self.reading.config is not None
        return self.reading.config


class TurnRecord(ABC, Generic[ConfigT, TurnT, StateT, EntryT]):
    """The record of one protocol; see the module docstring for what it gives. ``EntryT`` is ``Entry[TurnT]`` or a
    subclass of it."""

    protocol_name: str  # as reports name it
    format_rule: Violation  # what a refused write says: the turn's text would not read back as written

    @abstractmethod
    def read(self, text: str, file: str) -> Reading[ConfigT, EntryT]:
        """The record's header and turns. Never raises."""

    @abstractmethod
    def protocol(self, config: ConfigT) -> DeliberationProtocol[TurnT, StateT]:
        """The rules the turns are replayed against."""

    @abstractmethod
    def render_turn(self, turn: TurnT) -> str:
        """A turn's text as :meth:`read` must read it back."""

    def render_noted(self, turn: TurnT, note: Any) -> str:
        """A turn's text with ``note``, what a writer was given to record beside the turn without being part of
        it (the Agora's marks of where each cited fact was found, say); :meth:`read` must still read back the turn.
        A format without notes renders the turn alone."""
        return self.render_turn(turn)

    def render_outcome(self, outcome: Outcome) -> str:
        """The section that closes a record when its turns reach an outcome; none unless overridden."""
        return ""

    def rewritten(self, text: str, file: str, turns: Sequence[TurnT], state: StateT) -> str | None:
        """The whole new record, for ``turns`` that change what comes before them (a header that shows their
        state, say, or a closing section they must precede); ``None`` (the default) appends them. ``text`` is
        the record as it is and ``state`` the state after the turns. Every earlier turn's text must stay as it
        was, and the chain's mark over all the turns (``ChainMark.of``) must come after every other mark: the
        writer refuses a record that would not read back so, and replaces the record in one atomic rename. The
        new record holds all the turns give (their outcome section, if the format has one); a write with notes
        (:meth:`render_noted`) cannot rewrite."""
        return None

    def read_piece(self, piece: str, file: str) -> Reading[ConfigT, EntryT] | None:
        """The turns (and chain marks) in ``piece``, text about to be appended after a record's last turn, for a
        format whose turns read the same alone as in their record; ``None`` (the default) reads the whole record
        again instead. The reading's ``config`` is not used, and its lines count from the piece's start."""
        return None

    def turn_of(self, entry: EntryT, protocol: DeliberationProtocol[TurnT, StateT], state: StateT) -> TurnT:
        """The turn that ``entry`` is replayed as, in ``state``: its own, unless the format reads turns with
        parts too broken to read and stands in for them from the state before (so that replay blames no later
        turn for them)."""
        turn: TurnT = entry.turn
        return turn

    def gap(self, text: str) -> str:
        """What goes between a record's ``text`` and the turns appended to it: one blank line, after whatever
        line breaks end the record."""
        return "\n" * max(0, 2 - (len(text) - len(text.rstrip("\n"))))

    def refusing(self, inspection: Inspection[ConfigT, TurnT, StateT, EntryT]) -> list[Violation]:
        """The errors a writer refuses the record for: any, but a chain a crash left short (which it completes).
        A format whose writer may go on after rules a history broke returns fewer."""
        return inspection.chain.blocking_in(inspection.violations)

    def line_of(self, entry: EntryT, violation: Violation) -> int:
        """Where a rule's violation of ``entry`` points: its first line unless the format knows better."""
        return entry.line

    def settle(
        self, reading: Reading[ConfigT, EntryT], protocol: DeliberationProtocol[TurnT, StateT], state: StateT, file: str
    ) -> tuple[list[Violation], StateT]:
        """What else the rules say of a replayed record (its outcome section, say), and the state it leaves."""
        return [], state

    def failed(self, protocol: DeliberationProtocol[TurnT, StateT], state: StateT, reason: str) -> StateT:
        """The state after a run that could not go on, for a record that keeps such failures."""
        raise NotImplementedError(f"a {self.protocol_name} record keeps no failure")

    # --- given ---------------------------------------------------------------------------------

    def inspect(self, text: str, path: Path) -> Inspection[ConfigT, TurnT, StateT, EntryT]:
        file = str(path)
        reading = self.read(text, file)
        if reading.config is None:
            return Inspection(reading, None, None, list(reading.violations))
        protocol = self.protocol(reading.config)
        state = protocol.initial_state()
        found = list(reading.violations)
        for number, entry in enumerate(reading.turns, start=1):
            turn = self.turn_of(entry, protocol, state)
            for violation in protocol.validate(state, turn):
                found.append(violation.at(file=file, line=self.line_of(entry, violation), turn=number))
            state = protocol.apply(state, turn)
        more, state = self.settle(reading, protocol, state, file)
        found += more
        chained = reading.chained()
        chain = inspect_chain(path, [text for text, _ in chained], [line for _, line in chained], reading.marks)
        return Inspection(reading, protocol, state, [*found, *chain.violations], chain)

    def check(self, path: Path) -> CheckReport:
        """Replay the record: format, rules, outcome and digest chain. Never raises."""
        text, problems = read_text(path)
        if text is None:
            return unreadable(path, problems, protocol=self.protocol_name)
        inspection = self.inspect(text, path)
        if inspection.protocol is None or inspection.state is None:
            return unreadable(path, inspection.violations, protocol=self.protocol_name)
        return CheckReport(
            path=str(path),
            protocol=self.protocol_name,
            violations=inspection.violations,
            summary=inspection.protocol.summary(inspection.state),
            repairable=inspection.chain.repairs_all(inspection.violations),
        )

    def load(self, path: Path) -> tuple[DeliberationProtocol[TurnT, StateT], StateT, str]:
        """The protocol, replayed state and text of a record that can take turns; raises
        :class:`ProtocolViolationError` on any error. A chain a crash left short is completed first."""
        inspection, text = self._writable(path)
        assert inspection.protocol is not None and inspection.state is not None
        return inspection.protocol, inspection.state, text

    def _writable(self, path: Path) -> tuple[Inspection[ConfigT, TurnT, StateT, EntryT], str]:
        text, problems = read_text(path)
        if text is None:
            raise ProtocolViolationError(problems)
        inspection = self.inspect(text, path)
        errors = self.refusing(inspection)
        if inspection.protocol is None or inspection.state is None or errors:
            raise ProtocolViolationError(errors)
        if inspection.chain.repairable:
            repair_chain(path, _chained_texts(inspection.reading), inspection.reading.marks)
        return inspection, text

    def repair(self, path: Path) -> bool:
        """Complete the chain of a record a crash left one append short; True when it wrote. Anything else is
        left for ``moot check`` and the next writer to report."""
        text, _ = read_text(path)
        reading = self.read(text, str(path)) if text is not None else None
        if reading is None or reading.config is None or any(v.is_error for v in reading.violations):
            return False
        return repair_chain(path, _chained_texts(reading), reading.marks)

    def append(self, path: Path, turns: Sequence[TurnT], failure: str | None = None) -> StateT:
        """Validate ``turns`` against the record, then append them (and the outcome, if reached) in one write.

        ``failure`` ends an open record with that reason (:meth:`failed`). Raises :class:`ProtocolViolationError`
        on any broken rule, and on turns that would not read back as given; the record is then left as it was.
        """
        return self.writer(path).append(turns, failure).state

    def writer(self, path: Path) -> TurnWriter[ConfigT, TurnT, StateT, EntryT]:
        """The record open for a run's appends (see :class:`TurnWriter`); raises :class:`ProtocolViolationError`
        when it cannot take turns."""
        return TurnWriter(self, path)


def _chained_texts(reading: Reading[Any, Any]) -> list[str]:
    return [text for text, _ in reading.chained()]


@dataclass(frozen=True)
class Written(Generic[StateT]):
    """What :meth:`TurnWriter.append` wrote: the state after it, and the warnings its turns drew."""

    state: StateT
    warnings: list[Violation]


class TurnWriter(Generic[ConfigT, TurnT, StateT, EntryT]):
    """A record open for appends: read, checked and replayed once, then each append validated against the state
    in memory and written with one append + fsync. When someone else wrote the record in between, it is read and
    checked in full again before the turns are validated against it."""

    def __init__(self, record: TurnRecord[ConfigT, TurnT, StateT, EntryT], path: Path) -> None:
        self.record, self.path = record, path
        self._open()

    def _open(self) -> None:
        stamp = FileStamp.of(self.path)  # before the read: a write in between shows as a changed stamp
        inspection, self.text = self.record._writable(self.path)
        assert inspection.protocol is not None and inspection.state is not None
        self.protocol, self.state = inspection.protocol, inspection.state
        self.appender = RecordAppender(self.path, stamp, _chained_texts(inspection.reading))

    def append(self, turns: Sequence[TurnT], failure: str | None = None, notes: Sequence[Any] = ()) -> Written[StateT]:
        """Validate ``turns``, then append them (and the outcome, if reached) in one write; ``failure`` ends an
        open record with that reason, and ``notes``, one per turn when given, are written beside the turns
        (:meth:`TurnRecord.render_noted`). Raises :class:`ProtocolViolationError` on any broken rule, and on turns
        that would not read back as given; the record is then left as it was."""
        if notes and len(notes) != len(turns):
            raise ValueError(f"{len(notes)} notes for {len(turns)} turns: give one per turn, or none")
        if FileStamp.of(self.path) != self.appender.stamp:  # written by someone else: validate against that
            self._open()
        try:
            return self._append(turns, failure, notes)
        except RecordChangedError:  # written in between the check above and the append
            self._open()
            return self._append(turns, failure, notes)

    def _append(self, turns: Sequence[TurnT], failure: str | None, notes: Sequence[Any]) -> Written[StateT]:
        record, protocol, state = self.record, self.protocol, self.state
        warnings: list[Violation] = []
        for turn in turns:
            try:
                state, more = protocol.step(state, turn)
            except ProtocolViolationError as refused:
                raise ProtocolViolationError([v.at(file=str(self.path)) for v in refused.violations]) from None
            warnings += more
        if failure is not None and protocol.outcome(state) is None:
            state = record.failed(protocol, state, failure)
        whole = record.rewritten(self.text, str(self.path), turns, state) if turns else None
        if whole is not None:
            if notes:
                raise ValueError("a record that rewrites itself for turns takes no notes: render them in rewritten")
            self._replace(whole, list(turns))
            self.state = state
            return Written(state, warnings)
        outcome = protocol.outcome(state)
        ending = [piece for piece in ([record.render_outcome(outcome)] if outcome is not None else []) if piece]
        if notes:
            rendered = [record.render_noted(turn, note) for turn, note in zip(turns, notes, strict=True)]
        else:
            rendered = [record.render_turn(turn) for turn in turns]
        gap = record.gap(self.text)
        alone = self._read_back(gap + "\n".join([*rendered, *ending]), len(turns))
        chain_mark = self.appender.mark_after(alone.texts) if turns else None
        mark = [f"{chain_mark.line()}\n"] if chain_mark is not None else []
        added = gap + "\n".join([*rendered, *mark, *ending])
        # The turns, their texts and the chain's mark after them must all read back as written.
        found = self._read_back(added, len(turns))
        if (found.turns, found.texts) != (list(turns), alone.texts):
            raise self._refusal()
        if chain_mark is not None and found.last_mark != chain_mark:
            raise self._refusal()
        self.appender.append(added.encode("utf-8"), alone.texts)
        self.text, self.state = self.text + added, state
        return Written(state, warnings)

    def _replace(self, whole: str, turns: list[TurnT]) -> None:
        """Write ``whole`` (:meth:`TurnRecord.rewritten`) in place of the record, refused unless it reads back as
        every earlier turn's text, then ``turns``, with the chain's mark after them the last."""
        file, count = str(self.path), len(turns)
        before, after = _chained_texts(self.record.read(self.text, file)), self.record.read(whole, file)
        chained = _chained_texts(after)
        texts = chained[len(before) :]
        if (
            after.violations
            or [entry.turn for entry in after.turns[len(after.turns) - count :]] != turns
            or chained[: len(before)] != before
            or len(texts) != count
            or not after.marks
            or after.marks[-1] != self.appender.mark_after(texts)
        ):
            raise self._refusal(after)
        self.appender.replace(whole.encode("utf-8"), texts)
        self.text = whole

    def _read_back(self, added: str, count: int) -> _ReadBack[TurnT]:
        """The last ``count`` turns, their texts and the last chain mark as the record reads with ``added``;
        raises on any problem (:meth:`_refusal`)."""
        file = str(self.path)
        piece = self.record.read_piece(added, file)
        reading = piece if piece is not None else self.record.read(self.text + added, file)
        entries = reading.turns[len(reading.turns) - count :] if count else []
        if reading.violations or len(entries) != count or (piece is not None and len(piece.turns) != count):
            raise self._refusal(reading if piece is None else None)
        last_mark = reading.marks[-1] if reading.marks else None
        return _ReadBack([entry.turn for entry in entries], [entry.text for entry in entries], last_mark)

    def _refusal(self, whole: Reading[ConfigT, EntryT] | None = None) -> ProtocolViolationError:
        """What a write that would not read back as given raises: the errors of the ``whole`` record as it would
        read, which point at its lines, else the format's rule, at the record's file (a piece's lines are its
        own)."""
        errors = [v for v in whole.violations if v.is_error] if whole is not None else []
        return ProtocolViolationError(errors or [self.record.format_rule.at(file=str(self.path))])


@dataclass(frozen=True)
class _ReadBack(Generic[TurnT]):
    turns: list[TurnT]
    texts: list[str]
    last_mark: ChainMark | None
