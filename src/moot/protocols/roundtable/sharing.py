"""Each host's meeting directory, written from the ledger: the roundtable's counterpart of
:mod:`moot.protocols.duel.sharing`.

The ledger holds a meeting as its opening files (``AGENDA.md`` and the first ``turn.json``, in the debate
row) and, for each accepted turn, its exact text (a speech, or ``MINUTES.md`` last), the name of its file
and the ``turn.json`` it committed (the turn row's ``files``). Every host renders the same files from one
snapshot, so the directories are byte-identical.

A sync writes in the order of a commit: the new speech files, then ``MINUTES.md`` (each ending with the
chain's head after it, as a commit writes them), then ``turn.json``, then the chain sidecar, each atomically. A crash in between leaves what ``moot check`` reports as an uncommitted
speech (repairable), and the next sync finishes it. A host that has no directory yet gets a whole one,
built in a hidden staging directory and renamed into place. A directory whose agenda, speeches or minutes
disagree with the ledger (an outside edit) is never written: ``moot check`` and the next guarded write
report it.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import secrets
import shutil
from dataclasses import dataclass
from pathlib import Path

from moot.core.chain import marks_of, read_chain, record_chain, split_mark, turn_digest, with_mark
from moot.core.files import atomic_write_text, folder_lock, fsync_directory, read_text
from moot.errors import Refused, Violation
from moot.ledger import DebateRecord
from moot.protocols.roundtable import record as meeting
from moot.protocols.roundtable.guide import GUIDE_TEXT
from moot.protocols.roundtable.machine import (
    AGENDA_FILE,
    MINUTES_FILE,
    TURN_FILE,
    MeetingState,
    Speech,
    TurnState,
    replay_meeting,
    speech_file_name,
)
from moot.tools.errors import refused_by

Entry = tuple[str, str]
"""One accepted turn as a file: (file name, exact text)."""


@dataclass(frozen=True)
class MeetingFiles:
    """A meeting's files (the chain aside): the agenda, one entry per accepted turn, and turn.json."""

    agenda: str
    turn_json: str
    entries: tuple[Entry, ...]

    @property
    def texts(self) -> list[str]:
        """What the chain covers: the speeches in order, then the minutes."""
        return [text for _, text in self.entries]

    def with_turn(self, file: str, text: str, turn_json: str) -> MeetingFiles:
        return MeetingFiles(self.agenda, turn_json, (*self.entries, (file, text)))

    def replayed(self, where: Path) -> tuple[TurnState, MeetingState]:
        """The meeting's turn.json and replayed state; refused (located in ``where``) unless it checks clean."""
        state, problems = meeting.parse_turn_json(self.turn_json, str(where / TURN_FILE))
        errors = [v for v in problems if v.is_error]
        if state is None or errors:
            raise refused_by(errors or problems)
        speeches: list[Speech] = []
        minutes = None
        for file, text in self.entries:
            if file == MINUTES_FILE:
                minutes, found = meeting.parse_minutes(text, str(where / MINUTES_FILE))
                problems += found
                continue
            named, found = meeting.parse_speech_name(file)
            problems += found
            if named is not None:
                speeches.append(Speech(sequence=named[0], role=named[1], body=text))
        replay = replay_meeting(state, speeches, minutes, meeting.field_lines(self.turn_json))
        errors = [_located(v, where) for v in [*problems, *replay.violations] if v.is_error]
        if errors:
            raise refused_by(errors)
        return state, replay.state


def _located(violation: Violation, where: Path) -> Violation:
    return violation if violation.file and os.path.isabs(violation.file) else violation.at(file=str(where))


@dataclass(frozen=True)
class LocalMeeting:
    """A host's meeting directory as it is on disk."""

    agenda: str | None
    turn_json: str
    entries: tuple[Entry, ...]

    @property
    def texts(self) -> list[str]:
        return [text for _, text in self.entries]

    def layouts(self) -> list[str]:
        """Each local turn's ``files`` for the ledger (the last one with this directory's turn.json)."""
        last = len(self.entries)
        return [turn_files(file, self.turn_json if n == last else None) for n, (file, _) in enumerate(self.entries, 1)]


def local_meeting(directory: Path) -> LocalMeeting | None:
    """The meeting at ``directory`` if it exists and can be read (an unreadable one is left to the callers)."""
    if directory.is_symlink() or not directory.is_dir():
        return None
    record, _ = meeting.parse_meeting(directory)
    turn_json, _ = read_text(directory / TURN_FILE)
    if record is None or turn_json is None:
        return None
    entries: list[Entry] = [(speech_file_name(s.sequence, s.role), s.body) for s in record.speeches]
    if (directory / MINUTES_FILE).exists():
        text, _ = read_text(directory / MINUTES_FILE)
        if text is None:
            return None
        entries.append((MINUTES_FILE, split_mark(text)[0]))
    return LocalMeeting(record.agenda, turn_json, tuple(entries))


def opening_files(agenda: str, turn_json: str | None) -> str:
    """The ledger's ``opening`` of a meeting (``turn.json`` left out when only later turns know it)."""
    files = {AGENDA_FILE: agenda} if turn_json is None else {AGENDA_FILE: agenda, TURN_FILE: turn_json}
    return json.dumps(files, ensure_ascii=False, sort_keys=True)


def turn_files(file: str, turn_json: str | None) -> str:
    """A turn row's ``files``: where its text goes, and the turn.json it committed (if known)."""
    also = {} if turn_json is None else {TURN_FILE: turn_json}
    return json.dumps({"file": file, "also": also}, ensure_ascii=False, sort_keys=True)


def shared_meeting(found: DebateRecord, local: LocalMeeting | None, *, where: Path) -> MeetingFiles | None:
    """The meeting of the ledger snapshot ``found``; ``local`` supplies what an older moot kept only on disk.

    ``None`` when neither holds the meeting (the ledger has no opening files and the host no directory).
    """
    opening = json.loads(found.opening) if found.opening is not None else {}
    agenda = opening.get(AGENDA_FILE, local.agenda if local is not None else None)
    turn_json = opening.get(TURN_FILE)
    entries: list[Entry] = []
    for turn in found.turns:
        mine = local.entries[turn.turn - 1] if local is not None and turn.turn <= len(local.entries) else None
        files = json.loads(turn.files) if turn.files is not None else {}
        text = turn.body
        if text is None and mine is not None and turn_digest(mine[1]) == turn.digest:
            text = mine[1]
        file = files.get("file", mine[0] if mine is not None else None)
        if text is None or file is None:
            raise Refused(
                f"Turn {turn.turn} of {where} is only in the directory of the host that wrote it (an older moot "
                "stored its digest alone); the next speech on that host stores it, so take the floor there.",
                rule="TOOLS_TURN_TEXT_MISSING",
            )
        entries.append((file, text))
        turn_json = files.get("also", {}).get(TURN_FILE, turn_json)
    if local is not None and len(local.entries) == len(entries) and (turn_json is None or not found.turns):
        turn_json = turn_json or local.turn_json  # a meeting an older moot started: its turn.json is on disk
    if agenda is None or turn_json is None:
        if found.opening is None and local is None:
            return None
        raise Refused(
            f"The ledger does not hold all of meeting {where} and this host has no copy that does; take the floor "
            "on the host that started it.",
            rule="TOOLS_TURN_TEXT_MISSING",
        )
    return MeetingFiles(agenda, turn_json, tuple(entries))


def agrees(local: LocalMeeting, wanted: MeetingFiles) -> bool:
    """The local directory's agenda and accepted turns are the ledger's (so it is only behind, not edited)."""
    return (
        local.agenda == wanted.agenda
        and len(local.entries) <= len(wanted.entries)
        and all(a == b for a, b in zip(local.entries, wanted.entries, strict=False))
    )


def _previous_turn_json(found: DebateRecord) -> str | None:
    """The turn.json before the last turn: what a crash between a speech file and turn.json leaves."""
    opening = json.loads(found.opening) if found.opening is not None else {}
    before = opening.get(TURN_FILE)
    for turn in found.turns[:-1]:
        files = json.loads(turn.files) if turn.files is not None else {}
        before = files.get("also", {}).get(TURN_FILE, before)
    return before


def _create(directory: Path, wanted: MeetingFiles) -> None:
    """A whole new meeting directory, staged and renamed into place (never half a meeting)."""
    guide = directory.parent / meeting.GUIDE_FILE
    if not guide.exists():
        atomic_write_text(guide, GUIDE_TEXT)
    staging = directory.parent / f".new-meeting.{secrets.token_hex(8)}.tmp"
    staging.mkdir()
    try:
        atomic_write_text(staging / AGENDA_FILE, wanted.agenda)
        for (file, text), mark in zip(wanted.entries, marks_of(wanted.texts), strict=True):
            atomic_write_text(staging / file, with_mark(text, mark))
        atomic_write_text(staging / TURN_FILE, wanted.turn_json)
        record_chain(staging, wanted.texts)
        try:
            os.rename(staging, directory)
        except OSError as exc:
            if exc.errno in (errno.EEXIST, errno.ENOTEMPTY):
                return  # another process of this host created it meanwhile
            raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    fsync_directory(directory.parent)


def sync_meeting(directory: Path, found: DebateRecord) -> bool:
    """Bring the meeting directory up to date with the ledger snapshot ``found``; True when it wrote."""
    directory.parent.mkdir(parents=True, exist_ok=True)
    with folder_lock(directory.parent):
        if directory.is_symlink() or (directory.exists() and not directory.is_dir()):
            return False
        local = local_meeting(directory)
        if directory.exists() and any(directory.iterdir()) and local is None:
            return False  # unreadable: left for moot check
        wanted = shared_meeting(found, local, where=directory)
        if wanted is None:
            return False
        if local is None:
            with contextlib.suppress(OSError):
                directory.rmdir()  # an empty directory is replaced by the staged one
            _create(directory, wanted)
            return True
        if not agrees(local, wanted):
            return False
        wrote = False
        marks = marks_of(wanted.texts)
        for number in range(len(local.entries), len(wanted.entries)):
            file, text = wanted.entries[number]
            atomic_write_text(directory / file, with_mark(text, marks[number]))
            wrote = True
        if local.turn_json != wanted.turn_json and (wrote or local.turn_json == _previous_turn_json(found)):
            atomic_write_text(directory / TURN_FILE, wanted.turn_json)
            wrote = True
        chain, _ = read_chain(directory)
        if chain is None or len(chain) != len(wanted.entries):
            record_chain(directory, wanted.texts)
        return wrote
