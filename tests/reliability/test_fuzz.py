"""fuzz: every parser and every CLI command that reads a file or JSON gets generated inputs.

Only clean errors are allowed: the artifact parsers return located violations, the other parsers raise
moot's documented errors (UserError, ConfigError, AgentError), the CLI exits 0, 1 or 2 without a
traceback, and an MCP tool answers a tool error. Quick (CI) runs a derandomized ~100-200 examples per
target; the long run 10,000 each (see reliability_helpers).
"""

from __future__ import annotations

import contextlib
import json
import shutil
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from anyio.from_thread import start_blocking_portal
from fuzz_helpers import (
    JSON_VALUES,
    TESTS,
    Tally,
    assert_clean_exit,
    documents,
    example_bytes,
    run_cli,
    texts,
)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcp.client import Client
from mcp_types import CallToolResult, TextContent
from protocol_agent import legal_reply
from reliability_helpers import LONG, record_result, scale
from tools_helpers import _PRIVATE_ENV as PRIVATE_ENV
from tools_helpers import ALICE, BOB, TOPIC, Result, example_turns, write_source

from forked_moot import MOOT
from moot.agents.script import ScriptAgent, parse_script
from moot.config import load_settings
from moot.core.chain import chain_path, read_chain
from moot.core.files import CheckReport, decode_text
from moot.detect import check_path
from moot.engine.sealed import open_phase
from moot.engine.specs import build_driver
from moot.errors import AgentError, ConfigError
from moot.ledger import EVENT_TYPES
from moot.mcp.server import build_server
from moot.protocols.agora import record as agora
from moot.protocols.council import record as council
from moot.protocols.critique import record as critique
from moot.protocols.duel import record as duel
from moot.protocols.roundtable import record as roundtable

LONG_EXAMPLES = 10_000
TALLY = Tally()


def fuzz(quick: int, long: int = LONG_EXAMPLES) -> settings:
    return settings(
        max_examples=scale(quick, long),
        deadline=None,
        derandomize=not LONG,
        database=None,
        suppress_health_check=list(HealthCheck),
    )


@pytest.fixture(scope="module", autouse=True)
def _record_figures() -> Iterator[None]:
    yield
    record_result("fuzz", {"examples_per_target": LONG_EXAMPLES, "targets": TALLY.figures()})


def assert_sound(report: CheckReport) -> None:
    """A report `moot check` can print: a verdict, and a rule id on every violation."""
    assert report.summary is not None or report.errors, report  # unreadable says why
    assert all(v.rule for v in report.violations)
    json.loads(report.model_dump_json())


def fresh(directory: Path) -> Path:
    shutil.rmtree(directory, ignore_errors=True)
    directory.mkdir(parents=True)
    return directory


# --- the artifact parsers ----------------------------------------------------------------------


def council_parse(text: str) -> tuple[Any, list[Any]]:
    parsed = council.parse(text)
    return (parsed if parsed.config is not None else None), parsed.violations


FILE_FORMATS: dict[str, tuple[Callable[[str], tuple[Any, list[Any]]], str]] = {
    "critique": (critique.parse, "critique/examples/**/*.md"),
    "council": (council_parse, "council/examples/**/*.md"),
    "duel": (duel.parse, "duel/examples/**/*.md"),
    "agora": (agora.parse, "agora/examples/**/*.md"),
}


@pytest.mark.parametrize("protocol", list(FILE_FORMATS))
def test_record_files_give_violations_never_exceptions(protocol: str, tmp_path: Path) -> None:
    parse, pattern = FILE_FORMATS[protocol]
    record = tmp_path / "record.md"

    @fuzz(200)
    @given(data=documents(example_bytes(pattern)))
    def check(data: bytes) -> None:
        with TALLY.example(f"{protocol}_record"):
            record.write_bytes(data)
            assert_sound(check_path(record))
            text, _ = decode_text(data, record.name)
            if text is not None:
                parsed, violations = parse(text)
                assert parsed is not None or any(v.is_error for v in violations)

    check()


def test_agora_replies_give_violations_never_exceptions() -> None:
    replies = [line for seed in example_bytes("agora/examples/valid/*.md") for line in seed.splitlines()]
    seeds = [line for line in replies if line.startswith(b"{")]

    @fuzz(200)
    @given(text=texts(seeds, surrogates=True))
    def check(text: str) -> None:
        with TALLY.example("agora_reply"):
            parsed = agora.parse_reply(text)
            assert not isinstance(parsed, list) or (parsed and all(v.is_error for v in parsed))

    check()


# A started debate of each protocol (the args of build_driver); replies are read against its first turn.
DEBATE_SPECS: dict[str, dict[str, Any]] = {
    "critique": {"protocol": "critique", "topic": "Adopt a monorepo", "max_rounds": 2},
    "duel": {"protocol": "duel", "source": "design.md", "max_turns": 4},
    "agora": {"protocol": "agora", "topic": "Tabs or spaces", "max_turns": 6},
    "roundtable": {"protocol": "roundtable", "speakers": ["architect", "reviewer"], "topic": "Cache", "max_rounds": 1},
    "council": {"protocol": "council", "question": "Tabs or spaces?", "members": [["ada", "local"], ["bo", "local"]]},
}


@pytest.mark.parametrize("protocol", list(DEBATE_SPECS))
def test_agent_replies_give_violations_never_exceptions(protocol: str, tmp_path: Path) -> None:
    """What a model answers is the least trusted input of all: the engine reads it as a turn or says why not."""
    root = fresh(tmp_path / "debate")
    write_source(root).rename(root / "design.md")
    spec = {**DEBATE_SPECS[protocol], **({"source": str(root / "design.md")} if protocol == "duel" else {})}
    driver = build_driver(spec, root, "2026-11-22 09:00")
    phase = open_phase(driver)  # the council opens with a sealed phase
    role = phase.roles[0] if phase is not None else driver.next_speaker()
    assert role is not None
    request = driver.request_for(role)
    assert request.json_schema is not None
    legal = legal_reply(protocol, role, request.json_schema, f"{request.system}\n{request.prompt}")

    @fuzz(200)
    @given(text=texts([legal.encode()], surrogates=True))
    def check(text: str) -> None:
        with TALLY.example(f"{protocol}_agent_reply"):
            candidate = driver.read_reply(role, text, "2026-11-22 09:01")
            assert candidate.turn is not None or candidate.errors

    check()


MEETINGS = sorted(path for path in (TESTS / "roundtable" / "examples").glob("*/*") if path.is_dir())
MEETING_FILES = example_bytes("roundtable/examples/**/*.md", "roundtable/examples/**/*.json")
FILE_NAMES = st.sampled_from(
    [
        "turn.json",
        "MINUTES.md",
        "AGENDA.md",
        "007_architect.md",
        "001_reviewer.md",
        "000_x.md",
        "1_architect.md",
        "001_.md",
        "001_moderator.md",
        "999_架构师.md",
        ".moot.chain",
        "notes.txt",
        "002_reviewer.md.tmp",
    ]
) | st.text(min_size=1, max_size=40).filter(
    lambda name: "/" not in name and "\x00" not in name and name not in (".", "..") and len(name.encode()) < 200
)


@st.composite
def meetings(draw: st.DrawFn) -> dict[str, bytes]:
    """A valid example meeting with up to three files changed, removed, renamed or added."""
    source = draw(st.sampled_from(MEETINGS))
    files = {path.name: path.read_bytes() for path in source.iterdir() if path.is_file()}
    for _ in range(draw(st.integers(0, 3))):
        name = draw(st.sampled_from(sorted(files))) if files else None
        action = draw(st.sampled_from(["change", "change", "remove", "rename", "add"]))
        if name is not None and action == "change":
            files[name] = draw(documents([files[name], *MEETING_FILES]))
        elif name is not None and action == "remove":
            del files[name]
        elif name is not None and action == "rename":
            files[draw(FILE_NAMES)] = files.pop(name)
        else:
            files[draw(FILE_NAMES)] = draw(documents(MEETING_FILES))
    return files


def write_meeting(directory: Path, files: dict[str, bytes]) -> Path:
    fresh(directory)
    for name, data in files.items():
        (directory / name).write_bytes(data)
    return directory


def test_roundtable_meetings_give_violations_never_exceptions(tmp_path: Path) -> None:
    @fuzz(200)
    @given(files=meetings())
    def check(files: dict[str, bytes]) -> None:
        with TALLY.example("roundtable_meeting"):
            meeting = write_meeting(tmp_path / "meeting", files)
            assert_sound(check_path(meeting))
            for name, data in files.items():
                assert_sound(check_path(meeting / name))  # a file inside names its meeting
                roundtable.parse_speech_name(name)
                text = data.decode("utf-8", "replace")
                if name == "turn.json":
                    state, violations = roundtable.parse_turn_json(text)
                    assert state is not None or violations
                if name == "MINUTES.md":
                    roundtable.parse_minutes(text)

    check()


CHAINED = sorted(path for path in TESTS.glob("*/examples/**/.*.chain"))


def test_chain_sidecars_give_warnings_never_exceptions(tmp_path: Path) -> None:
    assert CHAINED, "the examples hold digest chains to start from"

    @fuzz(200)
    @given(sidecar=st.sampled_from(CHAINED), data=documents([path.read_bytes() for path in CHAINED]))
    def check(sidecar: Path, data: bytes) -> None:
        with TALLY.example("chain_sidecar"):
            record = fresh(tmp_path / "chained") / sidecar.name.removeprefix(".").removesuffix(".chain")
            shutil.copyfile(sidecar.with_name(record.name), record)
            chain_path(record).write_bytes(data)
            rows, problems = read_chain(record)
            assert rows is not None or problems
            assert_sound(check_path(record))

    check()


# --- the other parsers -------------------------------------------------------------------------

SCRIPTS = [
    b'["I propose a token bucket.", {"reply": "Agreed.", "role": "critic"}]\n',
    b'{"reply": {"message": "m", "status": "AWAITING", "summary": ""}, "role": "proposer"}\n"plain"\n\n{"a": 1}\n',
    b'{"signal": "propose", "message": "x", "confidence": 0.5, "target": null, "evidence": []}\n',
]


def test_script_files_raise_agent_errors_only(tmp_path: Path) -> None:
    script = tmp_path / "replies.jsonl"

    @fuzz(200)
    @given(data=documents(SCRIPTS))
    def check(data: bytes) -> None:
        with TALLY.example("script_file"):
            script.write_bytes(data)
            for read in (lambda: parse_script(data.decode("utf-8", "replace")), lambda: ScriptAgent.from_file(script)):
                with contextlib.suppress(AgentError):
                    read()

    check()


SETTINGS = [
    b'agents = "script:replies.jsonl"\nrepairs = 2\nturn_timeout_s = 300\nmax_tokens = 5000\nmax_wall_s = 60.5\n'
    b'[agent]\ncritic = "script:critic.jsonl"\n',
    b'[project]\nname = "x"\n[tool.moot]\nagents = "script:a.jsonl"\nrepairs = 0\n[tool.moot.agent]\nb = "c"\n',
]


def test_settings_files_raise_config_errors_only(tmp_path: Path) -> None:
    @fuzz(200)
    @given(name=st.sampled_from(["moot.toml", "pyproject.toml"]), data=documents(SETTINGS))
    def check(name: str, data: bytes) -> None:
        with TALLY.example("settings_file"):
            root = fresh(tmp_path / "project")
            (root / name).write_bytes(data)
            with contextlib.suppress(ConfigError):
                load_settings(root)

    check()


# --- the CLI: commands that read a record, a file or JSON ----------------------------------------

RECORDS = example_bytes("critique/examples/**/*.md", "duel/examples/**/*.md", "agora/examples/**/*.md")
MARKDOWN = example_bytes("*/examples/**/*.md")
# Command-line text: any Unicode but NUL (an argument cannot hold one). Arguments with bytes that are not
# UTF-8 crash some commands; test_undecodable_arguments_are_refused_cleanly holds those cases.
ARGS = st.text(max_size=40).filter(lambda text: "\x00" not in text)


@pytest.fixture(scope="module", autouse=True)
def _own_environment() -> Iterator[None]:
    """No MOOT_ROOT, ledger URL or lease token of the caller's reaches the commands run here."""
    with pytest.MonkeyPatch.context() as patch:
        for name in PRIVATE_ENV:
            patch.delenv(name, raising=False)
        yield


@pytest.fixture(scope="module")
def empty_script(tmp_path_factory: pytest.TempPathFactory) -> str:
    """An agent with no replies: a debate it joins ends on its first turn, so the run stays fast."""
    path = tmp_path_factory.mktemp("agents") / "empty.jsonl"
    path.write_text("", encoding="utf-8")
    return f"script:{path}"


def record_target(directory: Path, target: tuple[str, Any]) -> Path:
    """Write a generated record (a file's bytes, or a meeting's files) under ``directory``; its path."""
    kind, content = target
    if kind == "meeting":
        return write_meeting(fresh(directory) / ".roundtable" / "meeting", content)
    record = fresh(directory) / "record.md"
    record.write_bytes(content)
    return record


RECORD_TARGETS = st.tuples(st.just("file"), documents(RECORDS)) | st.tuples(st.just("meeting"), meetings())


def test_check_and_show_exit_cleanly(tmp_path: Path) -> None:
    @fuzz(100)
    @given(
        command=st.sampled_from([["check"], ["check", "--json"], ["show"], ["show", "--plain"]]), target=RECORD_TARGETS
    )
    def check(command: list[str], target: tuple[str, Any]) -> None:
        with TALLY.example("cli_check_show"):
            assert_clean_exit(run_cli(*command, str(record_target(tmp_path / "work", target))))

    check()


def test_resume_exits_cleanly(tmp_path: Path, empty_script: str) -> None:
    @fuzz(100)
    @given(target=RECORD_TARGETS)
    def check(target: tuple[str, Any]) -> None:
        with TALLY.example("cli_resume"):
            record = record_target(tmp_path / "work", target)
            assert_clean_exit(run_cli("resume", str(record), "--agents", empty_script, "--json"))

    check()


# Each protocol's `moot run` with the file it reads ({file}) and a topic.
RUN_COMMANDS = [
    ["critique", "--topic", "{topic}", "--context", "{file}"],
    ["duel", "{file}", "--max-turns", "2"],
    ["agora", "--topic", "{topic}", "--research", "1", "--source", "{file}"],
    ["roundtable", "--agenda", "{file}", "--speakers", "a,b", "--max-rounds", "1"],
    ["roundtable", "--topic", "{topic}", "--name", "{topic}", "--speakers", "{topic}"],
]


def test_run_reads_its_input_files_cleanly(tmp_path: Path, empty_script: str) -> None:
    @fuzz(100)
    @given(command=st.sampled_from(RUN_COMMANDS), data=documents(MARKDOWN), topic=ARGS)
    def check(command: list[str], data: bytes, topic: str) -> None:
        with TALLY.example("cli_run_inputs"):
            root = fresh(tmp_path / "work")
            given_file = root / "input.md"
            given_file.write_bytes(data)
            args = [arg.format(file=given_file, topic=topic) if "{" in arg else arg for arg in command]
            assert_clean_exit(run_cli("run", *args, "--agents", empty_script, "--json", "--root", str(root)))

    check()


BACKENDS = {"local", "openai", "ollama", "anthropic", "cmd", "human"}  # all but script: no model, no command


def _safe_spec(value: Any, fallback: str) -> Any:
    """A generated agent spec that cannot load a model, run a command or read a terminal."""
    if value is None or (isinstance(value, str) and value.strip().partition(":")[0].strip() in BACKENDS):
        return fallback
    return value


def _safe_line(line: bytes, fallback: str) -> bytes:
    """A batch line whose debate, if it starts, runs on scripts under the current directory."""
    try:
        spec = json.loads(line)
    except (ValueError, RecursionError):
        return line  # not a debate: only the batch reader sees it
    if not isinstance(spec, dict):
        return line
    spec["agents"] = _safe_spec(spec.get("agents"), fallback)
    if isinstance(spec.get("agent"), dict):
        spec["agent"] = {role: _safe_spec(value, fallback) for role, value in spec["agent"].items()}
    if isinstance(spec.get("root"), str):
        spec["root"] = "runs"  # relative to the test's directory, never an absolute path
    return json.dumps(spec).encode()


OPTION_KEYS = ["topic", "roles", "template", "max_rounds", "context", "source", "max_turns", "positions"]
OPTION_KEYS += ["methodology", "research", "speakers", "agenda", "name", "language", "repairs", "agent", "root"]
BATCH_LINES = [
    b'{"protocol": "critique", "topic": "Adopt a monorepo", "template": "planning", "max_rounds": 2}',
    b'{"protocol": "duel", "source": "design.md", "max_turns": 2, "roles": ["a", "b"], "repairs": 0}',
    b'{"protocol": "agora", "topic": "Tabs", "positions": [["advocate", "Tabs"], ["skeptic", "Spaces"]]}',
    b'{"protocol": "roundtable", "speakers": ["architect", "reviewer"], "topic": "Cache", "max_rounds": 1}',
    b'{"protocol": "critique", "topic": "x", "agent": {"critic": "script:replies.jsonl"}, "root": "runs"}',
]
STRUCTURED_LINES = st.fixed_dictionaries(
    {"protocol": st.sampled_from(["critique", "duel", "agora", "roundtable"]) | JSON_VALUES},
    optional={key: JSON_VALUES | ARGS for key in OPTION_KEYS},
).map(lambda spec: json.dumps(spec).encode())


def test_batch_files_exit_cleanly(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    work = fresh(tmp_path / "batch")
    monkeypatch.chdir(work)  # relative roots and sources stay in here
    write_source(work).rename(work / "design.md")
    (work / "replies.jsonl").write_text('"I propose X."\n"Agreed."\n', encoding="utf-8")
    fallback = "script:replies.jsonl"

    @fuzz(100)
    @given(
        lines=st.lists(STRUCTURED_LINES | documents(BATCH_LINES), min_size=1, max_size=3),
        concurrency=st.integers(1, 4),
    )
    def check(lines: list[bytes], concurrency: int) -> None:
        with TALLY.example("cli_batch"):
            batch = work / "debates.jsonl"
            batch.write_bytes(b"\n".join(_safe_line(line, fallback) for line in lines))
            shutil.rmtree(work / "runs", ignore_errors=True)
            assert_clean_exit(run_cli("run", "--batch", str(batch), "--concurrency", str(concurrency)))

    check()


EVENT_KEYS = ["status", "message", "path"]
EVENT_DATA = [b'{"status": "running"}', b'{"message": "btw: the cache is shared"}', b'{"path": "debates/x.md"}']


def test_emit_exits_cleanly(tmp_path: Path) -> None:
    root = fresh(tmp_path / "events")

    @fuzz(100)
    @given(
        kind=st.sampled_from(sorted(EVENT_TYPES)) | ARGS,
        data=(
            texts(EVENT_DATA) | st.dictionaries(st.sampled_from(EVENT_KEYS) | ARGS, JSON_VALUES).map(json.dumps)
        ).filter(lambda text: "\x00" not in text),
        words=st.lists(ARGS, min_size=3, max_size=3),
        close_run=st.booleans(),
    )
    def check(kind: str, data: str, words: list[str], close_run: bool) -> None:
        with TALLY.example("cli_emit"):
            workflow, run_id, step = words
            args = ["--workflow", workflow, "--type", kind, "--run-id", run_id, "--step", step, "--data", data]
            result = run_cli("emit", *args, *(["--close-run"] if close_run else []), "--root", str(root))
            assert_clean_exit(result)

    check()


@pytest.fixture(scope="module")
def duel_root(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str], list[bytes]]:
    """A work root where alice and bob joined a duel and alice holds the lock: (root, append args, turns)."""
    root = tmp_path_factory.mktemp("duel-template")
    source = write_source(root)
    ids = []
    for who in (ALICE, BOB):
        joined = run_cli(
            "duel", "join", "--target", str(source), "--topic", TOPIC, "--participant-name", who["name"],
            "--harness", who["harness"], "--model-id", who["model"], "--run-id", "run-1", "--root", str(root),
        ).ok()  # fmt: skip
        ids.append(joined["participant_id"])
    duel_id = joined["duel_id"]
    claim = ["duel", "claim-lock", "--duel-id", duel_id, "--participant-id", ids[0], "--ttl-seconds", "604800"]
    lock = run_cli(*claim, "--root", str(root)).ok()
    append = ["duel", "append", "--duel-id", duel_id, "--participant-id", ids[0], "--lease-token", lock["lease_token"]]
    return root, append, [turn.encode() for turn in example_turns(source)]


def test_duel_append_exits_cleanly(tmp_path: Path, duel_root: tuple[Path, list[str], list[bytes]]) -> None:
    template, append, turns = duel_root

    @fuzz(100)
    @given(data=documents(turns))
    def check(data: bytes) -> None:
        with TALLY.example("cli_duel_append"):
            root = tmp_path / "work"
            shutil.rmtree(root, ignore_errors=True)
            shutil.copytree(template, root)
            turn = root / "turn.md"
            turn.write_bytes(data)
            assert_clean_exit(run_cli(*append, "--file", str(turn), "--root", str(root)))

    check()


def test_critique_append_exits_cleanly(tmp_path: Path) -> None:
    dialogue = TESTS / "critique" / "examples" / "valid" / "planning-done.md"
    turns = [source.text.encode() for source in critique.turn_sources(dialogue.read_text(encoding="utf-8"))]
    header = (TESTS / "critique" / "examples" / "valid" / "header-only.md").read_bytes()

    @fuzz(100)
    @given(data=documents(turns), role=st.sampled_from(["proposer", "critic"]) | ARGS)
    def check(data: bytes, role: str) -> None:
        with TALLY.example("cli_critique_append"):
            root = fresh(tmp_path / "work")
            (root / ".dialogues").mkdir()
            (root / ".dialogues" / "rate-limiting.md").write_bytes(header)
            turn = root / "turn.md"
            turn.write_bytes(data)
            args = ["--file", ".dialogues/rate-limiting.md", "--role", role, "--turn-file", str(turn)]
            assert_clean_exit(run_cli("critique", "append", *args, "--root", str(root)))

    check()


@pytest.fixture(scope="module")
def meeting_roots(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, str]]:
    """Two work roots of one meeting: the architect holds the floor ("open"), the moderator does
    ("concluding"); each with the token of that lease."""
    roots: dict[str, tuple[Path, str]] = {}
    for stage in ("open", "concluding"):
        root = tmp_path_factory.mktemp(f"meeting-{stage}")
        agenda = root / "agenda.md"
        agenda.write_bytes(example_bytes("roundtable/examples/valid/open-mid-round/AGENDA.md")[0])
        meeting = ["--name", "cache", "--root", str(root)]
        start = ["--speakers", "architect,reviewer", "--max-rounds", "1", "--agenda", str(agenda)]
        run_cli("roundtable", "start", *start, *meeting).ok()
        speakers = ["architect", "reviewer"] if stage == "concluding" else []
        for role in speakers:
            floor = run_cli("roundtable", "take-floor", "--role", role, *meeting).ok()
            speech = root / f"{role}.md"
            speech.write_text(f"## Position\n\n{role} agrees.\n", encoding="utf-8")
            token = ["--lease-token", floor["lease_token"]]
            run_cli("roundtable", "speak", "--role", role, *token, "--file", str(speech), *meeting).ok()
        holder = "moderator" if stage == "concluding" else "architect"
        floor = run_cli("roundtable", "take-floor", "--role", holder, "--ttl-seconds", "604800", *meeting).ok()
        roots[stage] = (root, floor["lease_token"])
    return roots


SPEECHES = example_bytes("roundtable/examples/**/0*.md")
MINUTES = example_bytes("roundtable/examples/**/MINUTES.md")
AGENDAS = example_bytes("roundtable/examples/**/AGENDA.md")


def test_roundtable_tools_exit_cleanly(tmp_path: Path, meeting_roots: dict[str, tuple[Path, str]]) -> None:
    @fuzz(100)
    @given(
        action=st.sampled_from(["speak", "minutes", "start"]),
        speech=documents(SPEECHES),
        minutes=documents(MINUTES),
        agenda=documents(AGENDAS),
        words=st.lists(ARGS, min_size=2, max_size=2),
        language=st.sampled_from(["en", "zh"]) | ARGS,
        rounds=st.integers(-2, 50),
    )
    def check(
        action: str, speech: bytes, minutes: bytes, agenda: bytes, words: list[str], language: str, rounds: int
    ) -> None:
        with TALLY.example("cli_roundtable"):
            template, token = meeting_roots["concluding" if action == "minutes" else "open"]
            root = tmp_path / "work"
            shutil.rmtree(root, ignore_errors=True)
            shutil.copytree(template, root)
            given_file = root / "given.md"
            lease = ["--lease-token", token, "--root", str(root)]
            if action == "speak":
                given_file.write_bytes(speech)
                args = ["speak", "--name", "cache", "--role", "architect", "--file", str(given_file)]
                args += ["--prompt-next", words[0], *lease]
            elif action == "minutes":
                given_file.write_bytes(minutes)
                args = ["minutes", "--name", "cache", "--file", str(given_file), "--language", language, *lease]
            else:
                given_file.write_bytes(agenda)
                args = ["start", "--name", words[0], "--speakers", words[1], "--max-rounds", str(rounds)]
                args += ["--agenda", str(given_file), "--root", str(root)]
            assert_clean_exit(run_cli("roundtable", *args))

    check()


# --- MCP: the tool arguments the SDK validates, and the texts moot parses ------------------------


@st.composite
def tool_calls(draw: st.DrawFn, valid: dict[str, dict[str, Any]], turns: list[bytes]) -> tuple[str, dict[str, Any]]:
    """A valid call of one tool with some arguments replaced by generated values, dropped or added."""
    tool = draw(st.sampled_from(sorted(valid)))
    arguments = dict(valid[tool])
    for key in draw(st.lists(st.sampled_from([*sorted(arguments), "unexpected"]), max_size=3)):
        arguments[key] = draw(JSON_VALUES | texts(turns))
    for key in draw(st.lists(st.sampled_from(sorted(arguments)), max_size=1)) if arguments else []:
        arguments.pop(key, None)
    return tool, arguments


def test_mcp_tools_answer_tool_errors(tmp_path: Path) -> None:
    root = fresh(tmp_path / "mcp")
    source = write_source(root)
    turns = [turn.encode() for turn in example_turns(source)]
    with start_blocking_portal() as portal, portal.wrap_async_context_manager(Client(build_server(root))) as client:

        def call(tool: str, arguments: dict[str, Any]) -> CallToolResult:
            return portal.call(client.call_tool, tool, arguments)

        join = {"target": str(source), "participant_name": "alice", "harness": "codex", "run_id": "run-1"}
        joined = call("join", join).structured_content
        assert joined is not None
        ids = {"duel_id": joined["duel_id"], "participant_id": joined["participant_id"]}
        lock = call("claim_lock", {**ids, "for_timeout": True, "ttl_seconds": 604800}).structured_content
        assert lock is not None and lock["ok"], lock
        leased = {**ids, "lease_token": lock["lease_token"]}
        valid = {
            "join": join,
            "status": {"duel_id": ids["duel_id"]},
            "claim_lock": ids,
            "refresh_lock": leased,
            "append_turn": {**leased, "turn_markdown": turns[0].decode()},
            "release_lock": leased,
            "read_debate": {"duel_id": ids["duel_id"]},
            "emit": {"type": "btw_update", "run_id": "run-1", "data": {"message": "hi"}},
        }

        @fuzz(200)
        @given(call_=tool_calls(valid, turns))
        def check(call_: tuple[str, dict[str, Any]]) -> None:
            with TALLY.example("mcp_tools"):
                tool, arguments = call_
                result = call(tool, arguments)
                text = result.content[0].text if isinstance(result.content[0], TextContent) else ""
                # moot's answers carry its payload; arguments off the schema get moot's one sentence naming
                # the argument. A crash is neither.
                payload = result.structured_content
                assert (payload is not None and "ok" in payload) or f"call {tool} again" in text, text

        check()


# --- a sample through the real console script ----------------------------------------------------


def moot(*args: str | bytes, cwd: Path) -> Result:
    """``python -m moot ARGS`` as its own process (arguments may be bytes, as a shell passes them)."""
    done = subprocess.run([*MOOT, *args], cwd=cwd, capture_output=True, timeout=120)
    return Result(done.returncode, done.stdout.decode(errors="replace"), done.stderr.decode(errors="replace"))


def test_a_sample_through_the_console_script(tmp_path: Path, empty_script: str) -> None:
    """A few generated records through `python -m moot` itself: the same clean exits, printed to a real pipe."""

    @fuzz(4, long=40)
    @given(command=st.sampled_from([["check"], ["check", "--json"], ["show"], ["resume"]]), target=RECORD_TARGETS)
    def check(command: list[str], target: tuple[str, Any]) -> None:
        with TALLY.example("console_script"):
            record = record_target(tmp_path / "work", target)
            agents = ["--agents", empty_script] if command == ["resume"] else []
            assert_clean_exit(moot(*command, str(record), *agents, cwd=tmp_path))

    check()


@pytest.mark.parametrize(
    "args",
    [
        ["run", "critique", "--topic", b"caf\xe9", "--agents", "{script}"],
        ["emit", "--workflow", "w", "--type", "btw_update", "--run-id", "r", "--data", b'{"message": "caf\xe9"}'],
    ],
    ids=["run-topic", "emit-data"],
)
def test_undecodable_arguments_are_refused_cleanly(args: list[str | bytes], tmp_path: Path, empty_script: str) -> None:
    # A Latin-1 shell passes "café" as b"caf\xe9"; Python hands it to moot as "caf\udce9".
    given_args = [arg.format(script=empty_script) if isinstance(arg, str) else arg for arg in args]
    result = moot(*given_args, "--root", str(tmp_path), cwd=tmp_path)
    assert_clean_exit(result, codes=(2,))
    assert "is not UTF-8 text" in result.stderr and "caf\ufffd" in result.stderr
