"""Where an eval keeps what it has asked: one JSON line per agent call, per finished task, per fitted K.

Every line is appended and fsynced before the eval goes on, so a killed eval loses at most the calls in
flight; running the same command again asks only for what is missing. A line torn by the kill is cut off
when the store is opened. A later line for the same call or task replaces an earlier one: a failed call
asked again on resume, a task finished again once its failed calls were answered.

``run.json`` holds what makes two runs one experiment (the task file's content, agents, sampling); a second
run with other settings into the same directory is refused. Each run adds a ``session`` line with moot's
version, so the report can say which versions produced the results.

With ``moot eval --workers N`` one process writes the file: each worker process loads what is recorded, and its
store hands every new line to the writing process (``sink``) instead of appending it itself.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from moot.errors import UserError

RESULTS = "results.jsonl"
IDENTITY = "run.json"

CallKey = tuple[str, str, int, str]  # strategy, task, replicate, call
TaskKey = tuple[str, str, int]  # strategy, task, replicate


def call_key(record: dict[str, Any]) -> CallKey:
    return (record["strategy"], record["task"], int(record.get("replicate", 1)), record["call"])


def task_key(record: dict[str, Any]) -> TaskKey:
    return (record["strategy"], record["task"], int(record.get("replicate", 1)))


class Store:
    def __init__(self, directory: Path, sink: Callable[[dict[str, Any]], None] | None = None) -> None:
        self.directory = directory
        self.sink = sink  # None: this store appends to the file itself
        self.calls: dict[CallKey, dict[str, Any]] = {}
        self._task_calls: dict[TaskKey, dict[str, dict[str, Any]]] = {}
        self.tasks: dict[TaskKey, dict[str, Any]] = {}
        self.fits: dict[str, dict[str, Any]] = {}  # sc:match strategy -> its fitted K
        self.runs: dict[TaskKey, dict[str, Any]] = {}  # a protocol strategy's latest run of a task
        self.sessions: list[dict[str, Any]] = []

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
        self.load()

    def load(self) -> None:
        """Index what the file holds, first cutting off a line torn by a kill."""
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
            self._index(json.loads(line))

    def _index(self, record: dict[str, Any]) -> None:
        kind = record["kind"]
        if kind == "call":
            key = call_key(record)
            self.calls[key] = record
            self._task_calls.setdefault(key[:3], {})[key[3]] = record
        elif kind == "task":
            self.tasks[task_key(record)] = record
        elif kind == "fit":
            self.fits.setdefault(record["strategy"], record)  # the first fit holds
        elif kind == "run":
            self.runs[task_key(record)] = record
        elif kind == "session":
            self.sessions.append(record)

    def append(self, record: dict[str, Any]) -> None:
        """One line, written and fsynced (or handed to the sink); the in-memory index follows."""
        if self.sink is not None:
            self.sink(record)
            self._index(record)
            return
        line = json.dumps(record, ensure_ascii=False) + "\n"
        with self.results_path.open("a", encoding="utf-8") as file:
            file.write(line)
            file.flush()
            os.fsync(file.fileno())
        self._index(record)

    def calls_of(self, strategy: str, task: str, replicate: int, prefix: str = "") -> list[dict[str, Any]]:
        """The recorded calls of one task under one strategy, in the order they were first recorded."""
        calls = self._task_calls.get((strategy, task, replicate), {})
        return [record for key, record in calls.items() if key.startswith(prefix)]
