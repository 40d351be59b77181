"""Where an eval keeps what it has asked: one JSON line per agent call and per finished task.

Every line is appended and fsynced before the eval goes on, so a killed eval loses at most the calls
in flight; running the same command again asks only for what is missing. A line torn by the kill is
cut off when the store is opened. ``run.json`` holds what makes two runs comparable (tasks, agents,
sampling); a second run with other settings into the same directory is refused.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from moot.errors import UserError

RESULTS = "results.jsonl"
IDENTITY = "run.json"


class Store:
    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.calls: dict[tuple[str, str, str], dict[str, Any]] = {}
        self.tasks: dict[tuple[str, str], dict[str, Any]] = {}

    @property
    def results_path(self) -> Path:
        return self.directory / RESULTS

    def open(self, identity: dict[str, Any]) -> None:
        """Check (or write) the run's identity and load what earlier runs recorded."""
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise UserError(f"cannot create {self.directory} ({exc.strerror}); choose another --out.") from None
        identity_path = self.directory / IDENTITY
        if identity_path.exists():
            try:
                recorded = json.loads(identity_path.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                raise UserError(f"{identity_path} is not readable JSON; remove it or choose another --out.") from None
            if recorded != identity:
                changed = sorted(k for k in identity.keys() | recorded.keys() if identity.get(k) != recorded.get(k))
                raise UserError(
                    f"{self.directory} holds an eval with other settings ({', '.join(changed)}); "
                    "run it with the same options, or choose another --out."
                )
        else:
            temporary = identity_path.with_suffix(".tmp")
            temporary.write_text(json.dumps(identity, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
            os.replace(temporary, identity_path)
        self._load()

    def _load(self) -> None:
        path = self.results_path
        if not path.exists():
            return
        data = path.read_bytes()
        if data and not data.endswith(b"\n"):  # the last append was cut short: drop its torn line
            data = data[: data.rfind(b"\n") + 1]
            with path.open("r+b") as file:
                file.truncate(len(data))
                os.fsync(file.fileno())
        for line in data.decode("utf-8").splitlines():
            record = json.loads(line)
            if record["kind"] == "call":
                self.calls[(record["strategy"], record["task"], record["call"])] = record
            else:
                self.tasks[(record["strategy"], record["task"])] = record

    def append(self, record: dict[str, Any]) -> None:
        """One line, written and fsynced; the in-memory index follows."""
        line = json.dumps(record, ensure_ascii=False) + "\n"
        with self.results_path.open("a", encoding="utf-8") as file:
            file.write(line)
            file.flush()
            os.fsync(file.fileno())
        if record["kind"] == "call":
            self.calls[(record["strategy"], record["task"], record["call"])] = record
        else:
            self.tasks[(record["strategy"], record["task"])] = record
