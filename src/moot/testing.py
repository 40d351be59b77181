"""The conformance kit: what a protocol package runs in its own tests to show it keeps moot's contract.

A protocol author describes one or more :class:`Scenario` (a ``moot run --batch`` line, the files it reads, and
scripted replies) and calls :func:`assert_conforms` from a test::

    from moot.testing import Scenario, assert_conforms

    def test_pingpong_conforms(tmp_path):
        rally = Scenario(
            name="rally",
            spec={"protocol": "pingpong", "topic": "Warm up"},
            replies={"ping": ['{"word": "ping"}', '{"word": "ping"}'], "pong": ['{"word": "pong"}'] * 2},
            outcome="RALLY",
            turns=4,
        )
        assert_conforms(rally, tmp_path)

Each scenario is run in-process through moot's own engine (no model, no subprocess), and then:

- **the run**: it ends in the scenario's outcome (and turn count), and ``moot check`` finds the record valid;
- **resume**: a run stopped after each of its first calls (a reply that never comes, which moot halts at the turn
  timeout without an outcome) and resumed with the same participants ends in the same outcome, turns and turn
  text as the uninterrupted run;
- **tamper evidence**: a letter changed inside the last turn is an error located at a line (at a file, in a
  record that is a folder of files), and a record cut
  inside its last turn is not valid as it stands (``moot resume`` may call it repairable);
- **rule ids**: every id ``moot check`` reports is one the protocol (or moot, for every record) declares;
- **reading hooks**: the protocol's documents, decision, positions, answer, rounds and panel read the record
  and the damaged copies without raising;
- **refusals**: every rule id its agent tools' module gives a refusal (``rule=`` of ``Refused``, ``BadInput``,
  ``Unavailable`` or ``ToolError``) is one ``moot rules`` lists for it, so that a misspelt id is found here
  rather than by the agent it refuses (:func:`refusal_rule_ids`).

A replies function ``(request) -> text`` answers any role; a queue per role replays texts in order. A function
must answer from the request alone (not from a call count) for the resume checks to hold.
"""

from __future__ import annotations

import ast
import asyncio
import importlib.util
import re
import shutil
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from moot import registry
from moot.agents import Agent, AgentRequest, FunctionAgent
from moot.core.files import CheckReport
from moot.detect import check_path
from moot.engine.driver import Driver
from moot.engine.loop import Engine, Limits, RunResult
from moot.engine.specs import build_driver, rooted_paths
from moot.errors import AgentError

__all__ = ["Played", "Scenario", "assert_conforms", "conformance", "play", "refusal_rule_ids", "resume"]

STARTED = "2026-01-01 09:00"  # every scenario's start time, so two plays of one scenario write the same text
_CHAIN_MARK = "<!-- moot-chain"
_RESUME_POINTS = 2  # stop after the first call and after the second: the first turn, and one that follows another
_NEVER = 3600.0  # seconds: a reply that never comes before the turn timeout
_STOP_TIMEOUT_S = 0.5  # the turn timeout of a run stopped on purpose
_FIX = "name the scenario's files relative to its work root"
Replies = Callable[[AgentRequest], str] | Mapping[str, Sequence[str]]


@dataclass(frozen=True)
class Scenario:
    """One scripted run of a protocol.

    - ``spec``: the run's options as a ``moot run --batch`` line, ``protocol`` included.
    - ``replies``: a function answering any request, or the reply texts of each role in order.
    - ``outcome``: the outcome's name the run must end in; ``turns``: the turn count ``moot check`` must give
      (None: not checked).
    - ``files``: files the run reads (a source, an agenda), written into the work root first; a path in ``spec``
      is relative to the work root.
    """

    name: str
    spec: Mapping[str, Any]
    replies: Replies
    outcome: str
    turns: int | None = None
    files: Mapping[str, str] = field(default_factory=dict)

    @property
    def protocol(self) -> str:
        return str(self.spec["protocol"])


@dataclass(frozen=True)
class Played:
    result: RunResult
    record: Path  # what ``moot check`` reads: the record file, or its folder for a folder record
    root: Path
    participant: _Participant


class _Participant:
    """Answers every role from the scenario's replies. With ``stop`` set, every call after the first ``stop``
    outlasts the turn timeout, which is how moot leaves a run it can resume (a halt without an outcome)."""

    def __init__(self, replies: Replies) -> None:
        self.replies = replies
        self.queues = {} if callable(replies) else {role: list(texts) for role, texts in replies.items()}
        self.calls = 0
        self.stop: int | None = None

    async def __call__(self, request: AgentRequest) -> str:
        self.calls += 1
        if self.stop is not None and self.calls > self.stop:
            await asyncio.sleep(_NEVER)
        if callable(self.replies):
            return self.replies(request)
        queue = self.queues.get(request.role)
        if not queue:
            raise AgentError(f"the scenario has no reply left for {request.role}")
        return queue.pop(0)


def _prepare(scenario: Scenario, root: Path) -> Driver:
    root.mkdir(parents=True, exist_ok=True)
    for name, text in scenario.files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf-8")
    return build_driver(rooted_paths(scenario.spec, root, _FIX), root, STARTED)


def play(scenario: Scenario, root: Path, *, stop_after: int | None = None) -> Played:
    """Run ``scenario`` in ``root`` in-process. ``stop_after``: the participants answer only that many calls, and
    moot halts the run at the next one's turn timeout, resumably; :func:`resume` then goes on."""
    driver = _prepare(scenario, root)
    participant = _Participant(scenario.replies)
    participant.stop = stop_after
    limits = Limits(repairs=0, turn_timeout_s=_STOP_TIMEOUT_S if stop_after is not None else Limits.turn_timeout_s)
    result = _run(driver, FunctionAgent(participant), limits)
    return Played(result, driver.record_path, root, participant)


def _run(driver: Driver, agent: Agent, limits: Limits) -> RunResult:
    """``driver`` run to its end by ``agent`` in every role, every turn stamped ``STARTED`` so that two plays of
    one scenario write the same text."""
    engine = Engine(driver, dict.fromkeys(driver.roles(), agent), limits, clock=lambda: STARTED)
    return asyncio.run(engine.run())


def resume(scenario: Scenario, played: Played) -> RunResult:
    """Resume a run :func:`play` stopped, with the same participants (a queue goes on where it stopped)."""
    driver = registry.get(scenario.protocol).driver.load().resume(played.record)
    played.participant.stop = None
    return _run(driver, FunctionAgent(played.participant), Limits(repairs=0))


def _known_rules(protocol: str) -> set[str]:
    from moot.cli.rules import rule_books

    return {rule.id for _, book in rule_books(protocol) for rule in book}


def _turn_file(record: Path) -> Path | None:
    """The file of a record that holds its (last) turns and the chain's mark: the record itself, or the last
    chain-marked file in its folder; None when no file carries a mark."""
    if record.is_file():
        return record if _CHAIN_MARK in record.read_text(encoding="utf-8") else None
    marked = [p for p in sorted(record.rglob("*.md")) if _CHAIN_MARK in p.read_text(encoding="utf-8")]
    return marked[-1] if marked else None


def _last_turn_span(text: str) -> tuple[int, int]:
    """Where the last turn's text lies: after the chain mark that ends the turn before it, up to its own mark."""
    end = text.rfind(_CHAIN_MARK)
    end = end if end != -1 else len(text)
    start = text.rfind(_CHAIN_MARK, 0, end)
    return (text.index("\n", start) + 1 if start != -1 else 0), end


def _tampered(text: str) -> str | None:
    """``text`` with one letter of its last turn changed, or None when the last turn holds no letter to change."""
    start, end = _last_turn_span(text)
    body = text[start:end]
    # A letter inside a word of three or more letters: a change there alters what was said, not the layout.
    found = re.search(r"(?<=[a-z])[a-z](?=[a-z])", body)
    if found is None:
        return None
    at = start + found.start()
    return text[:at] + ("x" if text[at] != "x" else "y") + text[at + 1 :]


def _copy(record: Path, to: Path) -> Path:
    if record.is_dir():
        shutil.copytree(record, to)
    else:
        to.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(record, to)
        for sidecar in record.parent.glob(f".{record.stem}*"):  # the chain and run sidecars beside a file record
            shutil.copy2(sidecar, to.parent / sidecar.name.replace(record.stem, to.stem, 1))
    return to


def _read_all(protocol: str, record: Path, what: str) -> list[str]:
    """Problems from calling every reading hook of ``protocol`` on ``record``: a hook must never raise."""
    plugin = registry.get(protocol)
    hooks: list[tuple[str, Callable[[Path], Any]]] = []
    if plugin.record.load().documents is not None:
        hooks.append(("documents", plugin.record.load().documents))  # type: ignore[arg-type]
    if plugin.analysis is not None:
        analysis = plugin.analysis.load()
        for name in ("positions", "answer", "rounds", "decision", "panel"):
            hook = getattr(analysis, name)
            if hook is not None:
                hooks.append((name, hook))
    problems = []
    for name, hook in hooks:
        try:
            hook(record)
        except Exception as exc:  # the kit reports what a hook raised, whatever it was
            problems.append(f"the {name} hook raised {exc!r} on {what}")
    return problems


_REFUSALS = frozenset({"ToolError", "Refused", "BadInput", "Unavailable"})
_RULE_ID = re.compile(r"[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+")


def refusal_rule_ids(source: str) -> list[tuple[str, int]]:
    """(rule id, line) of each rule id that Python ``source`` gives a refusal: the ``rule=`` of a call of one of
    the refusals, a string assigned to a name ``rule``, or a tuple that holds a refusal (a translation table's
    row)."""
    found: list[tuple[str, int]] = []
    for node in ast.walk(ast.parse(source)):
        given: list[ast.AST] = []
        if isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", None)) in _REFUSALS:
            given = [keyword.value for keyword in node.keywords if keyword.arg == "rule"]
        elif isinstance(node, ast.Assign) and any(getattr(target, "id", None) == "rule" for target in node.targets):
            given = [node.value]
        elif isinstance(node, ast.Tuple) and any(getattr(e, "id", None) in _REFUSALS for e in node.elts):
            given = [node]
        for value in given:
            for constant in ast.walk(value):
                text = constant.value if isinstance(constant, ast.Constant) else None
                if isinstance(text, str) and _RULE_ID.fullmatch(text):
                    found.append((text, getattr(node, "lineno", 0)))
    return found


def _refusal_problems(protocol: str, known: set[str]) -> list[str]:
    """The rule ids the protocol's agent tools give refusals that no rule book of it declares."""
    tools = registry.get(protocol).tools
    spec = importlib.util.find_spec(tools.module) if tools is not None else None
    if spec is None or spec.origin is None or not spec.origin.endswith(".py"):
        return []
    origin = Path(spec.origin)
    unknown = [(rule, line) for rule, line in refusal_rule_ids(origin.read_text(encoding="utf-8")) if rule not in known]
    return [
        f"the agent tools ({origin.name}:{line}) refuse with rule id {rule}, which no rule book declares; declare "
        "it in the protocol's rules or correct the id"
        for rule, line in unknown
    ]


def _report_problems(report: CheckReport, known: set[str], what: str) -> list[str]:
    unknown = sorted({v.rule for v in report.violations} - known)
    return [f"moot check reported rule id(s) {', '.join(unknown)} on {what}, which no rule book declares"] * bool(
        unknown
    )


def _run_problems(scenario: Scenario, played: Played) -> list[str]:
    problems: list[str] = []
    outcome = played.result.outcome
    if outcome is None or outcome.name != scenario.outcome:
        got = outcome.name if outcome is not None else f"no outcome (halted: {played.result.halted})"
        problems.append(f"the run ended in {got}, not {scenario.outcome}")
    report = check_path(played.record)
    if report.errors:
        problems.append(f"moot check finds the record invalid: {[v.rule for v in report.errors]}")
    summary = report.summary
    if summary is None:
        problems.append("moot check gives no summary of the record")
    elif scenario.turns is not None and summary.turns != scenario.turns:
        problems.append(f"moot check counts {summary.turns} turns, not {scenario.turns}")
    return problems


def _resume_problems(scenario: Scenario, played: Played, root: Path) -> list[str]:
    problems: list[str] = []
    total = check_path(played.record).summary
    turns = total.turns if total is not None else 0
    finished = _turn_file(played.record)
    for stop in range(1, min(turns, _RESUME_POINTS + 1)):
        # The same participants go on after the stop: a queue of replies continues where it stopped.
        halted = play(scenario, root / f"resume-{stop}", stop_after=stop)
        stopped = check_path(halted.record).summary
        if not halted.result.resumable or stopped is None or stopped.outcome is not None:
            problems.append(f"a run stopped after {stop} turn(s) cannot be resumed")
            continue
        resumed = resume(scenario, halted)
        if resumed.outcome is None or resumed.outcome.name != scenario.outcome:
            got = resumed.outcome.name if resumed.outcome is not None else "no outcome"
            problems.append(f"stopped after {stop} turn(s) and resumed, the run ended in {got}")
        again = check_path(halted.record)
        if again.errors or (again.summary is not None and again.summary.turns != turns):
            problems.append(f"stopped after {stop} turn(s) and resumed, the record is not the uninterrupted one")
        mine = _turn_file(halted.record)
        heading = registry.get(scenario.protocol).record.load().turn_heading
        if finished and mine and _turns(mine, halted.root, heading) != _turns(finished, played.root, heading):
            problems.append(f"stopped after {stop} turn(s) and resumed, the record's turns differ")
    return problems


def _turns(path: Path, root: Path, heading: str | None) -> str:
    """A record's turns: its text from the first turn heading on (a header may hold ids drawn per record), with the
    work root written ROOT and without the chain marks (digests over all of it)."""
    lines = path.read_text(encoding="utf-8").replace(str(root), "ROOT").splitlines()
    if heading is not None:
        first = next((n for n, line in enumerate(lines) if line.startswith(heading)), 0)
        lines = lines[first:]
    return "\n".join(line for line in lines if not line.startswith(_CHAIN_MARK))


def _damage_problems(protocol: str, played: Played, root: Path, known: set[str]) -> list[str]:
    problems: list[str] = []
    turn_file = _turn_file(played.record)
    if turn_file is None:
        return [
            "the record carries no chain mark, so an edited turn cannot be told from a written one "
            "(the digest chain in moot.plugin: docs/plugins.md)"
        ]
    text = turn_file.read_text(encoding="utf-8")
    relative = turn_file.relative_to(played.record) if played.record.is_dir() else None

    edited_copy = _copy(played.record, root / "tampered" / played.record.name)
    edited_file = edited_copy / relative if relative is not None else edited_copy
    changed = _tampered(text)
    if changed is None:
        problems.append("the last turn holds no word to change, so the kit could not tamper with it")
    else:
        edited_file.write_text(changed, encoding="utf-8")
        report = check_path(edited_copy)
        if not report.errors:
            problems.append("moot check finds a record valid after a letter of its last turn was changed")
        elif not any(v.line is not None or (played.record.is_dir() and v.file) for v in report.errors):
            problems.append("moot check names no line (no file, in a folder record) for a changed letter")
        problems += _report_problems(report, known, "an edited record")
        problems += _read_all(protocol, edited_copy, "an edited record")

    cut_copy = _copy(played.record, root / "cut" / played.record.name)
    cut_file = cut_copy / relative if relative is not None else cut_copy
    start, end = _last_turn_span(text)
    cut_file.write_text(text[: (start + end) // 2], encoding="utf-8")
    report = check_path(cut_copy)
    if not report.errors and not report.repairable:
        problems.append("moot check finds a record valid after its last turn was cut in half")
    problems += _report_problems(report, known, "a cut record")
    problems += _read_all(protocol, cut_copy, "a cut record")
    return problems


def conformance(scenario: Scenario, root: Path) -> list[str]:
    """Every way ``scenario``'s protocol breaks moot's contract, as sentences; empty when it conforms.
    ``root`` is an empty folder the kit may fill."""
    protocol = scenario.protocol
    known = _known_rules(protocol)
    played = play(scenario, root / "run")
    problems = _run_problems(scenario, played)
    if problems:
        return problems  # the checks below start from a run that ended as the scenario says
    problems += _refusal_problems(protocol, known)
    problems += _report_problems(check_path(played.record), known, "the record")
    problems += _read_all(protocol, played.record, "the record")
    problems += _resume_problems(scenario, played, root)
    problems += _damage_problems(protocol, played, root, known)
    return problems


def assert_conforms(scenario: Scenario, root: Path) -> None:
    """Fail (AssertionError) with every problem :func:`conformance` finds."""
    problems = conformance(scenario, root)
    assert not problems, f"{scenario.name}: " + "; ".join(problems)
