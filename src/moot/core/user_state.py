"""Where moot keeps what it learns for this user across runs: ``$XDG_STATE_HOME/moot/``, else
``~/.local/state/moot/`` (the per-user debate index, the model servers' known refusals), and the private
part of it that only this OS user can read (the secrets of the seats it joined)."""

from __future__ import annotations

import contextlib
import os
import stat
from pathlib import Path

PRIVATE_DIR_MODE = 0o700
PRIVATE_FILE_MODE = 0o600
_MAX_PRIVATE_BYTES = 4096


def state_dir() -> Path:
    state = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(state) / "moot"


def _private_dir(name: str) -> Path:
    """``state_dir()/name``, created with mode 0700 (tightened if it exists with more)."""
    folder = state_dir() / name
    folder.mkdir(mode=PRIVATE_DIR_MODE, parents=True, exist_ok=True)
    info = os.lstat(folder)
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.geteuid():
        raise PermissionError(f"{folder} is not a directory of this user")
    if stat.S_IMODE(info.st_mode) != PRIVATE_DIR_MODE:
        os.chmod(folder, PRIVATE_DIR_MODE)
    return folder


def write_private(folder: str, name: str, text: str) -> bool:
    """Keep ``text`` in ``state_dir()/folder/name``, mode 0600 in a 0700 directory, replaced atomically;
    ``False`` when it cannot be written (a read-only or foreign home)."""
    try:
        directory = _private_dir(folder)
    except OSError:
        return False
    temporary = directory / f".{name}.{os.getpid()}.tmp"
    try:
        handle = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, PRIVATE_FILE_MODE)
        try:
            os.write(handle, text.encode("utf-8"))
            os.fsync(handle)
        finally:
            os.close(handle)
        os.replace(temporary, directory / name)
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        return False
    return True


def read_private(folder: str, name: str) -> str | None:
    """What :func:`write_private` kept, if this user's file is there and private (a link, another owner's file
    or one that others may read is ignored)."""
    try:
        handle = os.open(state_dir() / folder / name, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return None
    try:
        info = os.fstat(handle)
        if not stat.S_ISREG(info.st_mode) or info.st_uid != os.geteuid() or info.st_mode & 0o077:
            return None
        data = os.read(handle, _MAX_PRIVATE_BYTES)
    except OSError:
        return None
    finally:
        os.close(handle)
    text = data.decode("utf-8", errors="replace").strip()
    return text or None
