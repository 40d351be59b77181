"""Task sets for ``moot eval``: JSONL files (plain or GSM8K's format) and Du et al.'s arithmetic generator.

A task is a question with a known answer. The answer a model gives is read from its reply by an
extractor (a number, a multiple-choice letter, or a regular expression), and compared with the known
answer after the same normalisation.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from pathlib import Path

from moot.errors import UserError


@dataclass(frozen=True)
class Task:
    id: str
    question: str
    answer: str  # normalised by the extractor's own normalisation


@dataclass(frozen=True)
class Extractor:
    """How to read an answer out of a reply, and how the task asks for it."""

    name: str
    read: Callable[[str], str | None]
    normalise: Callable[[str], str | None]
    ask: str  # the last line of every prompt

    def correct(self, reply_answer: str | None, known: str) -> bool:
        return reply_answer is not None and reply_answer == known


_ANSWER_LINE = re.compile(r"answer\s*(?:is)?\s*[:=]?\s*(?P<rest>[^\n]*)", re.IGNORECASE)
_NUMBER = re.compile(r"[-−]?\$?\d[\d,]*(?:\.\d+)?")
_LETTER = re.compile(r"\(?\b([A-J])\b\)?")


def normalise_number(text: str) -> str | None:
    """'1,234', '$1234.00', '−7' -> '1234' and '-7'; None when ``text`` holds no number."""
    match = _NUMBER.search(text)
    if match is None:
        return None
    cleaned = match.group(0).replace(",", "").replace("$", "").replace("−", "-")
    try:
        value = Decimal(cleaned)
    except InvalidOperation:
        return None
    if value == value.to_integral_value():
        return str(int(value))
    return format(value.normalize(), "f")


def _last_answer_line(reply: str) -> str | None:
    found = list(_ANSWER_LINE.finditer(reply))
    return found[-1].group("rest") if found else None


def read_number(reply: str) -> str | None:
    """The number after the last 'Answer:' (or 'answer is'), else the last number in the reply."""
    line = _last_answer_line(reply)
    if line is not None and (number := normalise_number(line)) is not None:
        return number
    numbers = _NUMBER.findall(reply)
    return normalise_number(numbers[-1]) if numbers else None


def normalise_letter(text: str) -> str | None:
    match = _LETTER.search(text.strip().upper())
    return match.group(1) if match else None


def read_letter(reply: str) -> str | None:
    """The letter after the last 'Answer:', else the last '(X)' in the reply."""
    line = _last_answer_line(reply)
    if line is not None and (letter := normalise_letter(line)) is not None:
        return letter
    found = re.findall(r"\(([A-J])\)", reply)
    return found[-1] if found else None


def regex_extractor(pattern: str) -> Extractor:
    try:
        compiled = re.compile(pattern)
    except re.error as exc:
        raise UserError(f"--extract regex:{pattern} is not a regular expression ({exc}); fix the pattern.") from None

    def read(reply: str) -> str | None:
        found = list(compiled.finditer(reply))
        if not found:
            return None
        last = found[-1]
        return (last.group(1) if compiled.groups else last.group(0)).strip()

    return Extractor(f"regex:{pattern}", read, lambda text: text.strip(), "End your reply with your final answer.")


NUMBER = Extractor("number", read_number, normalise_number, "End your reply with a line 'Answer: <number>'.")
LETTER = Extractor("letter", read_letter, normalise_letter, "End your reply with a line 'Answer: <letter>'.")


def extractor(name: str) -> Extractor:
    if name == "number":
        return NUMBER
    if name == "letter":
        return LETTER
    if name.startswith("regex:"):
        return regex_extractor(name.removeprefix("regex:"))
    raise UserError(f"--extract {name!r} is unknown; use number, letter or regex:PATTERN.")


# --- Du et al.'s arithmetic -------------------------------------------------------------------------

# level -> (the expression's operators, the largest operand + 1). Level 4 is Du et al.'s setting.
ARITHMETIC_LEVELS: dict[int, tuple[tuple[str, ...], int]] = {
    1: (("+",), 10),
    2: (("+", "*"), 10),
    3: (("+", "*", "+", "-", "*"), 10),
    4: (("+", "*", "+", "-", "*"), 30),
    5: (("+", "*", "+", "-", "*"), 100),
}
DEFAULT_LEVEL = 4
DEFAULT_LIMIT = 100  # generated tasks when --limit is not given


def _value(numbers: list[int], operators: tuple[str, ...]) -> int:
    """The expression's value, products first."""
    total, term = 0, numbers[0]
    sign = 1
    for op, n in zip(operators, numbers[1:], strict=True):
        if op == "*":
            term *= n
            continue
        total += sign * term
        sign, term = (1 if op == "+" else -1), n
    return total + sign * term


def arithmetic(count: int, seed: int, level: int = DEFAULT_LEVEL) -> list[Task]:
    """``count`` seeded tasks of the form a+b*c+d-e*f (shorter at levels 1 and 2), as in Du et al. 2023."""
    if level not in ARITHMETIC_LEVELS:
        raise UserError(f"--difficulty {level} is unknown; use {min(ARITHMETIC_LEVELS)} to {max(ARITHMETIC_LEVELS)}.")
    operators, bound = ARITHMETIC_LEVELS[level]
    rng = random.Random(seed)
    tasks = []
    for index in range(count):
        numbers = [rng.randrange(bound) for _ in range(len(operators) + 1)]
        expression = str(numbers[0]) + "".join(f"{op}{n}" for op, n in zip(operators, numbers[1:], strict=True))
        value = _value(numbers, operators)
        tasks.append(Task(f"arithmetic-{seed}-{index}", f"What is the result of {expression}?", str(value)))
    return tasks


# --- files ----------------------------------------------------------------------------------------


def _gsm8k_answer(answer: str) -> str:
    """GSM8K's answer field is the worked solution ending in '#### 42'; the number after '####' is the answer."""
    return answer.rpartition("####")[2] if "####" in answer else answer


def load_jsonl(path: Path, read: Extractor) -> list[Task]:
    """Tasks from a JSONL file: {"id", "question", "answer"} per line; "id" may be left out (GSM8K)."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        raise UserError(f"{path} does not exist; give --tasks arithmetic or a JSONL file of tasks.") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise UserError(f"cannot read {path} ({exc}); check the file.") from None
    tasks: list[Task] = []
    seen: set[str] = set()
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        where = f"{path} line {number}"
        try:
            item = json.loads(line)
        except ValueError:
            raise UserError(f"{where} is not JSON; write one task object per line.") from None
        if not isinstance(item, dict) or not isinstance(item.get("question"), str) or "answer" not in item:
            raise UserError(f'{where} needs "question" (text) and "answer"; write {{"id", "question", "answer"}}.')
        known = read.normalise(_gsm8k_answer(str(item["answer"])))
        if known is None:
            raise UserError(f"{where}: the answer {item['answer']!r} is not a {read.name}; fix it or choose --extract.")
        task_id = str(item.get("id", number))
        if task_id in seen:
            raise UserError(f"{where} repeats the id {task_id!r}; give every task its own id.")
        seen.add(task_id)
        tasks.append(Task(task_id, item["question"], known))
    if not tasks:
        raise UserError(f"{path} holds no tasks; write one JSON object per line.")
    return tasks
