"""What the engine remembers about a record's runs, in a sidecar beside it: ``.NAME.run.json``
(``DIR/.moot.run.json`` for a meeting directory).

No seed format has a place for a run that moot stopped without a protocol outcome (an agent that
failed, repairs or a budget exhausted, Ctrl-C), nor for the agent specs a run used. Both live here,
rewritten atomically, so ``moot check``/``moot show`` report the halt and ``moot resume`` reuses the
specs. The record itself stays exactly what its seed format allows. Agent specs only, never keys.

::

    {"agents": {"critic": "openai:gpt-4o-mini"},
     "halted": {"cause": "agent_failed", "role": "critic", "reason": "…", "at": "2026-11-24 21:05", "turns": 3}}
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import tempfile
from pathlib import Path
from typing import Any

from moot.core.files import atomic_write_text
from moot.errors import UserError

RUN_HALTED = "RUN_HALTED"  # not a protocol outcome: moot stopped the run; the record is unchanged

HALT_CAUSES = {
    "agent_failed": "an agent failed",
    "repairs_exhausted": "no valid turn after every repair",
    "budget": "a budget ran out",
    "interrupted": "interrupted (Ctrl-C, or cancelled)",
}

_USERINFO = re.compile(r"(://)[^/@\s]+@")


def run_state_path(record: Path) -> Path:
    if record.is_dir():
        return record / ".moot.run.json"
    return record.with_name(f".{record.name}.run.json")


def safe_spec(spec: str) -> str:
    """An agent spec as it may be stored: credentials in a URL (``https://user:key@host``) removed."""
    return _USERINFO.sub(r"\1", spec)


def read_run_state(record: Path) -> dict[str, Any]:
    """The sidecar's content, or ``{}`` when there is none or it is unreadable (it is advisory)."""
    try:
        data = json.loads(run_state_path(record).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError, RecursionError):
        return {}
    return data if isinstance(data, dict) else {}


def write_run_state(record: Path, state: dict[str, Any], *, durable: bool = True) -> None:
    """Replace the sidecar; ``durable=False`` for what only helps a resume (the agent specs), see atomic_write_text."""
    text = json.dumps(state, ensure_ascii=False, indent=2) + "\n"
    atomic_write_text(run_state_path(record), text, durable=durable)


def stored_agents(record: Path) -> dict[str, str]:
    agents = read_run_state(record).get("agents")
    if not isinstance(agents, dict):
        return {}
    return {str(role): str(spec) for role, spec in agents.items() if isinstance(spec, str)}


def current_halt(record: Path, turns: int) -> dict[str, Any] | None:
    """The recorded halt, if the record has not moved on since (same number of turns)."""
    halted = read_run_state(record).get("halted")
    if not isinstance(halted, dict) or halted.get("turns") != turns:
        return None
    return halted


def resume_text(record: Path | str) -> str:
    """The command that continues a halted run of ``record``."""
    return f"moot resume {shlex.quote(str(record))}"


_RECORD_IN_COMMAND = re.compile(r"(`moot [a-z]+ )RECORD\b")


def with_record(text: str, record: Path | str) -> str:
    """``text`` (an outcome's reason, a refusal) with ``record`` where a command it names says ``RECORD``: a
    protocol's machine, which reads no path, writes the placeholder."""
    return _RECORD_IN_COMMAND.sub(lambda found: found[1] + shlex.quote(str(record)), text)


def halt_text(halted: dict[str, Any]) -> str:
    cause = HALT_CAUSES.get(str(halted.get("cause")), str(halted.get("cause")))
    return f"{RUN_HALTED} at {halted.get('at', '?')} — {cause}: {halted.get('reason', '')}"


def _record_files(record: Path) -> list[Path]:
    """The record and every file moot keeps beside it (``.NAME.*``); a meeting directory holds its own."""
    if record.is_dir() and not record.is_symlink():
        return [record]
    return [record, *record.parent.glob(f".{record.name}.*")]


class SetAside:
    """An existing record moved out of the way of a ``--force`` start, until that start is known to stand.

    ``--force`` must not lose the old debate to a start that then fails (an agent that cannot be built or
    reached): the old files wait in a hidden folder beside them, on the same file system, so putting them back
    is a rename. :meth:`discard` deletes them once the new debate has started; :meth:`restore` puts them back.
    """

    def __init__(self, record: Path) -> None:
        self.record = record
        # Named after the record: a process killed meanwhile leaves it, and whoever finds it knows what it holds.
        self.folder = Path(tempfile.mkdtemp(prefix=f".moot-replaced-{record.name}-", dir=record.parent))
        self.moved: list[tuple[Path, Path]] = []
        self.created: tuple[int, ...] | None = None  # the new record's file identity, once the start made it
        for path in _record_files(record):
            if path.exists() or path.is_symlink():
                kept = self.folder / path.name
                path.rename(kept)
                self.moved.append((path, kept))

    def claim(self, record: Path) -> None:
        """Remember the record the start created in the old one's place: :meth:`restore` removes it, and only it."""
        self.created = _identity(record)

    def restore(self, cause: BaseException | None = None) -> None:
        """Remove the failed start's record, then put the old one back where it was.

        Nothing another start made is removed or overwritten: when another client or process created the record
        meanwhile, the old files stay in the hidden folder and a :class:`UserError` says where (after ``cause``,
        the failed start's own problem, when it is one)."""
        if self.created is not None and _identity(self.record) == self.created:
            remove_record(self.record, stop_at=self.record.parent)
        for path, kept in self.moved:
            try:
                _move_without_replacing(kept, path)
            except FileExistsError:
                failed = f"{cause} " if isinstance(cause, UserError) else ""
                raise UserError(
                    f"{failed}{self.record} was started again meanwhile, so the debate it was to replace was not "
                    f"put back: its files are kept in {self.folder}; move them back once that debate is done."
                ) from cause
        shutil.rmtree(self.folder, ignore_errors=True)

    def discard(self) -> None:
        shutil.rmtree(self.folder, ignore_errors=True)


def _identity(path: Path) -> tuple[int, ...] | None:
    """What tells one file from another at ``path`` (a freed inode number is soon reused)."""
    try:
        found = path.lstat()
    except FileNotFoundError:
        return None
    return found.st_dev, found.st_ino, found.st_mtime_ns, found.st_size


def _move_without_replacing(source: Path, target: Path) -> None:
    """Rename ``source`` to ``target``, raising :class:`FileExistsError` instead of replacing what is there (a
    plain rename replaces a file without a word)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    if source.is_dir() and not source.is_symlink():
        target.mkdir()  # claims the name; the rename then replaces only this empty folder
        source.rename(target)
        return
    os.link(source, target, follow_symlinks=False)
    source.unlink()


def remove_record(record: Path, *, stop_at: Path | None = None) -> None:
    """Delete a record with every file moot keeps beside it (``.NAME.*``: chain, attempt log, run
    state, evidence), then the folders that held only it, up to ``stop_at``.

    For a start whose agents fail their checks: nothing of it is left behind.
    """
    for path in _record_files(record):
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        else:
            path.unlink(missing_ok=True)
    folder = record.parent
    stop = (stop_at or folder.parent).resolve()
    while folder.resolve() != stop and folder.resolve().is_relative_to(stop):
        try:
            folder.rmdir()  # only when empty
        except OSError:
            break
        folder = folder.parent
