"""``python fault_runner.py ARGS…`` is ``moot ARGS…`` with one real fault at an exact point of the run.

``MOOT_TEST_FAULT=WHAT:WHERE:WHICH``:

- WHAT: ``kill`` (SIGKILL of this process) or ``fill`` (fill the disk ``MOOT_TEST_DISK`` to the last byte,
  after copying the record to ``MOOT_TEST_SNAPSHOT``);
- WHERE and WHICH: ``before:N`` or ``after:N`` the engine commits the record's turn N; ``sealed:ROLE`` before
  ROLE's answer of a sealed phase is committed to the phase's sidecar.
"""

from __future__ import annotations

import os
import shutil
import signal
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # fault_helpers imports forked_moot
from fault_helpers import FAULT_ENV, SNAPSHOT_ENV, fill

from moot.engine import loop, sealed

WHAT, WHERE, WHICH = os.environ[FAULT_ENV].split(":")


def fault(record: Path) -> None:
    if WHAT == "kill":
        os.kill(os.getpid(), signal.SIGKILL)
    if os.environ.get(SNAPSHOT_ENV):
        shutil.copyfile(record, os.environ[SNAPSHOT_ENV])
    fill(Path(os.environ["MOOT_TEST_DISK"]))


real_commit = loop.Engine._commit
real_answer = sealed.commit_answer


async def commit(self: loop.Engine, turn: Any) -> None:
    number = str(self.driver.summary().turns + 1)
    if ("before", number) == (WHERE, WHICH):
        fault(self.driver.record_path)
    await real_commit(self, turn)
    if ("after", number) == (WHERE, WHICH):
        fault(self.driver.record_path)


def commit_answer(record: Path, commitment: sealed.Commitment) -> None:
    if ("sealed", commitment.role) == (WHERE, WHICH) and commitment.failure is None:
        fault(record)
    real_answer(record, commitment)


loop.Engine._commit = commit  # type: ignore[method-assign]
sealed.commit_answer = commit_answer

if __name__ == "__main__":
    from moot.cli import main

    main(sys.argv[1:])
