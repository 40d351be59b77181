"""``moot resume RECORD --max-rounds N`` / ``--max-turns N``: a debate that ended at its limit goes on where its
protocol allows it, and is refused in one sentence (exit 2, nothing written) where its spec forbids it."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from engine_helpers import run_moot

from moot.detect import check_path

PROTOCOL_AGENT = Path(__file__).parents[1] / "reliability" / "protocol_agent.py"

# Waits while the limit is below four rounds; at a limit of four or more, the first speaker of the last round
# proposes done and the other confirms: a dialogue that ends MAX_ROUNDS at two rounds, and DONE once raised to 4.
PATIENT_AGENT = """\
import json, os, re, sys
prompt = sys.stdin.read()
allowed = json.loads(os.environ["MOOT_JSON_SCHEMA"])["properties"]["status"]["enum"]
round_, limit = map(int, re.search(r"for round (\\d+) of (\\d+)", prompt).groups())
if "DONE" in allowed:
    status = "DONE"
elif limit >= 4 and round_ == limit and "PROPOSING_DONE" in allowed:
    status = "PROPOSING_DONE"
else:
    status = "AWAITING"
role = os.environ["MOOT_ROLE"]
message = (
    f"In round {round_} of {limit} the {role} weighs the migration plan: the staged rollout keeps the old "
    "service answering while the new one warms its cache, and the rollback stays one switch away."
)
summary = "Staged rollout with a one-switch rollback." if status == "DONE" else ""
print(json.dumps({"message": message, "status": status, "summary": summary}))
"""


def _agent(tmp_path: Path, source: str) -> str:
    script = tmp_path / "agent.py"
    script.write_text(source, encoding="utf-8")
    return f"cmd:{sys.executable} {script}"


def test_a_critique_at_its_round_limit_goes_on_with_resume_max_rounds(tmp_path: Path) -> None:
    agent = _agent(tmp_path, PATIENT_AGENT)
    ended = run_moot("run", "critique", "--topic", "T", "--max-rounds", "2", "--agents", agent, "--json", cwd=tmp_path)
    first = json.loads(ended.stdout)
    assert first["outcome"] == "MAX_ROUNDS"
    # The advice names a command that works, with the record it is about.
    assert "`moot resume RECORD --max-rounds 7`" in first["reason"]
    shown = run_moot("run", "critique", "--topic", "U", "--max-rounds", "1", "--agents", agent, cwd=tmp_path)
    assert "`moot resume .dialogues/u.md --max-rounds 6`" in " ".join(shown.stdout.split())
    checked = run_moot("check", ".dialogues/t.md", cwd=tmp_path)
    assert "`moot resume .dialogues/t.md --max-rounds 7`" in checked.stdout
    plain = run_moot("resume", ".dialogues/t.md", cwd=tmp_path)
    assert plain.returncode == 2 and "moot resume .dialogues/t.md --max-rounds 7" in plain.stderr
    assert "start a new debate" not in plain.stderr

    resumed = run_moot("resume", ".dialogues/t.md", "--max-rounds", "4", "--json", cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    assert (json.loads(resumed.stdout)["outcome"], json.loads(resumed.stdout)["turns"]) == ("DONE", 8)
    checked = run_moot("check", ".dialogues/t.md", "--json", cwd=tmp_path)
    report = json.loads(checked.stdout)
    assert checked.returncode == 0 and report["verdict"] == "valid" and report["state"]["outcome"]["name"] == "DONE"
    assert report["state"]["detail"]["max_rounds"] == 4 and report["state"]["round"] == 4


def test_resume_refuses_a_limit_that_raises_nothing_and_leaves_the_record(tmp_path: Path) -> None:
    agent = _agent(tmp_path, PATIENT_AGENT)
    run_moot("run", "critique", "--topic", "T", "--max-rounds", "2", "--agents", agent, cwd=tmp_path)
    record = tmp_path / ".dialogues" / "t.md"
    before = {p.name: p.read_bytes() for p in record.parent.iterdir()}
    for args, said in [
        (["--max-rounds", "2"], "already allows 2 round(s); give --max-rounds above 2."),
        (["--max-turns", "9"], "a Critique Loop's limit is in rounds"),
    ]:
        refused = run_moot("resume", ".dialogues/t.md", *args, cwd=tmp_path)
        assert refused.returncode == 2 and said in refused.stderr and "Traceback" not in refused.stderr
        assert len(refused.stderr.strip().splitlines()) == 1
        assert {p.name: p.read_bytes() for p in record.parent.iterdir()} == before


@pytest.mark.parametrize(
    ("protocol", "args", "option", "why"),
    [
        ("duel", ["doc.md"], "--max-turns", "the Socratic Duel's spec stops a duel at 6 turns at most"),
        (
            "agora",
            ["--topic", "T", "--max-turns", "4"],
            "--max-turns",
            "TIMEOUT, which is final, so its limit cannot be raised; start a new debate with a higher one: "
            "`moot run agora --max-turns N`.",
        ),
        ("roundtable", ["--topic", "T", "--max-rounds", "1"], "--max-rounds", "closes a meeting once its rounds"),
    ],
)
def test_a_protocol_whose_spec_ends_it_at_its_limit_refuses_to_raise_it(
    tmp_path: Path, protocol: str, args: list[str], option: str, why: str
) -> None:
    (tmp_path / "doc.md").write_text("# Caching\n\n## Plan\nOne shared cache with a per-tenant floor.\n")
    agent = f"cmd:{sys.executable} {PROTOCOL_AGENT}"
    ran = run_moot("run", protocol, *args, "--agents", agent, "--json", cwd=tmp_path)
    record = Path(json.loads(ran.stdout)["artifact"])
    files = sorted(p for p in tmp_path.rglob("*") if p.is_file())
    before = {p: p.read_bytes() for p in files}
    refused = run_moot("resume", str(record), option, "9", cwd=tmp_path)
    assert refused.returncode == 2 and why in refused.stderr and "Traceback" not in refused.stderr
    assert len(refused.stderr.strip().splitlines()) == 1
    assert sorted(p for p in tmp_path.rglob("*") if p.is_file()) == files
    assert {p: p.read_bytes() for p in files} == before
    assert check_path(tmp_path / record).exit_code == 0
