"""Each crash-safe write of moot.core.files on a real small tmpfs that is full or read-only: the file is
left exactly as it was (bytes and modification time, so its writer's stamp still holds), nothing new is left
beside it, and the error is a DiskFault whose one sentence names the disk and the fix."""

from __future__ import annotations

from pathlib import Path

import pytest
from fault_helpers import fill, remount

from moot.core.chain import create_record
from moot.core.files import (
    FileStamp,
    append_log_line,
    append_raw,
    append_record,
    atomic_write_text,
)
from moot.errors import DiskFault

BIG = "x" * 20_000  # more than any page a file has left: every write needs new room


WRITES = ["append_record", "append_raw", "append_log_line", "a new log", "atomic_write_text", "create_record"]


def write(name: str, disk: Path) -> None:
    record, data = disk / "record.md", BIG.encode()
    if name == "append_record":
        append_record(record, data, FileStamp.of(record))
    elif name == "append_raw":
        append_raw(record, data)
    elif name == "append_log_line":
        append_log_line(disk / "usage.jsonl", BIG)
    elif name == "a new log":
        append_log_line(disk / "new.jsonl", BIG)
    elif name == "atomic_write_text":
        atomic_write_text(record, BIG)
    else:
        create_record(disk / "new.md", BIG, "choose another name.")


def prepared(disk: Path) -> dict[str, tuple[bytes, int]]:
    (disk / "record.md").write_text("# Title: a record\n" + "line\n" * 700)  # ends inside a page
    (disk / "usage.jsonl").write_text('{"turn": 1}\n')
    return {p.name: (p.read_bytes(), p.stat().st_mtime_ns) for p in disk.iterdir()}


@pytest.mark.parametrize("name", WRITES)
def test_a_write_on_a_full_disk_leaves_every_file_as_it_was(small_disk: Path, name: str) -> None:
    before = prepared(small_disk)
    filler = fill(small_disk)
    with pytest.raises(DiskFault) as raised:
        write(name, small_disk)
    after = {p.name: (p.read_bytes(), p.stat().st_mtime_ns) for p in small_disk.iterdir() if p != filler}
    assert after == before
    said = str(raised.value)
    assert said.startswith("disk full: ") and "left it as it was; free space on that disk" in said
    assert said.endswith(".") and "\n" not in said
    filler.unlink()
    write(name, small_disk)  # once there is room, the same write succeeds


@pytest.mark.parametrize("name", WRITES)
def test_a_write_on_a_read_only_file_system_says_so(small_disk: Path, name: str) -> None:
    before = prepared(small_disk)
    remount(small_disk, "ro")
    try:
        with pytest.raises(DiskFault) as raised:
            write(name, small_disk)
        after = {p.name: (p.read_bytes(), p.stat().st_mtime_ns) for p in small_disk.iterdir()}
    finally:
        remount(small_disk, "rw")
    assert after == before
    assert str(raised.value).startswith("read-only file system: ") and "make that file system writable" in str(
        raised.value
    )
