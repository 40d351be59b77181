"""`moot review --protocol NAME` chooses the reviewing protocol through the registry: a protocol whose plugin declares
no review hook is refused in one sentence, and `--protocol council` is the council review."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from test_review import MOOT, one_sentence, repo
from test_review_council import MEMBER

import moot

__all__ = ["repo"]  # the fixture, shared with test_review

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "registry"))
from test_registry_plugin import registered


def review(repo: Path, *args: str, pythonpath: str = "") -> subprocess.CompletedProcess[str]:
    here = str(Path(moot.__file__).resolve().parents[1])  # this moot, installed or not
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (here, pythonpath) if p)}
    return subprocess.run([*MOOT, "review", *args], cwd=repo, capture_output=True, text=True, timeout=600, env=env)


def test_a_protocol_without_a_review_hook_is_refused_in_one_sentence(repo: Path, tmp_path: Path) -> None:
    site = registered(tmp_path / "site")["PYTHONPATH"]
    refused = one_sentence(review(repo, "--protocol", "pingpong", "--agents", MEMBER, pythonpath=site))
    assert "the protocol pingpong cannot review a change (it has no review hook)" in refused
    assert "use --protocol council or critique." in refused
    assert not (repo / ".git" / "moot").exists()  # nothing written
    unknown = one_sentence(review(repo, "--protocol", "nonsense", "--agents", MEMBER))
    assert "protocol 'nonsense' is unknown" in unknown
    both = one_sentence(review(repo, "--protocol", "critique", "--council", "--agents", MEMBER))
    assert "--council is --protocol council" in both
    members = one_sentence(review(repo, "--protocol", "critique", "--member", f"a={MEMBER}", "--member", f"b={MEMBER}"))
    assert "critique reviews with its roles author, reviewer, not members" in members


def test_protocol_council_is_the_council_review(repo: Path) -> None:
    done = review(repo, "--protocol", "council", "--agents", MEMBER, "--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["comment"].startswith("## moot review (council): approve")
    assert report["artifact"].startswith(".git/moot/.council/review-of-")
