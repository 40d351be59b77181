"""`moot run council`, `moot check`, `moot show` and `moot rules council` as a user runs them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from council_helpers import SCRIPTED

import forked_moot
from forked_moot import MOOT
from moot.protocols.council.machine import RULES


def moot(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return forked_moot.run(args, cwd=cwd, timeout=300)


def test_run_council_json_then_check_and_show(tmp_path: Path) -> None:
    members = [arg for name in ("ada", "bo", "cy") for arg in ("--member", f"{name}={SCRIPTED}")]
    done = moot(
        "run", "council", "--question", "Share one cache?", *members, "--chairman", SCRIPTED, "--json", cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["protocol"] == "council" and report["outcome"] == "SYNTHESIZED" and report["turns"] == 7
    assert report["artifact"] == ".council/share-one-cache.md"
    assert moot("check", report["artifact"], cwd=tmp_path).returncode == 0
    shown = moot("show", "--plain", report["artifact"], cwd=tmp_path)
    assert shown.returncode == 0 and "Stage 3 — Synthesis by chairman" in shown.stdout and "SYNTHESIZED" in shown.stdout
    # The run's JSON carries the record's conformity, as `moot show --json` computes it: every reviewer's first
    # choice is another member's answer, and the separate chairman adopts the top-ranked one.
    answer = report["conformity"]["answer"]
    assert answer["total_changes"] == 3 and answer["chairman"] == "chairman" and answer["initial_distinct"] == 3
    assert answer["participants"]["chairman"]["changes"] == 0
    shown_json = json.loads(moot("show", "--json", report["artifact"], cwd=tmp_path).stdout)
    assert shown_json["conformity"] == report["conformity"]


def test_rules_council_lists_every_council_rule(tmp_path: Path) -> None:
    done = moot("rules", "council", "--json", cwd=tmp_path)
    ids = {row["id"] for row in json.loads(done.stdout) if row["protocol"] == "council"}
    assert ids == {rule.id for rule in RULES}


def test_bad_members_are_one_sentence_and_exit_2(tmp_path: Path) -> None:
    for members in (["--member", "bob"], ["--member", "bob=local"], ["--member", "a=local", "--member", "bob=local"]):
        done = moot("run", "council", "--question", "Q?", *members, cwd=tmp_path)
        assert done.returncode == 2 and done.stderr.startswith("moot: ") and "Traceback" not in done.stderr
        assert len(done.stderr.strip().splitlines()) == 1
    assert not (tmp_path / ".council").exists()


def test_a_batch_line_convenes_a_council_with_its_members_models(tmp_path: Path) -> None:
    line = {"protocol": "council", "question": "Share one cache?", "members": [["ada", SCRIPTED], ["bo", SCRIPTED]]}
    batch = tmp_path / "batch.jsonl"
    batch.write_text(json.dumps(line) + "\n", encoding="utf-8")
    done = moot("run", "--batch", str(batch), cwd=tmp_path)
    outcome = json.loads(done.stdout.strip().splitlines()[-1])
    assert outcome["outcome"] == "SYNTHESIZED", (outcome, done.stderr)


def test_source_passages_reach_every_stage_through_the_question(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "cache.md").write_text("# Cache\n\nThe shared cache holds 40 GiB.\nEvictions doubled last quarter.\n")
    (docs / "billing.md").write_text("# Billing\n\nInvoices are monthly.\n")
    (docs / ".gitignore").write_text("secret.md\n")
    (docs / "secret.md").write_text("The shared cache password is hunter2.\n")
    members = [arg for name in ("ada", "bo") for arg in ("--member", f"{name}={SCRIPTED}")]
    done = subprocess.run(
        [*MOOT, "run", "council", "--question", "Share one cache?", *members, "--source", "docs", "--json"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        env=dict(os.environ),
    )
    assert done.returncode == 1 and json.loads(done.stdout)["outcome"] == "SYNTHESIZED", (
        done.stderr
    )  # two: no consensus
    record = (tmp_path / json.loads(done.stdout)["artifact"]).read_text()
    question = record.split("## Question", 1)[1].split("## Stage 1", 1)[0]
    # The best passage for the question, with path:line, is in the question every stage is asked.
    assert "> docs/cache.md:3: The shared cache holds 40 GiB." in question
    assert "cite a line as path:line" in question and "hunter2" not in question  # .gitignore respected
    assert moot("check", json.loads(done.stdout)["artifact"], cwd=tmp_path).returncode == 0
    missing = moot("run", "council", "--question", "Q?", *members, "--source", "nowhere", cwd=tmp_path)
    assert missing.returncode == 2 and "--source" in missing.stderr


MEMBER = f"cmd:{sys.executable} {Path(__file__).parent / 'council_member.py'}"
# ada ranks bo's answer first and is sure of it; bo and cy rank ada's first and are not: Borda puts ada first
# (2 points to 1), the confidence-weighted count bo (0.9 to 0.5).
PLANTED = {"ada": "mark=alpha favour=beta sure=0.9", "bo": "mark=beta favour=alpha sure=0.3",
           "cy": "mark=gamma favour=alpha sure=0.2"}  # fmt: skip


def test_aggregate_confidence_changes_the_planted_winner_and_check_catches_a_hand_edited_ranking(
    tmp_path: Path,
) -> None:
    members = [arg for name, how in PLANTED.items() for arg in ("--member", f"{name}={MEMBER} {how}")]
    first = {}
    for aggregate in ("borda", "confidence"):
        root = tmp_path / aggregate
        root.mkdir()
        done = moot("run", "council", "--question", "Share one cache?", *members, "--aggregate", aggregate,
                    "--seed", "7", "--json", cwd=root)  # fmt: skip
        assert done.returncode == 0, done.stderr
        report = json.loads(done.stdout)
        first[aggregate] = report["reason"]
        record = root / report["artifact"]
        text = record.read_text(encoding="utf-8")
        assert f"- **Aggregation:** {aggregate}\n" in text and text.count("- **Confidence:** ") == 6
        shown = json.loads(moot("show", "--json", str(record), cwd=root).stdout)
        assert shown["verdict"] == "valid" and shown["state"]["detail"]["aggregation"] == aggregate
        assert shown["state"]["detail"]["confidences"]["ada"]["review"] == 0.9
    assert "ada ranked first" in first["borda"] and "bo ranked first" in first["confidence"]
    # Hand-edited back to the Borda winner, the confidence-weighted record no longer checks.
    record = tmp_path / "confidence" / ".council" / "share-one-cache.md"
    text = record.read_text(encoding="utf-8")
    assert "| 1 | bo | 0.9 |\n| 2 | ada | 0.5 |" in text
    record.write_text(text.replace("| 1 | bo | 0.9 |\n| 2 | ada | 0.5 |", "| 1 | ada | 0.9 |\n| 2 | bo | 0.5 |"))
    checked = moot("check", "--json", str(record), cwd=tmp_path)
    assert checked.returncode == 1
    rules = [v["rule"] for v in json.loads(checked.stdout)["violations"]]
    assert "COUNCIL_AGGREGATE" in rules


def test_an_unknown_aggregation_is_one_sentence_and_exit_2(tmp_path: Path) -> None:
    members = [arg for name in ("ada", "bo") for arg in ("--member", f"{name}={SCRIPTED}")]
    done = moot("run", "council", "--question", "Q?", *members, "--aggregate", "median", cwd=tmp_path)
    assert done.returncode == 2 and "borda or confidence" in done.stderr and "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and not (tmp_path / ".council").exists()
