"""What a dry run and a run say a person and a command cost: a person $0 and no model tokens, with no terminal
needed to price one; a command the price moot.toml's [prices] gives it, and "unknown" only while it has none."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

from engine_helpers import run_moot

AGENT = f"cmd:{sys.executable} {Path(__file__).parents[1] / 'reliability' / 'protocol_agent.py'}"


def test_a_dry_run_prices_a_person_at_0_without_a_terminal_and_within_max_cost(tmp_path: Path) -> None:
    args = ["run", "critique", "--topic", "Adopt a monorepo", "--agent", "critic=human", "--agents", "local"]
    done = run_moot(*args, "--max-cost", "1", "--dry-run", cwd=tmp_path)  # stdin is a pipe, not a terminal
    assert done.returncode == 0, done.stderr
    assert re.search(r"^  critic\s+human\s+5 call\(s\): a person, no model tokens, \$0$", done.stdout, re.M)
    assert "--max-cost $1.00: even the upper bound fits." in done.stdout
    as_json = json.loads(run_moot(*args, "--dry-run", "--json", cwd=tmp_path).stdout)
    critic = next(row for row in as_json["roles"] if row["role"] == "critic")
    assert critic["person"] and critic["prompt_tokens"] == critic["max_prompt_tokens"] == 0
    assert critic["cost_usd"] == 0
    assert sorted(path.name for path in tmp_path.iterdir()) == []  # nothing written


def test_a_run_with_a_person_still_needs_a_terminal(tmp_path: Path) -> None:
    done = run_moot("run", "critique", "--topic", "T", "--agent", "critic=human", "--agents", "local", cwd=tmp_path)
    assert done.returncode == 2
    assert "needs a terminal on stdin" in done.stderr
    assert not (tmp_path / ".dialogues").exists()


def test_a_priced_command_shows_its_cost_and_an_unpriced_one_an_unknown_cost(tmp_path: Path) -> None:
    args = ["run", "critique", "--topic", "Adopt a monorepo", "--max-rounds", "2", "--agents", AGENT, "--force"]
    unpriced = run_moot(*args, cwd=tmp_path)
    assert "cost unknown" in unpriced.stderr + unpriced.stdout
    (tmp_path / "moot.toml").write_text(f'[prices]\n"{AGENT}" = {{ input = 3.0, output = 15.0 }}\n', encoding="utf-8")
    priced = run_moot(*args, "--json", cwd=tmp_path)
    ran = json.loads(priced.stdout)
    assert ran["outcome"] == "DONE" and ran["prompt_tokens"] > 0 and ran["completion_tokens"] > 0
    expected = (ran["prompt_tokens"] * 3.0 + ran["completion_tokens"] * 15.0) / 1e6
    assert abs(ran["cost_usd"] - expected) < 1e-6
    dry = run_moot(*args, "--dry-run", "--max-cost", "1", cwd=tmp_path)
    assert "unknown" not in dry.stdout and re.search(r"total: 4 call\(s\), ~[\d,]+ tokens, ~\$0\.\d+", dry.stdout)


def test_a_price_without_its_output_rate_is_refused_naming_the_setting(tmp_path: Path) -> None:
    (tmp_path / "moot.toml").write_text(f'[prices]\n"{AGENT}" = {{ input = 3.0 }}\n', encoding="utf-8")
    done = run_moot("run", "critique", "--topic", "T", "--agents", AGENT, "--dry-run", cwd=tmp_path)
    assert done.returncode == 2
    assert "moot.toml: setting 'prices." in done.stderr and ".output' is invalid" in done.stderr
    assert "Traceback" not in done.stderr
