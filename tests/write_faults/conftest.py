"""Fixtures of the write-fault tests: a real small tmpfs as the work root, mounted for the test and filled or
made read-only by it. Mounting needs root; elsewhere these tests skip and say why."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

# The agent-tool and MCP tests' helpers, imported rather than copied.
TESTS = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(TESTS / "tools"), str(TESTS / "mcp")]

# Small, so that filling it is quick; large enough for moot's files and a few debates.
DISK_SIZE = "1m"


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """An empty tmpfs of ``DISK_SIZE``, unmounted after the test."""
    if os.geteuid() != 0:
        pytest.skip("a full disk is tested on a small tmpfs, and mounting one needs root")
    disk = tmp_path / "disk"
    disk.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={DISK_SIZE}", "tmpfs", str(disk)], capture_output=True, text=True
    )
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here ({mounted.stderr.strip() or mounted.returncode})")
    try:
        yield disk
    finally:
        subprocess.run(["umount", "--lazy", str(disk)], check=False)


@pytest.fixture
def sigkill_root(tmp_path: Path) -> Path:
    root = tmp_path / "work"
    root.mkdir()
    return root
