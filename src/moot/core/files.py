"""What every artifact format shares: bounded reading, located decoding errors, crash-safe writes,
and the report that ``moot check`` prints.

Parsing is total: a parser never raises on bad input; it returns located :class:`Violation` s.
Writing is crash-safe. A new or rewritten file goes through temp file + fsync + rename (+ fsync of
the directory), so a killed process leaves either the old bytes or the new bytes. A turn added to a
record is one append and one fsync (:func:`append_record`), guarded by the :class:`FileStamp` its
writer took when it last read or wrote the record, so an outside edit in between is noticed without
reading the record again.

A write that fails leaves the file as it was: an append that fails part-way (a full disk cuts it short)
is truncated back to the file's previous length and modification time, and fsync'd; a rewrite's temp
file is removed. A full disk or a read-only file system is then raised as :class:`moot.errors.DiskFault`,
one sentence that names the fix; any other failure is raised as it came.
"""

from __future__ import annotations

import errno
import fcntl
import hashlib
import os
import re
import secrets
import unicodedata
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from enum import IntEnum
from pathlib import Path

from pydantic import BaseModel

from moot.core.machine import Replay, Rule, RuleBook, Summary
from moot.errors import DiskFault, ProtocolViolationError, RecordChangedError, Violation

# Larger records are refused before reading: a debate is text written by people and models.
MAX_ARTIFACT_BYTES = 16 * 1024 * 1024

FILE_RULES = RuleBook(
    [
        Rule("FILE_UNREADABLE", "The path must exist and be readable."),
        Rule("FILE_TOO_LARGE", f"A record must be at most {MAX_ARTIFACT_BYTES} bytes."),
        Rule("FILE_NOT_UTF8", "A record must be UTF-8 text."),
        Rule("FILE_SYMLINK", "moot never reads or writes a record through a symbolic link."),
        Rule("NOT_A_MOOT_ARTIFACT", "The path must be a record of one of moot's protocols."),
        Rule("PRIOR_TURN_MODIFIED", "A turn must never change after it was accepted."),
        Rule("PRIOR_TURN_REMOVED", "A turn must never be removed after it was accepted."),
        Rule("CHAIN_UNREADABLE", "The digest chain beside a record must be moot's JSON lines."),
        Rule("CHAIN_MISSING", "A record moot wrote keeps its digest chain beside it."),
        Rule("CHAIN_SHORT", "The digest chain of a record moot wrote covers every turn it holds."),
    ]
)


class ExitCode(IntEnum):
    VALID = 0
    VIOLATIONS = 1
    UNREADABLE = 2


class CheckReport(BaseModel):
    """Everything ``moot check`` says about one record."""

    path: str
    protocol: str | None
    violations: list[Violation]
    summary: Summary | None = None
    # True when the only problem is a crash between two writes that moot can finish (roundtable).
    repairable: bool = False

    @property
    def errors(self) -> list[Violation]:
        return [v for v in self.violations if v.is_error]

    @property
    def warnings(self) -> list[Violation]:
        return [v for v in self.violations if not v.is_error]

    @property
    def exit_code(self) -> ExitCode:
        if self.summary is None and self.errors:
            return ExitCode.UNREADABLE
        return ExitCode.VIOLATIONS if self.errors else ExitCode.VALID

    @property
    def verdict(self) -> str:
        return {ExitCode.VALID: "valid", ExitCode.VIOLATIONS: "invalid", ExitCode.UNREADABLE: "unreadable"}[
            self.exit_code
        ]


def unreadable(path: Path, violations: Sequence[Violation], protocol: str | None = None) -> CheckReport:
    """A report for a record that could not be parsed far enough to replay."""
    return CheckReport(path=str(path), protocol=protocol, violations=list(violations), summary=None)


def replay_report(
    path: Path,
    protocol: str,
    replay: Replay[object],
    summary: Summary,
    extra: Sequence[Violation] = (),
    repairable: bool = False,
) -> CheckReport:
    return CheckReport(
        path=str(path),
        protocol=protocol,
        violations=[*extra, *replay.violations],
        summary=summary,
        repairable=repairable,
    )


def read_text(path: Path) -> tuple[str | None, list[Violation]]:
    """Read a record as text, or say (located) why it cannot be read. Never raises."""
    file = str(path)
    try:
        if path.is_symlink():
            return None, [
                FILE_RULES.violation("FILE_SYMLINK", f"{file} is a symbolic link; point moot at the real file.").at(
                    file=file
                )
            ]
        size = path.stat().st_size
        if size > MAX_ARTIFACT_BYTES:
            return None, [too_large(file, size)]
        data = path.read_bytes()
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        return None, [FILE_RULES.violation("FILE_UNREADABLE", f"cannot read {file}: {reason}.").at(file=file)]
    return decode_text(data, file)


def too_large(file: str, size: int, *, writing: bool = False) -> Violation:
    """``FILE_TOO_LARGE`` for ``size`` bytes; ``writing`` when a write was refused for it (nothing written)."""
    if writing:
        message = (
            f"writing it would make {file} {size} bytes, over the {MAX_ARTIFACT_BYTES}-byte limit of a record, so "
            "nothing was written; shorten the text, or close the debate."
        )
    else:
        message = (
            f"{file} is {size} bytes, over the {MAX_ARTIFACT_BYTES}-byte limit of a record; pass a smaller file "
            "(a record is text written by people and models)."
        )
    return FILE_RULES.violation("FILE_TOO_LARGE", message).at(file=file)


def decode_text(data: bytes, file: str) -> tuple[str | None, list[Violation]]:
    """Decode UTF-8, naming the line of the first bad byte. Never raises."""
    if len(data) > MAX_ARTIFACT_BYTES:
        return None, [too_large(file, len(data))]
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        return None, [
            FILE_RULES.violation("FILE_NOT_UTF8", f"byte {exc.start} is not UTF-8; save the file as UTF-8 text.").at(
                file=file, line=line
            )
        ]
    if "\x00" in text:
        line = text.count("\n", 0, text.index("\x00")) + 1
        return None, [
            FILE_RULES.violation("FILE_NOT_UTF8", "the file contains NUL bytes; it is binary, not a text record.").at(
                file=file, line=line
            )
        ]
    # A byte-order mark is allowed (some editors add one) and not part of the text.
    return text.removeprefix("\ufeff"), []


# Well under the usual 255-byte name limit, with room for a suffix, '.md' and the chain's name.
MAX_SLUG_BYTES = 120
# A run of letters and digits: the re module's \w is exactly str.isalnum() plus '_', so this is the
# per-character rule of a slug in C.
_SLUG_WORD = re.compile(r"[^\W_]+")


def slugify(topic: str, fallback: str, *, ascii_only: bool = False, max_bytes: int = MAX_SLUG_BYTES) -> str:
    """A safe file name stem for ``topic``: lower-case letters and digits joined by single '-'.

    Letters of any script are kept unless ``ascii_only`` (rp1's duel slugs are ASCII). Never empty
    (``fallback``), never a path separator, never '.' or '..'. Linear in the topic's length, and only the
    words that fit in ``max_bytes`` are joined: a long topic costs one normalisation, not one pass per byte cut.
    """
    if ascii_only:
        text = unicodedata.normalize("NFKD", topic).encode("ascii", "ignore").decode("ascii").lower()
    else:
        text = unicodedata.normalize("NFKC", topic).casefold()
    words: list[str] = []
    size = -1  # the joined length in bytes: one '-' less than the words
    for word in _SLUG_WORD.finditer(text):
        words.append(word.group())
        size += len(words[-1].encode("utf-8")) + 1
        if size >= max_bytes:
            break
    cut = "-".join(words).encode("utf-8")[:max_bytes].decode("utf-8", "ignore")  # drops a character cut in two
    return cut.rstrip("-") or fallback


def fsync_directory(directory: Path) -> None:
    """Make a rename or a new file in ``directory`` survive a power cut."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return  # not every platform can open a directory; the rename is still atomic
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def refuse_symlink(path: Path) -> None:
    if path.is_symlink():
        raise FileExistsError(f"{path} is a symbolic link; moot writes records only to real files.")


def create_pair(path: Path, text: str, sidecar: Path) -> None:
    """Write ``text`` to ``path`` and an empty ``sidecar`` beside it: two renames made durable by one fsync of the
    directory. A failure leaves neither (the temp files are removed)."""
    data = _checked_bytes(path, text)
    with disk_faults(path, kept=True):
        _create_pair(path, data, sidecar)


def _create_pair(path: Path, data: bytes, chain: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    empty = _temp_copy(chain, b"", sync=False)
    try:
        written = _temp_copy(path, data, sync=True)
    except BaseException:
        Path(empty).unlink(missing_ok=True)
        raise
    try:
        os.replace(empty, chain)
        os.replace(written, path)
    except BaseException:
        for tmp in (empty, written):
            Path(tmp).unlink(missing_ok=True)
        raise
    fsync_directory(path.parent)


@contextmanager
def disk_faults(path: Path, *, kept: bool) -> Iterator[None]:
    """Raise a full disk or a read-only file system met while writing ``path`` as :class:`DiskFault`.

    ``kept``: the write left ``path`` as it was (the caller removed or cut back what it wrote).
    """
    try:
        yield
    except OSError as exc:
        fault = DiskFault.of(exc, path, kept=kept)
        if fault is None:
            raise
        raise fault from exc


def _checked_bytes(path: Path, text: str) -> bytes:
    """``text`` as UTF-8, refused (``ProtocolViolationError``, nothing written) over the size a reader accepts."""
    refuse_symlink(path)
    data = text.encode("utf-8")
    if len(data) > MAX_ARTIFACT_BYTES:
        raise ProtocolViolationError([too_large(str(path), len(data), writing=True)])
    return data


def _temp_copy(path: Path, data: bytes, *, sync: bool) -> str:
    """A temp file beside ``path`` holding ``data`` (fsync'd when ``sync``), with ``path``'s mode if it exists."""
    # Not mkstemp, which creates 0600: a new record gets the mode any new file would (0666 less the
    # umask, applied by the kernel); an existing record keeps its own mode.
    tmp = str(path.parent / f".{path.name}.{secrets.token_hex(8)}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        if path.exists():
            os.chmod(tmp, path.stat().st_mode & 0o7777)
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            if sync:
                os.fsync(handle.fileno())
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return tmp


def atomic_write_text(path: Path, text: str, *, durable: bool = True) -> None:
    """Replace ``path`` with ``text``: temp file in the same directory, fsync, rename, fsync dir.

    Text over the size limit a reader accepts is refused (``ProtocolViolationError``) before anything is
    written, so that no write leaves a record moot could not read back. ``durable=False`` skips both
    fsyncs, for an advisory file: a killed process still leaves the old text or the new (the rename is
    atomic); only a power cut may lose the new one.
    """
    data = _checked_bytes(path, text)
    with disk_faults(path, kept=True):  # a failed write removed its temp file; the old file is untouched
        _replace(path, data, durable=durable)


def _replace(path: Path, data: bytes, *, durable: bool, expected: FileStamp | None = None) -> FileStamp | None:
    """Write a temp file beside ``path`` and rename it over ``path``; with ``expected``, only if ``path`` is still
    as that stamp says (:class:`RecordChangedError`), returning the new stamp."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = _temp_copy(path, data, sync=durable)
    written = None
    try:
        if expected is not None:
            written = FileStamp.of(Path(tmp))  # the rename keeps the inode and the times: the record's new stamp
            if FileStamp.of(path) != expected:
                raise RecordChangedError(f"{path} changed since moot last wrote it")
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    if durable:
        fsync_directory(path.parent)
    return written


def rewrite_log(path: Path, lines: Sequence[str]) -> None:
    """Replace a log's lines at once (temp file + rename, no fsync: a log is advisory).

    For the rare correction of a log that appends cannot make; unlike :func:`atomic_write_text`, not
    limited to a record's size, as a log is not a record.
    """
    refuse_symlink(path)
    data = "".join(line.rstrip("\n") + "\n" for line in lines).encode("utf-8")
    with disk_faults(path, kept=True):
        _replace(path, data, durable=False)


def append_raw(path: Path, data: bytes) -> None:
    """Append ``data`` to an existing file and fsync it, leaving every byte before it as it was.

    For what must be recorded in a file moot cannot parse (an INVALIDATED conclusion); a turn of a record
    moot parsed goes through :func:`append_record`, which also checks that nobody else wrote the record.
    """
    refuse_symlink(path)
    with disk_faults(path, kept=True):  # nothing written yet
        fd = os.open(path, os.O_WRONLY | os.O_APPEND)
    try:
        before = os.fstat(fd)
        _append_or_restore(fd, path, data, before.st_size, before.st_mtime_ns, durable=True)
    finally:
        os.close(fd)


def _append_or_restore(fd: int, path: Path, data: bytes, size: int, mtime_ns: int, *, durable: bool) -> None:
    """Append ``data`` at the end of ``fd`` (of ``size`` bytes, last modified at ``mtime_ns``), fsync'd when
    ``durable``; when that fails, or is interrupted, cut the file back to what it was before raising."""
    try:
        view = memoryview(data)
        while view:  # a regular file takes it in one write; a short write just continues (and a full disk fails)
            view = view[os.write(fd, view) :]
        if durable:
            os.fsync(fd)
    except BaseException as exc:
        kept = _restore(fd, size, mtime_ns)
        fault = DiskFault.of(exc, path, kept=kept)
        if fault is None:
            raise
        raise fault from exc


def _restore(fd: int, size: int, mtime_ns: int) -> bool:
    """Cut ``fd`` back to ``size`` bytes and ``mtime_ns``, durably; whether the file is now as it was.

    Cutting a file back needs no free space, so it works on the full disk that failed the append. With the
    old modification time too, the file's :class:`FileStamp` is again the one its writer holds.
    """
    try:
        info = os.fstat(fd)
        if info.st_size != size:
            os.ftruncate(fd, size)
            os.utime(fd, ns=(info.st_atime_ns, mtime_ns))
            os.fsync(fd)
    except OSError:
        return False
    return True


def append_log_line(path: Path, line: str, *, durable: bool = True) -> None:
    """Append one line to a log (usage, failures) with a real append and one fsync, not a rewrite.

    Cheaper than rewriting a growing log through :func:`atomic_write_text` (a rewrite cost a quarter of a durable turn).
    A crash mid-append can leave a partial last line; the next append starts on a new line, so at most that
    one line is unreadable: readers of a log skip lines that are not JSON. ``durable=False`` skips the fsync,
    for a log that is advisory: a killed process still leaves the line (it is in the kernel's cache); only a
    power cut may lose it.
    """
    with disk_faults(path, kept=True):  # nothing written yet
        fd, created = _open_log(path)
    try:
        data = line.rstrip("\n").encode("utf-8") + b"\n"
        info = os.fstat(fd)
        if info.st_size and os.pread(fd, 1, info.st_size - 1) != b"\n":
            data = b"\n" + data  # the last append was torn by a crash: keep this line whole
        _append_or_restore(fd, path, data, info.st_size, info.st_mtime_ns, durable=durable)
    except BaseException:
        if created:  # as it was: no log at all
            path.unlink(missing_ok=True)
        raise
    finally:
        os.close(fd)
    if created and durable:
        fsync_directory(path.parent)


def _open_log(path: Path) -> tuple[int, bool]:
    """``path`` open for appending, created if need be; and whether it was created."""
    try:  # the usual case, an existing log: one open, no look-ups first
        return os.open(path, os.O_RDWR | os.O_APPEND | os.O_NOFOLLOW), False
    except FileNotFoundError:
        refuse_symlink(path)  # a dangling link
        path.parent.mkdir(parents=True, exist_ok=True)
        return os.open(path, os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW, 0o666), True
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            refuse_symlink(path)
        raise


# How much of a record's end the stamp hashes: an edit there (where people and agents add text) is caught
# even when it keeps the size and lands within the file system's time resolution.
STAMP_TAIL_BYTES = 4096


@dataclass(frozen=True)
class FileStamp:
    """What a writer remembers of a record it read or wrote: size, modification time, inode, tail hash.

    Comparing stamps costs an ``fstat`` and one read of the last few KiB, whatever the record's length.
    A different stamp means someone else wrote the record, so the writer reads and checks it again in full.
    """

    size: int
    mtime_ns: int
    inode: int
    tail: str

    @classmethod
    def of_fd(cls, fd: int) -> FileStamp:
        info = os.fstat(fd)
        start = max(0, info.st_size - STAMP_TAIL_BYTES)
        tail = hashlib.sha256(os.pread(fd, info.st_size - start, start)).hexdigest()
        return cls(info.st_size, info.st_mtime_ns, info.st_ino, tail)

    @classmethod
    def of(cls, path: Path) -> FileStamp:
        refuse_symlink(path)
        fd = os.open(path, os.O_RDONLY)
        try:
            return cls.of_fd(fd)
        finally:
            os.close(fd)


def append_record(path: Path, data: bytes, expected: FileStamp) -> FileStamp:
    """Append ``data`` to a record with one write and one fsync, if it is still as ``expected``.

    Raises :class:`RecordChangedError` (writing nothing) when the record's stamp differs, and
    ``ProtocolViolationError`` (``FILE_TOO_LARGE``, writing nothing) when the record would pass the size
    limit. Returns the record's new stamp. A write that fails (:class:`DiskFault` for a full disk or a
    read-only file system) leaves the record exactly as ``expected`` says, so the writer can append again
    once the disk is fixed. A crash can cut only the appended bytes, never the earlier ones; the digest
    chain (moot.core.chain) records where each accepted turn ends.
    """
    refuse_symlink(path)
    with disk_faults(path, kept=True):  # nothing written yet
        fd = os.open(path, os.O_RDWR | os.O_APPEND)
    try:
        if FileStamp.of_fd(fd) != expected:
            raise RecordChangedError(f"{path} changed since moot last wrote it")
        if expected.size + len(data) > MAX_ARTIFACT_BYTES:
            raise ProtocolViolationError([too_large(str(path), expected.size + len(data), writing=True)])
        _append_or_restore(fd, path, data, expected.size, expected.mtime_ns, durable=True)
        return FileStamp.of_fd(fd)
    finally:
        os.close(fd)


def replace_record(path: Path, data: bytes, expected: FileStamp) -> FileStamp:
    """Replace a record with ``data`` atomically (temp file, fsync, rename), if it is still as ``expected``.

    For a record whose turns change what comes before them. Raises :class:`RecordChangedError` (writing nothing)
    when the record's stamp differs, and ``ProtocolViolationError`` (``FILE_TOO_LARGE``) over the size limit; a
    failed write leaves the record as it was. Returns the record's new stamp. The stamp is compared just before
    the rename, not under a lock: a write by another process in that instant would be lost (moot's agent tools
    write a shared record only under the ledger's lease).
    """
    refuse_symlink(path)
    if len(data) > MAX_ARTIFACT_BYTES:
        raise ProtocolViolationError([too_large(str(path), len(data), writing=True)])
    with disk_faults(path, kept=True):  # a failed write removed its temp file; the old record is untouched
        written = _replace(path, data, durable=True, expected=expected)
    assert written is not None
    return written


@contextmanager
def folder_lock(folder: Path) -> Iterator[None]:
    """An exclusive lock of the record's folder, between the processes of one host."""
    fd = os.open(folder, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing releases the lock


def first_line(text: str) -> str:
    """The first non-blank line of ``text``, stripped, without splitting all of it (a record may be 16 MiB)."""
    found = _NON_BLANK.search(text)
    if found is None:
        return ""
    end = text.find("\n", found.start())
    return text[found.start() : end if end >= 0 else len(text)].strip()


_NON_BLANK = re.compile(r"\S")
