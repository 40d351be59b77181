"""The repository every review test reviews: two commits of a rate limiter, made with the real git."""

from __future__ import annotations

from pathlib import Path

import pytest
from git_repo import git


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    git(repo, "config", "user.email", "dev@example.com")
    git(repo, "config", "user.name", "Dev")
    (repo / "rate.py").write_text("def limit(requests):\n    return requests < 100\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "rate limit: a fixed cap")
    (repo / "rate.py").write_text("def limit(requests, cap=100):\n    return requests <= cap\n")
    git(repo, "commit", "-q", "-am", "rate limit: the cap is a parameter")
    return repo
