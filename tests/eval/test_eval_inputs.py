"""What `moot eval` reads: task files as published (GSM8K, multiple choice), answers, and a user's errors."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import forked_moot
from moot.errors import UserError
from moot.eval.tasks import LETTER, NUMBER, arithmetic, extractor, load_jsonl, sample

SOLVER = Path(__file__).with_name("eval_solver.py")
AGENT = f"cmd:{sys.executable} {SOLVER}"


def moot(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return forked_moot.run(args, cwd=cwd, timeout=600)


@pytest.mark.parametrize(
    ("reply", "number"),
    [
        ("3 + 4 = 7, then 7 * 2 = 14.\nAnswer: 14", "14"),
        ("The answer is $1,234.00", "1234"),
        ("First 12, then 30, so the final result is -5", "-5"),
        ("Answer: 2.50", "2.5"),
        ("I cannot tell.", None),
        ("So the final answer is 12 + 3 = 15.", "15"),  # the last number of the answer line
        ("Answer: 7-3=4", "4"),
        ("The answer is 3/4", "0.75"),  # a fraction, equal to the decimal
        ("Answer: 7/3", "7/3"),
        ("We get 4 and 5, so $\\boxed{\\frac{9}{2}}$ follows.", "4.5"),
        ("\\boxed{12} is wrong; the answer is 13", "12"),  # a boxed answer wins
    ],
)
def test_number_extractor(reply: str, number: str | None) -> None:
    assert NUMBER.read(reply) == number


@pytest.mark.parametrize(
    ("reply", "letter"),
    [
        ("(A) is tempting but wrong.\nAnswer: (C)", "C"),
        ("I would pick (B) over (D).", "D"),
        ("Answer: I think it is B", "B"),  # "I" is the pronoun, not option I
        ("Answer: A good case can be made for D", "D"),  # "A" is the article
        ("Answer: A is right", "A"),
        ("The answer is \\boxed{C}", "C"),
        ("Answer: Instead I go with B.", "B"),
    ],
)
def test_letter_extractor(reply: str, letter: str | None) -> None:
    assert LETTER.read(reply) == letter


def test_regex_extractor() -> None:
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
    tasks, read, digest = load_jsonl(plain, "letter")
    assert [(t.id, t.answer) for t in tasks] == [("q1", "A"), ("q2", "B")] and read is LETTER and len(digest) == 64
    gsm8k = tmp_path / "gsm8k.jsonl"
    gsm8k.write_text(
        json.dumps({"question": "Tom has 3 apples and buys 1,200 more.", "answer": "3 + 1200 = 1203\n#### 1,203"})
        + "\n"
    )
    (task,), read, _ = load_jsonl(gsm8k, "auto")
    assert (task.id, task.answer, read) == ("1", "1203", NUMBER)


def test_multiple_choice_files_as_mmlu_distributes_them(tmp_path: Path) -> None:
    mmlu = tmp_path / "mmlu.jsonl"
    rows = [
        {"question": "2 + 2?", "subject": "math", "choices": ["3", "4", "5", "6"], "answer": 1},
        {"question": "Capital of France?", "choices": ["Rome", "Paris"], "answer": "B"},
        {"question": "Largest?", "options": ["1", "9", "3"], "answer": "1"},  # MMLU-Pro's options, index as text
    ]
    mmlu.write_text("".join(json.dumps(row) + "\n" for row in rows))
    tasks, read, _ = load_jsonl(mmlu, "auto")
    assert read is LETTER and [(t.answer, t.choices) for t in tasks] == [("B", 4), ("B", 2), ("B", 3)]
    assert tasks[0].question == "2 + 2?\n\nA. 3\nB. 4\nC. 5\nD. 6"
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"question": "q", "choices": ["a", "b"], "answer": 5}) + "\n")
    with pytest.raises(UserError, match="neither an option's index nor its letter"):
        load_jsonl(bad, "auto")


def test_a_sample_is_seeded_and_grows_without_changing_its_first_tasks() -> None:
    tasks = arithmetic(50, seed=1)
    chosen = sample(tasks, 10, shuffle_seed=4)
    assert chosen == sample(tasks, 10, shuffle_seed=4) and chosen != tasks[:10]
    assert sample(tasks, 20, shuffle_seed=4)[:10] == chosen and sample(tasks, 10, None) == tasks[:10]


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
        (["--strategy", "sc:match"], "add one, e.g. --strategy protocol:council"),
        (["--strategy", "debate:2x1", "--strategy", "sc:match=vote"], "vote is not among the strategies"),
        (["--strategy", "council:1"], "a council has 2 to 26 members"),
        (["--strategy", "single", "--strategy", "single"], "given twice"),
        (["--strategy", "debate:1x1"], "at least 2 agents"),
        (["--strategy", "single", "--agents", "nonsense:x"], "unknown agent spec"),
        (["--strategy", "single", "--limit", "2", "--sample", "2"], "not both"),
        (["--strategy", "single", "--match", "dollars"], "--match dollars is unknown"),
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


def test_the_run_records_the_task_file_moot_and_the_models(tmp_path: Path) -> None:
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text(json.dumps({"question": "What is the result of 2+2?", "answer": 4}) + "\n")
    base = ["eval", "--tasks", str(tasks), "--strategy", "single", "--agents", AGENT, "--json"]
    done = moot(*base, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert summary["moot_versions"] == ["0.1.0"] and summary["models"] == {"agent": ["cmd:python"]}
    assert len(summary["tasks_sha256"]) == 64
    tasks.write_text(json.dumps({"question": "What is the result of 2+3?", "answer": 5}) + "\n")
    changed = moot(*base, cwd=tmp_path)  # the same path, other content: another experiment
    assert changed.returncode == 2 and "other settings (tasks_sha256)" in changed.stderr
