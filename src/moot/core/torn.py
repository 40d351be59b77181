"""A turn that a kill cut short inside its own append, and how ``moot resume`` sets it aside.

A record's append is one ``write`` (:func:`moot.core.files.append_record`), but the kernel stops a write that
spans several pages when the process gets SIGKILL, so a kill can leave the start of a turn on disk. Its chain
rows are never written (they follow the record's fsync), and the mark that ends every append moot makes is
missing. Such a tail is recognised by three things together:

- the record's last mark line is not its end: bytes follow it;
- the chain sidecar covers exactly the turns of that mark, and ends in the same head;
- every error the protocol's check finds lies after that mark line, so the turns before it are intact.

A turn a person or an agent appended by hand also follows the last mark, but it is a whole turn, so the check
finds no error in it and it is adopted as before. ``moot check`` reports a torn tail as repairable and writes
nothing; ``moot resume`` moves the cut bytes to ``.NAME.torn`` beside the record (nothing is lost) and cuts the
record back to its last mark, so the same speaker is asked again. A record with no mark yet (the first turn of a
critique, Agora or council record was cut) is left to ``moot check``'s report.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from moot.core.chain import ChainMark, read_chain
from moot.core.files import MAX_ARTIFACT_BYTES, CheckReport, FileStamp, append_raw, refuse_symlink
from moot.errors import Violation

_MARK_LINE = re.compile(
    rb"^[ \t]*<!--[ \t]*moot-chain[ \t]+turns=\d{1,9}[ \t]+head=[0-9a-f]{64}[ \t]*-->[ \t]*\n", re.M
)


@dataclass(frozen=True)
class TornAppend:
    """The start of a turn that a kill cut short: where its append began and what it wrote."""

    offset: int  # the record's size before the append: the end of its last mark line
    turn: int  # the number of the turn it was writing
    data: bytes  # the bytes it left


def torn_path(record: Path) -> Path:
    """Where ``moot resume`` keeps the bytes it cut off ``record``."""
    return record.with_name(f".{record.name}.torn")


def find_torn_append(record: Path, data: bytes, violations: Sequence[Violation]) -> TornAppend | None:
    """The torn append at the end of ``data`` (the bytes of the file ``record``), given the protocol check's
    ``violations`` for it; ``None`` when the record's end is anything else."""
    errors = [v for v in violations if v.is_error]
    last = next(iter(reversed(list(_MARK_LINE.finditer(data)))), None)
    if not errors or last is None or not data[last.end() :].strip():
        return None
    mark = ChainMark.parse(last.group().decode("ascii").rstrip("\n"))
    rows, problems = read_chain(record)
    if mark is None or rows is None or problems or len(rows) != mark.turns:
        return None
    if mark.turns and rows[-1]["chain"] != mark.head:
        return None
    mark_line = data.count(b"\n", 0, last.start()) + 1
    if not all(v.line is not None and v.line > mark_line and v.file in (None, str(record)) for v in errors):
        return None
    return TornAppend(offset=last.end(), turn=mark.turns + 1, data=data[last.end() :])


def torn_append(record: Path, report: CheckReport) -> TornAppend | None:
    """The torn append ``report`` (the protocol's check of the file ``record``) shows, if any. Never raises.

    A record the chain's own repair completes (a whole turn whose chain row is missing) has none."""
    if report.repairable or record.is_dir() or record.is_symlink() or not report.errors:
        return None
    try:
        with record.open("rb") as file:
            data = file.read(MAX_ARTIFACT_BYTES + 1)
    except OSError:
        return None
    return find_torn_append(record, data, report.violations) if len(data) <= MAX_ARTIFACT_BYTES else None


def set_aside_torn_append(record: Path, check: Callable[[Path], CheckReport]) -> str | None:
    """What ``moot resume`` does first: move a torn append (see the module) to ``.NAME.torn`` and cut the record
    back to its last mark. Returns the sentence that says so, or ``None`` when the record ends otherwise.

    Nothing is cut when the record changes meanwhile (another writer is at work on it).
    """
    if record.is_dir() or record.is_symlink() or not record.is_file():
        return None
    before = FileStamp.of(record)
    torn = torn_append(record, check(record))
    if torn is None:
        return None
    fd = os.open(record, os.O_RDWR | os.O_NOFOLLOW)
    try:
        if FileStamp.of_fd(fd) != before or os.fstat(fd).st_size != torn.offset + len(torn.data):
            return None
        kept = torn_path(record)
        refuse_symlink(kept)
        kept.touch(exist_ok=True)
        append_raw(kept, torn.data)  # first, so that a crash here loses nothing: the next resume cuts again
        os.ftruncate(fd, torn.offset)
        os.fsync(fd)
    finally:
        os.close(fd)
    return (
        f"set aside the unfinished turn {torn.turn} of {record} ({len(torn.data)} bytes after the last whole turn, "
        f"as a crash inside its write leaves it; kept in {kept.name}); its speaker is asked again."
    )
