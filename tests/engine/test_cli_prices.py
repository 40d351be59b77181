"""What a budget in dollars counts: a person's turns cost nothing, so a run with a human role takes --max-cost."""

from __future__ import annotations

from pathlib import Path

import pexpect
from engine_helpers import in_a_terminal, reply, write_script


def test_a_person_costs_nothing_so_max_cost_accepts_a_human_role(tmp_path: Path) -> None:
    critic = write_script(tmp_path / "critic.jsonl", [reply("What about CI time?")])
    args = ["run", "critique", "--topic", "T", "--agent", "proposer=human", "--agents", f"script:{critic}"]
    child = in_a_terminal([*args, "--max-cost", "1"], tmp_path)
    child.expect("› ")  # the person is asked for the proposer's turn: the budget did not refuse the run
    child.sendintr()
    child.expect(pexpect.EOF)
    child.close()
    assert "price table does not know" not in child.before
    assert (tmp_path / ".dialogues" / "t.md").exists()
