"""Task sets for ``moot eval``: JSONL files as the benchmarks distribute them, and Du et al.'s arithmetic.

A task is a question with a known answer. Files are read as published: ``{"question", "answer"}`` per line
(GSM8K's ``answer`` is the worked solution ending in ``#### 42``), or multiple choice with a ``choices`` (or
``options``) list and an answer index or letter (MMLU's and MMLU-Pro's layout). The answer a model gives
is read from its reply by an extractor (a number, an option letter, or a regular expression) and
compared with the known answer after the same normalisation.
"""

from __future__ import annotations

import hashlib
import json
import random
import re
import string
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

from moot.errors import UserError


@dataclass(frozen=True)
class Task:
    id: str
    question: str  # as asked: a multiple-choice question with its options listed
    answer: str  # normalised by the extractor's own normalisation
    choices: int = 0  # the number of options of a multiple-choice question


@dataclass(frozen=True)
class Extractor:
    """How to read an answer out of a reply, and how the task asks for it."""

    name: str
    read: Callable[[str], str | None]
    normalise: Callable[[str], str | None]
    ask: str  # the last line of every prompt

    def correct(self, reply_answer: str | None, known: str) -> bool:
        return reply_answer is not None and reply_answer == known


# "Answer: …", "answer is …", "the final answer is …": the text after the last such phrase, to the line's end.
_ANSWER_LINE = re.compile(r"\banswer\b\s*(?:is\b)?\s*[:=]?\s*(?P<rest>[^\n]*)", re.IGNORECASE)
_BOXED = re.compile(r"\\boxed\s*\{")
_LATEX_FRACTION = re.compile(r"\\d?frac\s*\{\s*(-?\d+)\s*\}\s*\{\s*(\d+)\s*\}")
# A number: 1,234 or 1234 or 12.5, optionally signed, or a fraction 3/4. Thousands commas need three digits.
_NUMBER = re.compile(r"[-−]?\$?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:\s*/\s*\d+)?")


def _canonical(value: Fraction) -> str:
    """An integer as digits, a terminating decimal as a decimal, any other fraction as p/q: 3/4 and 0.75 match."""
    if value.denominator == 1:
        return str(value.numerator)
    rest = value.denominator
    for prime in (2, 5):
        while rest % prime == 0:
            rest //= prime
    if rest != 1:
        return f"{value.numerator}/{value.denominator}"
    text = f"{float(value):.12f}".rstrip("0").rstrip(".")
    return text


def _number_value(token: str) -> Fraction | None:
    cleaned = token.replace(",", "").replace("$", "").replace("−", "-").replace(" ", "")
    try:
        if "/" in cleaned:
            top, _, bottom = cleaned.partition("/")
            return Fraction(int(top), int(bottom)) if int(bottom) else None
        return Fraction(cleaned)
    except ValueError:
        return None


def normalise_number(text: str) -> str | None:
    """The last number in ``text`` in canonical form ('1,234' -> '1234', '$12.50' -> '12.5', '3/4' -> '0.75')."""
    text = _LATEX_FRACTION.sub(r"\1/\2", text)
    for token in reversed(_NUMBER.findall(text)):
        value = _number_value(token)
        if value is not None:
            return _canonical(value)
    return None


def _boxed(reply: str) -> str | None:
    """The content of the last ``\\boxed{…}`` (braces balanced), or None."""
    starts = [m.end() for m in _BOXED.finditer(reply)]
    if not starts:
        return None
    depth, start = 1, starts[-1]
    for index in range(start, len(reply)):
        if reply[index] == "{":
            depth += 1
        elif reply[index] == "}":
            depth -= 1
            if depth == 0:
                return reply[start:index]
    return None


def _last_answer_line(reply: str) -> str | None:
    found = list(_ANSWER_LINE.finditer(reply))
    return found[-1].group("rest") if found else None


def read_number(reply: str) -> str | None:
    """The last ``\\boxed{}``, else the last number of the last answer line, else the last number in the reply."""
    for part in (_boxed(reply), _last_answer_line(reply)):
        if part is not None and (number := normalise_number(part)) is not None:
            return number
    return normalise_number(reply)


# An option letter stands alone: "(B)", "[B]", "**B**", "B)", "B." or a bare "B" between non-letters. "I" and "A"
# followed by a lower-case word are the pronoun and the article ("I think", "A good answer"), not options.
_BRACKETED = re.compile(r"[(\[]([A-J])[)\]]|\*\*([A-J])\*\*|(?<![A-Za-z])([A-J])\)")
_STANDALONE = re.compile(r"(?<![A-Za-z'’])([A-J])(?![A-Za-z'’])")
# The pronoun and the article are followed by a lower-case word other than a verb that would make them the subject.
_WORD_AFTER = re.compile(r"\s+(?!(?:is|was|seems|looks|appears|because|since)\b)[a-z]")


def normalise_letter(text: str) -> str | None:
    """The first option letter that stands alone in ``text`` (bracketed ones first); None when there is none."""
    match = _BRACKETED.search(text)
    if match is not None:
        return next(group for group in match.groups() if group)
    for found in _STANDALONE.finditer(text):
        if found.group(1) in "AI" and _WORD_AFTER.match(text, found.end()):
            continue  # "I think", "A good answer": the pronoun and the article
        return found.group(1)
    return None


def known_letter(text: str) -> str | None:
    """A known answer as files write it: 'b', '(B)', 'B.' or a sentence naming the option."""
    bare = text.strip().strip("()[]. ").upper()
    return bare if len(bare) == 1 and bare in "ABCDEFGHIJ" else normalise_letter(text)


def read_letter(reply: str) -> str | None:
    """The option after the last answer line (or in the last ``\\boxed{}``), else the last bracketed option."""
    for part in (_boxed(reply), _last_answer_line(reply)):
        if part is not None and (letter := normalise_letter(part)) is not None:
            return letter
    found = [next(g for g in m.groups() if g) for m in _BRACKETED.finditer(reply)]
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
LETTER = Extractor("letter", read_letter, known_letter, "End your reply with a line 'Answer: <letter>'.")
AUTO = "auto"  # letter for multiple-choice tasks, number for the others


def extractor(name: str, tasks: Sequence[Task] = ()) -> Extractor:
    if name == AUTO:
        return LETTER if tasks and all(t.choices for t in tasks) else NUMBER
    if name == "number":
        return NUMBER
    if name == "letter":
        return LETTER
    if name.startswith("regex:"):
        return regex_extractor(name.removeprefix("regex:"))
    raise UserError(f"--extract {name!r} is unknown; use auto, number, letter or regex:PATTERN.")


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
DEFAULT_LIMIT = 100  # generated tasks when neither --limit nor --sample is given


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


def sample(tasks: Sequence[Task], count: int | None, shuffle_seed: int | None) -> list[Task]:
    """The first ``count`` tasks of the list shuffled with ``shuffle_seed`` (unshuffled without one).

    A larger ``count`` with the same seed keeps the tasks a smaller one chose, so a sample can grow.
    """
    chosen = list(tasks)
    if shuffle_seed is not None:
        random.Random(shuffle_seed).shuffle(chosen)
    return chosen[:count] if count else chosen


# --- files ----------------------------------------------------------------------------------------


def _gsm8k_answer(answer: str) -> str:
    """GSM8K's answer field is the worked solution ending in '#### 42'; the number after '####' is the answer."""
    return answer.rpartition("####")[2] if "####" in answer else answer


def _choice_task(item: dict[str, object], where: str) -> tuple[str, str, int]:
    """(the question with its options as 'A. …' lines, the right letter, the number of options)."""
    options = item.get("choices", item.get("options"))
    if not isinstance(options, list) or not 2 <= len(options) <= 10 or not all(isinstance(o, str) for o in options):
        raise UserError(f"{where}: choices must be a list of 2 to 10 texts; fix the line.")
    letters = string.ascii_uppercase[: len(options)]
    known = item["answer"]
    if isinstance(known, bool) or not isinstance(known, int | str):
        known = None
    elif isinstance(known, int) or known.strip().isdigit():
        index = int(known)
        known = letters[index] if 0 <= index < len(options) else None
    else:
        known = known.strip().upper() if known.strip().upper() in letters else None
    if known is None:
        raise UserError(f"{where}: the answer {item['answer']!r} is neither an option's index nor its letter; fix it.")
    listed = "\n".join(f"{letter}. {option}" for letter, option in zip(letters, options, strict=True))
    return f"{item['question']}\n\n{listed}", known, len(options)


def read_jsonl(path: Path) -> tuple[list[dict[str, object]], str]:
    """The objects of a JSONL file, each with its line number as ``_line``, and the file's SHA-256."""
    try:
        data = path.read_bytes()
        lines = data.decode("utf-8").splitlines()
    except FileNotFoundError:
        raise UserError(f"{path} does not exist; give --tasks arithmetic or a JSONL file of tasks.") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise UserError(f"cannot read {path} ({exc}); check the file.") from None
    items: list[dict[str, object]] = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
        except ValueError:
            raise UserError(f"{path} line {number} is not JSON; write one task object per line.") from None
        if not isinstance(item, dict) or not isinstance(item.get("question"), str) or "answer" not in item:
            raise UserError(
                f'{path} line {number} needs "question" (text) and "answer"; write {{"id", "question", "answer"}}.'
            )
        items.append({**item, "_line": number})
    if not items:
        raise UserError(f"{path} holds no tasks; write one JSON object per line.")
    return items, hashlib.sha256(data).hexdigest()


def load_jsonl(path: Path, extract: str) -> tuple[list[Task], Extractor, str]:
    """The tasks of a JSONL file, the extractor that reads their answers, and the file's SHA-256."""
    items, digest = read_jsonl(path)
    multiple_choice = any("choices" in item or "options" in item for item in items)
    read = extractor(extract if extract != AUTO else ("letter" if multiple_choice else "number"))
    tasks: list[Task] = []
    seen: set[str] = set()
    for item in items:
        where = f"{path} line {item['_line']}"
        if multiple_choice:
            question, raw, choices = _choice_task(item, where)
        else:
            question, raw, choices = str(item["question"]), _gsm8k_answer(str(item["answer"])), 0
        known = read.normalise(raw)
        if known is None:
            raise UserError(f"{where}: the answer {item['answer']!r} is not a {read.name}; fix it or choose --extract.")
        task_id = str(item.get("id", item["_line"]))
        if task_id in seen:
            raise UserError(f"{where} repeats the id {task_id!r}; give every task its own id.")
        seen.add(task_id)
        tasks.append(Task(task_id, question, known, choices))
    return tasks, read, digest
