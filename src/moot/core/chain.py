"""Tamper evidence: a hash chain over the accepted turns of a record moot wrote.

Beside each record moot keeps a sidecar of JSON lines, one per accepted turn:
``{"turn": N, "digest": "<sha256 of the turn's exact text>", "chain": "<sha256(previous chain + digest)>"}``.
The record carries the chain's head too, in the same write as the turns it covers: one Markdown comment
line that no renderer shows and no seed format forbids, ``<!-- moot-chain turns=N head=<chain of turn N> -->``,
after each append to a file record (a duel also keeps one under its header), and at the end of each file a
meeting holds one turn in (a roundtable speech, ``MINUTES.md``).

``moot check`` (:func:`inspect_chain`) recomputes both from the turns on disk:

- a turn whose text no longer matches is ``PRIOR_TURN_MODIFIED``, a recorded turn that is gone
  ``PRIOR_TURN_REMOVED``;
- a record moot wrote (it carries a mark, or has the sidecar or another of moot's files beside it) whose
  sidecar is gone is ``CHAIN_MISSING``; one whose sidecar covers fewer turns than it holds is
  ``CHAIN_SHORT``; a sidecar that is not moot's JSON lines is ``CHAIN_UNREADABLE``. All are errors.

Records written by other tools (none of that) are checked by the protocol rules alone; the first writer
of moot that opens one starts its chain. So are the turns of a record that moot only began (an empty
sidecar, no mark, no other file of moot's): agents that follow the seed by hand may write them.

A kill between a record's write and its chain's append leaves the sidecar exactly one append short. Every
writer that opens the record, and ``moot resume``, adds those rows (:func:`repair_chain`) once everything
else checks: when the record's mark covers the missing turns, they are first verified against it; a single
unmarked last turn (one a seed agent appended by hand, or a kill in an older moot) is adopted as it stands.
Nothing else is repaired: a sidecar shorter than that, damaged or disagreeing stays an error. ``moot check``
never writes; it reports a repairable chain as ``repairable``.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from moot.core.files import (
    FILE_RULES,
    FileStamp,
    append_record,
    atomic_write_text,
    create_pair,
    refuse_symlink,
    replace_record,
)
from moot.errors import RecordChangedError, Violation

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
        return cls(len(rows), _head(rows))

    @classmethod
    def after(cls, turns: int, head: str, new_texts: Sequence[str]) -> ChainMark:
        """The mark after ``new_texts`` are added to a chain of ``turns`` turns ending in ``head``."""
        return cls(turns + len(new_texts), _head(build_chain(new_texts, turns, head)) if new_texts else head)

    @classmethod
    def parse(cls, line: str) -> ChainMark | None:
        found = _MARK.match(line)
        return cls(int(found.group("turns")), found.group("head")) if found else None

    def line(self) -> str:
        return f"<!-- moot-chain turns={self.turns} head={self.head} -->"


_MARK = re.compile(r"^\s*<!--\s*moot-chain\s+turns=(?P<turns>\d{1,9})\s+head=(?P<head>[0-9a-f]{64})\s*-->\s*$")


def marks_of(turn_texts: Sequence[str]) -> list[ChainMark]:
    """The mark after each of ``turn_texts``: what a record kept as one file per turn carries, file by file."""
    return [ChainMark(int(str(row["turn"])), str(row["chain"])) for row in build_chain(turn_texts)]


def without_marks(text: str) -> str:
    """``text`` without its chain-mark lines: a record as a person reads it."""
    return "".join(line for line in text.splitlines(keepends=True) if not _MARK.match(line))


def with_mark(text: str, mark: ChainMark) -> str:
    """A file that holds one turn: its exact text, then the mark on a line of its own (see :func:`split_mark`)."""
    return f"{text}\n{mark.line()}\n"


def split_mark(content: str) -> tuple[str, ChainMark | None]:
    """A file's turn text and the mark :func:`with_mark` ended it with (``None``: a file moot did not write)."""
    body, newline, last = content.removesuffix("\n").rpartition("\n")
    mark = ChainMark.parse(last) if newline and content.endswith("\n") else None
    return (body, mark) if mark is not None and content == with_mark(body, mark) else (content, None)


def record_chain(artifact: Path, turn_texts: Sequence[str]) -> None:
    """Write the chain for every accepted turn (atomically, after the record itself was written)."""
    atomic_write_text(chain_path(artifact), _chain_lines(build_chain(turn_texts)))


def create_record(path: Path, header: str, exists: str) -> None:
    """Start a record: refuse an existing path (``exists`` says what to do instead), then write its empty
    digest chain and its header, two renames made durable by one fsync of the directory.

    The empty chain needs no fsync of its own: losing it to a power cut leaves a record without a chain,
    which its first writer starts anew. A stale chain from an earlier record at this path is emptied
    first, durably, so that it can never come back beside the new record.
    """
    if path.exists() or path.is_symlink():
        raise FileExistsError(f"{path} already exists; {exists}")
    chain = chain_path(path)
    if chain.exists() or chain.is_symlink():
        record_chain(path, [])
        atomic_write_text(path, header)
        return
    create_pair(path, header, chain)


def extend_chain(artifact: Path, turn_texts: Sequence[str], new_texts: Sequence[str]) -> None:
    """Add the rows of ``new_texts`` after ``turn_texts``, the turns a writer just checked against the chain.

    An append without fsync (see :class:`RecordAppender`) when the chain holds exactly ``turn_texts``' rows;
    otherwise (none yet, or a crash left it behind, which the writer's check allowed) the whole chain is
    written anew.
    """
    recorded, problems = read_chain(artifact)
    rows = build_chain(turn_texts)
    if recorded is None or problems or recorded != rows:
        record_chain(artifact, [*turn_texts, *new_texts])
        return
    refuse_symlink(chain_path(artifact))
    _append_rows(chain_path(artifact), build_chain(new_texts, len(rows), _head(rows)))


def read_chain(artifact: Path) -> tuple[list[dict[str, object]] | None, list[Violation]]:
    """The recorded chain, ``None`` when the record has none (or it is damaged: then with ``CHAIN_UNREADABLE``)."""
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
        return None, [_unreadable(artifact)]
    return rows, []


def _unreadable(artifact: Path) -> Violation:
    path = chain_path(artifact)
    return FILE_RULES.violation(
        "CHAIN_UNREADABLE",
        f"{path} is damaged, so the record's turns cannot be verified against it; restore it from a backup.",
    ).at(file=str(path))


@dataclass(frozen=True)
class ChainCheck:
    """What the chain says of a record: the violations, and whether :func:`repair_chain` would complete it."""

    violations: list[Violation] = field(default_factory=list)
    repairable: bool = False  # the sidecar is exactly one append short and everything else checks
    adoptable: bool = False  # every turn is another tool's: no chain row, no mark, none of moot's files

    @property
    def blocking(self) -> list[Violation]:
        """The chain's errors a writer must refuse the record for (see :meth:`blocking_in`)."""
        return self.blocking_in(self.violations)

    def blocking_in(self, violations: Sequence[Violation]) -> list[Violation]:
        """The errors of ``violations`` (a whole record's) a writer must refuse it for: all but a ``CHAIN_SHORT``
        that the writer repairs on opening it."""
        return [v for v in violations if v.is_error and not (self.repairable and v.rule == "CHAIN_SHORT")]

    def repairs_all(self, violations: Sequence[Violation]) -> bool:
        """Whether a repair leaves none of ``violations`` (a whole record's) an error: its report's ``repairable``."""
        return self.repairable and not self.blocking_in(violations)


def _heads(turn_texts: Sequence[str]) -> list[str]:
    """``heads[k]``: the chain after the first ``k`` turns (``heads[0]`` is the genesis)."""
    return [GENESIS, *(str(row["chain"]) for row in build_chain(turn_texts))]


def _line(turn_lines: Sequence[int | None], turn: int) -> int | None:
    return turn_lines[turn - 1] if 0 < turn <= len(turn_lines) else None


def _against_rows(
    artifact: Path, recorded: Sequence[dict[str, object]], turn_texts: Sequence[str], turn_lines: Sequence[int | None]
) -> list[Violation]:
    """Each recorded row against the turn on disk: edited and removed turns, and rows that do not link."""
    file = str(artifact)
    found: list[Violation] = []
    link = GENESIS
    for number, row in enumerate(recorded, start=1):
        if number > len(turn_texts):
            found.append(
                FILE_RULES.violation(
                    "PRIOR_TURN_REMOVED",
                    f"turn {number} was accepted but is no longer in the record; restore it from version control.",
                    turn=number,
                ).at(file=file)
            )
            continue
        digest = turn_digest(turn_texts[number - 1])
        if digest != row["digest"]:
            found.append(
                FILE_RULES.violation(
                    "PRIOR_TURN_MODIFIED",
                    f"turn {number} was edited after it was accepted; restore its original text.",
                    turn=number,
                ).at(file=file, line=_line(turn_lines, number))
            )
        link = hashlib.sha256((link + str(row["digest"])).encode("ascii")).hexdigest()
        if row["chain"] != link and not found:
            return [_unreadable(artifact)]  # the sidecar itself was edited: its rows prove nothing
    return found


def _against_marks(
    artifact: Path, marks: Sequence[ChainMark], heads: Sequence[str], turn_lines: Sequence[int | None]
) -> list[Violation]:
    """The heads the record carries against the turns on disk; the first that disagrees locates the edit."""
    file = str(artifact)
    held = len(heads) - 1
    verified = 0
    for mark in sorted(marks, key=lambda m: m.turns):
        if mark.turns > held:
            return [
                FILE_RULES.violation(
                    "PRIOR_TURN_REMOVED",
                    f"the record says {mark.turns} turns were accepted but holds {held}; restore the missing turns "
                    "from version control.",
                    turn=held + 1,
                ).at(file=file)
            ]
        if heads[mark.turns] != mark.head:
            first, last = verified + 1, mark.turns
            which = f"turn {last} was" if first == last else f"one of turns {first}-{last} was"
            turn = last if first == last else None
            return [
                FILE_RULES.violation(
                    "PRIOR_TURN_MODIFIED",
                    f"{which} edited after it was accepted (the chain head the record carries after turn {last} no "
                    "longer matches); restore the original text from version control.",
                    turn=turn,
                ).at(file=file, line=_line(turn_lines, turn or 0))
            ]
        verified = mark.turns
    return []


def other_sidecars(artifact: Path) -> bool:
    """True when moot keeps another file beside the record (run state, attempt log, sealed answers, ...)."""
    if artifact.is_dir():
        folder, prefix = artifact, ".moot."
    else:
        folder, prefix = artifact.parent, f".{artifact.name}."
    chain = chain_path(artifact).name
    try:
        with os.scandir(folder) as entries:
            return any(e.name.startswith(prefix) and e.name != chain and not e.name.endswith(".tmp") for e in entries)
    except OSError:
        return False


def _one_append_short(covered: int, held: int, marks: Sequence[ChainMark]) -> bool:
    """Whether the turns the sidecar lacks are what one write adds: the turns of the last mark, or one turn."""
    latest = max((mark.turns for mark in marks), default=None)
    if latest == held:  # the missing turns are proven by the mark written with them
        before = max((mark.turns for mark in marks if mark.turns < held), default=0)
        return covered >= before
    return held - covered == 1


def inspect_chain(
    artifact: Path,
    turn_texts: Sequence[str],
    turn_lines: Sequence[int | None] = (),
    marks: Sequence[ChainMark] = (),
) -> ChainCheck:
    """Compare the turns on disk (``turn_lines`` locates each) with the sidecar and the ``marks`` the record
    carries; see the module for the rules."""
    recorded, found = read_chain(artifact)
    file = str(artifact)
    chain = chain_path(artifact)
    tampered = _against_rows(artifact, recorded, turn_texts, turn_lines) if recorded is not None else []
    if tampered and tampered[0].rule == "CHAIN_UNREADABLE":
        found, tampered, recorded = tampered, [], None
    if not tampered and marks:
        tampered = _against_marks(artifact, marks, _heads(turn_texts), turn_lines)
    found += tampered
    held = len(turn_texts)
    if not chain.exists() and not chain.is_symlink():
        if not marks and not other_sidecars(artifact):
            return ChainCheck(found, adoptable=True)
        why = "it carries moot's chain mark" if marks else "moot's own files are beside it"
        missing = FILE_RULES.violation(
            "CHAIN_MISSING",
            f"moot wrote this record ({why}), but its chain {chain.name} is missing, so edits of its turns "
            "cannot all be shown; restore that file beside the record (copy it along with the record).",
        )
        return ChainCheck([*found, missing.at(file=file)])
    if recorded is None or len(recorded) >= held:
        return ChainCheck(found)
    if not recorded and not marks and not other_sidecars(artifact):
        return ChainCheck(found, adoptable=True)  # moot made the record but accepted none of its turns
    covered = len(recorded)
    repairable = not tampered and _one_append_short(covered, held, marks)
    if repairable:
        message = (
            f"{chain.name} covers {covered} of the {held} turns, as a write cut short by a crash (or one turn "
            f"appended outside moot) leaves it; `moot resume {file}`, or the next turn moot writes, completes it."
        )
    else:
        message = (
            f"{chain.name} covers {covered} of the {held} turns, fewer than any crash leaves, so turns "
            f"{covered + 1}-{held} were added outside moot or their chain rows removed; remove those turns, "
            "or restore the chain from a backup."
        )
    short = FILE_RULES.violation("CHAIN_SHORT", message, turn=covered + 1).at(
        file=file, line=_line(turn_lines, covered + 1)
    )
    return ChainCheck([*found, short], repairable)


def verify_chain(
    artifact: Path,
    turn_texts: Sequence[str],
    turn_lines: Sequence[int | None] = (),
    marks: Sequence[ChainMark] = (),
) -> list[Violation]:
    """The violations of :func:`inspect_chain`."""
    return inspect_chain(artifact, turn_texts, turn_lines, marks).violations


def repair_chain(artifact: Path, turn_texts: Sequence[str], marks: Sequence[ChainMark] = ()) -> bool:
    """What a writer does on opening a record: start the chain of one whose turns another tool wrote
    (:attr:`ChainCheck.adoptable`), or append the rows a crash left out (:attr:`ChainCheck.repairable`). True
    when it wrote.

    Anything else is left as it is, for ``moot check`` and the writer's own check to report.
    """
    check = inspect_chain(artifact, turn_texts, marks=marks)
    if check.adoptable and not check.violations:
        record_chain(artifact, turn_texts)
        return True
    if not check.repairable:
        return False
    recorded, _ = read_chain(artifact)
    assert recorded is not None  # repairable: the sidecar was read
    chain = chain_path(artifact)
    refuse_symlink(chain)
    _append_rows(chain, build_chain(turn_texts[len(recorded) :], len(recorded), _head(recorded)))
    return True


class RecordAppender:
    """A record file open for turns: one append + fsync of the record per turn, then one append to its chain.

    Made by a writer that has just read and fully checked the record (format, rules, chain: nothing in
    :attr:`ChainCheck.blocking`) and holds ``turn_texts``, with the record's :class:`FileStamp` taken *before*
    that read. Opening starts the chain of a record another tool wrote, or completes one a crash left short.
    Between turns it keeps the stamp and the chain's head in memory, so a turn costs the same at turn 60 as at
    turn 6. Before writing it compares both files with what it left; on any difference it raises
    :class:`RecordChangedError` having written nothing, and the writer reads and checks the record again.

    The chain is appended after the record's fsync and is not fsync'd itself: a killed process leaves it
    whole, and the record's own mark, written and fsync'd with the turn, proves the turn until the next
    writer adds the row back.
    """

    def __init__(self, path: Path, stamp: FileStamp, turn_texts: Sequence[str]) -> None:
        self.path = path
        self.stamp = stamp
        self.chain = chain_path(path)
        rows = build_chain(turn_texts)
        recorded, problems = read_chain(path)
        if recorded is None or problems or len(recorded) > len(rows):
            record_chain(path, turn_texts)  # none yet: a record another tool began
        elif len(recorded) < len(rows):  # a crash fell between a record's append and its chain's
            self._append_rows(rows[len(recorded) :])
        self.turns, self.head = len(rows), _head(rows)
        self.chain_size = self.chain.stat().st_size

    def mark_after(self, turn_texts: Sequence[str]) -> ChainMark:
        """The mark that goes into the record with ``turn_texts``, the next turns this appender writes."""
        return ChainMark.after(self.turns, self.head, turn_texts)

    def append(self, data: bytes, turn_texts: Sequence[str]) -> None:
        """Append ``data`` (holding the new turns ``turn_texts``) to the record, then their rows to the chain."""
        self._chain_unchanged()
        self.stamp = append_record(self.path, data, self.stamp)
        self._chain_after(turn_texts)

    def replace(self, data: bytes, turn_texts: Sequence[str]) -> None:
        """Replace the record with ``data`` (every turn's text as it was, then the new turns ``turn_texts``) in one
        atomic rename, then append the new turns' rows to the chain."""
        self._chain_unchanged()
        self.stamp = replace_record(self.path, data, self.stamp)
        self._chain_after(turn_texts)

    def _chain_unchanged(self) -> None:
        refuse_symlink(self.chain)
        try:
            chain_size = self.chain.stat().st_size
        except FileNotFoundError:
            chain_size = -1
        if chain_size != self.chain_size:
            raise RecordChangedError(f"{self.chain} changed since moot last wrote it")

    def _chain_after(self, turn_texts: Sequence[str]) -> None:
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
