"""An Agora run appends each turn (and the outcome) to its record: no rewrite, about one fsync per turn."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from engine_agora_helpers import checks_clean, drone, every_role, run, start

from moot.agents import ScriptAgent


def test_an_agora_run_appends_its_turns_and_outcome(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    driver = start(tmp_path)
    record = driver.record_path
    agent = ScriptAgent()
    agent.enqueue(drone("propose", message="One repository, one CI pipeline."), role="advocate")
    agent.enqueue(drone("approve", "proposal-advocate", confidence=0.9), role="skeptic")
    agent.enqueue(drone("no-change", confidence=0.9), role="advocate")
    header = record.read_bytes()
    inode = record.stat().st_ino
    fsyncs: list[int] = []
    renamed: list[str] = []
    real_fsync, real_replace = os.fsync, os.replace
    monkeypatch.setattr(os, "fsync", lambda fd: (fsyncs.append(fd), real_fsync(fd))[1])
    monkeypatch.setattr(os, "replace", lambda src, dst: (renamed.append(str(dst)), real_replace(src, dst))[1])
    result = run(driver, every_role(driver, agent))
    assert result.outcome is not None and result.outcome.name == "CONSENSUS"
    assert record.stat().st_ino == inode and record.read_bytes().startswith(header)
    assert not [name for name in renamed if name.endswith((".md", ".chain"))]  # only the run sidecar is replaced
    assert len(fsyncs) <= 3 + 2  # one per turn, plus the run sidecar's file and directory
    checks_clean(record)
