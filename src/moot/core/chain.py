"""Tamper evidence: a hash chain over the accepted turns of a record moot wrote.

Beside each record moot keeps a sidecar of JSON lines, one per accepted turn:
``{"turn": N, "digest": "<sha256 of the turn's exact text>", "chain": "<sha256(previous chain + digest)>"}``.
``moot check`` recomputes the digests from the record on disk; a turn whose text no longer matches
is ``PRIOR_TURN_MODIFIED``, a recorded turn that is gone is ``PRIOR_TURN_REMOVED``. Records written
by other tools have no sidecar and are checked by the protocol rules alone.

A record moot wrote also carries the chain's head inside itself, as one Markdown comment line that no
renderer shows and no seed format forbids: ``<!-- moot-chain turns=N head=<chain of turn N> -->``. Without
the sidecar, ``moot check`` recomputes the head from the turns on disk, so an edit still shows
(``PRIOR_TURN_MODIFIED``, not located to one turn), and the missing sidecar is the warning ``CHAIN_MISSING``.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from moot.core.files import (
    FILE_RULES,
    FileStamp,
    RecordChangedError,
    append_record,
    atomic_write_text,
    refuse_symlink,
)
from moot.core.machine import Violation

GENESIS = "0" * 64


def chain_path(artifact: Path) -> Path:
    """The sidecar of a file record is ``.NAME.chain``; of a meeting directory, ``DIR/.moot.chain``."""
    if artifact.is_dir():
        return artifact / ".moot.chain"
    return artifact.with_name(f".{artifact.name}.chain")


def turn_digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def build_chain(turn_texts: Sequence[str], after: int = 0, link: str = GENESIS) -> list[dict[str, object]]:
    """The rows for ``turn_texts``, numbered from ``after + 1`` and linked to the chain ``link`` of turn ``after``."""
    rows: list[dict[str, object]] = []
    for number, text in enumerate(turn_texts, start=after + 1):
        digest = turn_digest(text)
        link = hashlib.sha256((link + digest).encode("ascii")).hexdigest()
        rows.append({"turn": number, "digest": digest, "chain": link})
    return rows


def _chain_lines(rows: Sequence[dict[str, object]]) -> str:
    return "".join(json.dumps(row, sort_keys=True) + "\n" for row in rows)


@dataclass(frozen=True)
class ChainMark:
    """The chain's head as the record itself carries it."""

    turns: int
    head: str

    @classmethod
    def of(cls, turn_texts: Sequence[str]) -> ChainMark:
        rows = build_chain(turn_texts)
        return cls(len(rows), str(rows[-1]["chain"]) if rows else GENESIS)

    @classmethod
    def parse(cls, line: str) -> ChainMark | None:
        found = _MARK.match(line)
        return cls(int(found.group("turns")), found.group("head")) if found else None

    def line(self) -> str:
        return f"<!-- moot-chain turns={self.turns} head={self.head} -->"


_MARK = re.compile(r"^\s*<!--\s*moot-chain\s+turns=(?P<turns>\d{1,9})\s+head=(?P<head>[0-9a-f]{64})\s*-->\s*$")


def record_chain(artifact: Path, turn_texts: Sequence[str]) -> None:
    """Write the chain for every accepted turn (atomically, after the record itself was written)."""
    atomic_write_text(chain_path(artifact), _chain_lines(build_chain(turn_texts)))


def extend_chain(artifact: Path, turn_texts: Sequence[str], new_texts: Sequence[str]) -> None:
    """Add the rows of ``new_texts`` after ``turn_texts``, the turns a writer just checked against the chain.

    An append without fsync (see :class:`RecordAppender`) when the chain holds exactly ``turn_texts``' rows;
    otherwise (none yet, damaged, or a crash left it behind) the whole chain is written anew.
    """
    recorded, problems = read_chain(artifact)
    rows = build_chain(turn_texts)
    if recorded is None or problems or recorded != rows:
        record_chain(artifact, [*turn_texts, *new_texts])
        return
    refuse_symlink(chain_path(artifact))
    _append_rows(chain_path(artifact), build_chain(new_texts, len(rows), _head(rows)))


def read_chain(artifact: Path) -> tuple[list[dict[str, object]] | None, list[Violation]]:
    """The recorded chain, ``None`` when the record has none."""
    path = chain_path(artifact)
    if not path.is_file():
        return None, []
    rows: list[dict[str, object]] = []
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        lines = None
    problem = lines is None
    for line in lines or []:
        try:
            row = json.loads(line)
        except (ValueError, RecursionError):
            problem = True
            break
        if not (isinstance(row, dict) and isinstance(row.get("digest"), str) and isinstance(row.get("chain"), str)):
            problem = True
            break
        rows.append(row)
    if problem:
        warning = FILE_RULES.violation(
            "CHAIN_UNREADABLE",
            f"{path} is damaged, so earlier turns cannot be verified; delete it to stop this warning.",
        ).at(file=str(path))
        return None, [warning]
    return rows, []


def verify_mark(artifact: Path, turn_texts: Sequence[str], mark: ChainMark) -> list[Violation]:
    """Without the sidecar: the turns on disk against the head the record carries, and a warning."""
    file = str(artifact)
    found = [
        FILE_RULES.violation(
            "CHAIN_MISSING",
            f"the record says moot wrote it, but its chain {chain_path(artifact).name} is missing; its turns were "
            "checked against the chain head inside the record instead, so restore the file to locate an edit.",
        ).at(file=file)
    ]
    if len(turn_texts) < mark.turns:
        found.append(
            FILE_RULES.violation(
                "PRIOR_TURN_REMOVED",
                f"the record says {mark.turns} turns were accepted but holds {len(turn_texts)}; restore the "
                "missing turns from version control.",
                turn=len(turn_texts) + 1,
            ).at(file=file)
        )
    elif ChainMark.of(turn_texts[: mark.turns]).head != mark.head:
        found.append(
            FILE_RULES.violation(
                "PRIOR_TURN_MODIFIED",
                f"one of the {mark.turns} accepted turns was edited (the chain head inside the record no longer "
                "matches); restore the original text from version control.",
            ).at(file=file)
        )
    return found


def verify_chain(
    artifact: Path,
    turn_texts: Sequence[str],
    turn_lines: Sequence[int | None] = (),
    mark: ChainMark | None = None,
) -> list[Violation]:
    """Compare the turns on disk with the recorded chain (else the ``mark`` the record carries).
    ``turn_lines`` locates each turn."""
    recorded, problems = read_chain(artifact)
    if recorded is None:
        if mark is not None and not chain_path(artifact).exists():
            return verify_mark(artifact, turn_texts, mark)
        return problems
    file = str(artifact)
    found: list[Violation] = []
    for index, row in enumerate(recorded):
        number = index + 1
        if index >= len(turn_texts):
            found.append(
                FILE_RULES.violation(
                    "PRIOR_TURN_REMOVED",
                    f"turn {number} was accepted but is no longer in the record; restore it from version control.",
                    turn=number,
                ).at(file=file)
            )
            continue
        if turn_digest(turn_texts[index]) != row["digest"]:
            line = turn_lines[index] if index < len(turn_lines) else None
            found.append(
                FILE_RULES.violation(
                    "PRIOR_TURN_MODIFIED",
                    f"turn {number} was edited after it was accepted; restore its original text.",
                    turn=number,
                ).at(file=file, line=line)
            )
    return found


class RecordAppender:
    """A record file open for turns: one append + fsync of the record per turn, then one append to its chain.

    Made by a writer that has just read and fully checked the record (format, rules, chain) and holds
    ``turn_texts``, with the record's :class:`FileStamp` taken *before* that read. Between turns it keeps
    the stamp and the chain's head in memory, so a turn costs the same at turn 60 as at turn 6. Before
    writing it compares both files with what it left; on any difference it raises
    :class:`RecordChangedError` having written nothing, and the writer reads and checks the record again.

    The chain is appended after the record's fsync and is not fsync'd itself: a killed process leaves it
    whole, and a power cut can only cost its latest rows, which the next writer adds back (a chain
    shorter than the record is what a crash between the two writes leaves, and proves nothing false).
    """

    def __init__(self, path: Path, stamp: FileStamp, turn_texts: Sequence[str]) -> None:
        self.path = path
        self.stamp = stamp
        self.chain = chain_path(path)
        rows = build_chain(turn_texts)
        recorded, problems = read_chain(path)
        if recorded is None or problems or len(recorded) > len(rows):
            record_chain(path, turn_texts)  # none yet (a record another tool began), or rewritten whole
        elif len(recorded) < len(rows):  # a crash fell between a record's append and its chain's
            self._append_rows(rows[len(recorded) :])
        self.turns, self.head = len(rows), _head(rows)
        self.chain_size = self.chain.stat().st_size

    def append(self, data: bytes, turn_texts: Sequence[str]) -> None:
        """Append ``data`` (holding the new turns ``turn_texts``) to the record, then their rows to the chain."""
        refuse_symlink(self.chain)
        try:
            chain_size = self.chain.stat().st_size
        except FileNotFoundError:
            chain_size = -1
        if chain_size != self.chain_size:
            raise RecordChangedError(f"{self.chain} changed since moot last wrote it")
        self.stamp = append_record(self.path, data, self.stamp)
        rows = build_chain(turn_texts, self.turns, self.head)
        self._append_rows(rows)
        if rows:
            self.turns, self.head = self.turns + len(rows), str(rows[-1]["chain"])

    def _append_rows(self, rows: Sequence[dict[str, object]]) -> None:
        self.chain_size = _append_rows(self.chain, rows)


def _append_rows(chain: Path, rows: Sequence[dict[str, object]]) -> int:
    """Append ``rows`` to the chain file (no fsync); returns its new size."""
    data = _chain_lines(rows).encode("ascii")
    fd = os.open(chain, os.O_WRONLY | os.O_APPEND)
    try:
        os.write(fd, data)
        return os.fstat(fd).st_size
    finally:
        os.close(fd)


def _head(rows: Sequence[dict[str, object]]) -> str:
    return str(rows[-1]["chain"]) if rows else GENESIS
