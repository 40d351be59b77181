"""What `moot eval` reads: task files (plain and GSM8K), answer extractors, and the errors a user can make."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from moot.errors import UserError
from moot.eval.tasks import LETTER, NUMBER, arithmetic, extractor, load_jsonl

SOLVER = Path(__file__).with_name("eval_solver.py")
AGENT = f"cmd:{sys.executable} {SOLVER}"


def moot(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "moot", *args], cwd=cwd, capture_output=True, text=True, timeout=600)


@pytest.mark.parametrize(
    ("reply", "number"),
    [
        ("3 + 4 = 7, then 7 * 2 = 14.\nAnswer: 14", "14"),
        ("The answer is $1,234.00", "1234"),
        ("First 12, then 30, so the final result is -5", "-5"),
        ("Answer: 2.50", "2.5"),
        ("I cannot tell.", None),
    ],
)
def test_number_extractor(reply: str, number: str | None) -> None:
    assert NUMBER.read(reply) == number


def test_letter_and_regex_extractors() -> None:
    assert LETTER.read("(A) is tempting but wrong.\nAnswer: (C)") == "C"
    assert LETTER.read("I would pick (B) over (D).") == "D"
    pick = extractor(r"regex:FINAL=(\w+)")
    assert pick.read("FINAL=x ... FINAL=yes") == "yes"
    with pytest.raises(UserError, match="regular expression"):
        extractor("regex:(")


def test_arithmetic_is_seeded_and_right() -> None:
    first = arithmetic(20, seed=3, level=4)
    assert first == arithmetic(20, seed=3, level=4) and first != arithmetic(20, seed=4, level=4)
    assert arithmetic(5, seed=3, level=4) == first[:5]  # a longer run extends a shorter one
    for task in first:
        expression = task.question.removeprefix("What is the result of ").removesuffix("?")
        assert expression.count("*") == 2 and int(task.answer) == eval(expression, {"__builtins__": {}})


def test_jsonl_and_gsm8k_files(tmp_path: Path) -> None:
    plain = tmp_path / "plain.jsonl"
    plain.write_text(
        '{"id": "q1", "question": "Pick", "answer": "(a)"}\n\n{"id": "q2", "question": "Pick", "answer": "B"}\n'
    )
    assert [(t.id, t.answer) for t in load_jsonl(plain, LETTER)] == [("q1", "A"), ("q2", "B")]
    gsm8k = tmp_path / "gsm8k.jsonl"
    gsm8k.write_text(
        json.dumps({"question": "Tom has 3 apples and buys 1,200 more.", "answer": "3 + 1200 = 1203\n#### 1,203"})
        + "\n"
    )
    (task,) = load_jsonl(gsm8k, NUMBER)
    assert (task.id, task.answer) == ("1", "1203")


@pytest.mark.parametrize(
    ("lines", "says"),
    [
        (["not json"], "line 1 is not JSON"),
        (['{"question": "q"}'], '"question" (text) and "answer"'),
        (['{"id": 1, "question": "q", "answer": 1}', '{"id": 1, "question": "r", "answer": 2}'], "repeats the id"),
        (['{"question": "q", "answer": "many"}'], "is not a number"),
    ],
)
def test_bad_task_files_exit_2_with_one_sentence(tmp_path: Path, lines: list[str], says: str) -> None:
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text("\n".join(lines) + "\n")
    done = moot("eval", "--tasks", str(tasks), "--strategy", "single", "--agents", AGENT, cwd=tmp_path)
    assert done.returncode == 2 and says in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / "moot-eval" / "results.jsonl").exists()


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--strategy", "vote"], "vote needs at least two agents"),
        (["--strategy", "sc:match"], "add one, e.g. --strategy debate:3x2 or council:3"),
        (["--strategy", "council:1"], "a council has 2 to 26 members"),
        (["--strategy", "single", "--strategy", "single"], "given twice"),
        (["--strategy", "debate:1x1"], "at least 2 agents"),
        (["--strategy", "single", "--agents", "nonsense:x"], "unknown agent spec"),
    ],
)
def test_usage_errors_exit_2(tmp_path: Path, args: list[str], says: str) -> None:
    done = moot(
        "eval",
        "--tasks",
        "arithmetic",
        "--limit",
        "2",
        *(["--agents", AGENT] if "--agents" not in args else []),
        *args,
        cwd=tmp_path,
    )
    assert done.returncode == 2 and says in done.stderr and "Traceback" not in done.stderr


def test_other_settings_into_the_same_directory_are_refused(tmp_path: Path) -> None:
    base = ["eval", "--tasks", "arithmetic", "--limit", "2", "--strategy", "single", "--agents", AGENT]
    assert moot(*base, cwd=tmp_path).returncode == 0
    before = (tmp_path / "moot-eval" / "results.jsonl").read_bytes()
    done = moot(*base, "--seed", "5", cwd=tmp_path)
    assert done.returncode == 2 and "other settings (seed)" in done.stderr and "another --out" in done.stderr
    assert (tmp_path / "moot-eval" / "results.jsonl").read_bytes() == before
    # more tasks and another strategy extend the same experiment
    more = moot(*base[:4], "3", *base[5:], "--strategy", "sc:2", "--json", cwd=tmp_path)
    assert more.returncode == 0, more.stderr
    assert [(s["name"], s["n"]) for s in json.loads(more.stdout)["strategies"]] == [("single", 3), ("sc:2", 3)]


def test_sc_match_spends_what_the_debate_spends(tmp_path: Path) -> None:
    done = moot(
        "eval", "--tasks", "arithmetic", "--limit", "2", "--strategy", "debate:2x1", "--strategy", "sc:match",
        "--agents", AGENT, "--json", cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    debate, matched = json.loads(done.stdout)["strategies"]
    assert matched["name"] == "sc:match" and matched["k"] >= 3  # the rounds' prompts hold the openings' answers
    assert matched["mean_tokens"] == pytest.approx(debate["mean_tokens"], rel=0.25)
