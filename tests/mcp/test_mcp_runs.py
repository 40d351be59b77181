"""Deliberations run by ``moot mcp`` itself, driven by the official SDK client over stdio: a start answers at
once, progress notifications arrive as turns land, the result and the record agree with ``moot check``; a
cancelled debate records where it stopped; a refused start is one sentence and writes nothing."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import anyio
from mcp_helpers import REPLIES, PacedModelServer, call, connect, tool_error, tree

from moot import registry

RUN_TOOLS = {"start_debate", "resume_debate", "debate_status", "debate_result", "list_debates", "cancel_debate"}


def moot_check(record: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "moot", "check", str(record)], capture_output=True, text=True, timeout=120
    )


def test_the_run_tools_are_listed_once_with_every_registered_protocol(root: Path) -> None:
    async def scenario() -> None:
        async with connect(root) as session:
            tools = [tool.name for tool in (await session.list_tools()).tools]
            assert set(tools) >= RUN_TOOLS and len(tools) == len(set(tools))
            start = next(t for t in (await session.list_tools()).tools if t.name == "start_debate")
            assert start.input_schema["properties"]["protocol"]["enum"] == list(registry.protocols())
            assert start.input_schema["required"] == ["protocol"]

    anyio.run(scenario)


def test_a_critique_runs_in_the_server_with_progress_then_its_result_and_record_check(root: Path) -> None:
    async def scenario() -> None:
        with PacedModelServer(REPLIES, delay=1.0) as model:
            async with connect(root, *model.allowed) as session:
                started = await call(
                    session, "start_debate", protocol="critique", topic="Adopt a monorepo", agents=model.spec
                )
                debate = started["debate_id"]
                assert debate == ".dialogues/adopt-a-monorepo.md"
                assert started["state"] == "running" and started["turns"] < len(REPLIES)

                progress: list[tuple[float, float | None, str | None]] = []

                async def on_progress(value: float, total: float | None, message: str | None) -> None:
                    progress.append((value, total, message))

                result = await session.call_tool(
                    "debate_status", {"debate_id": debate, "wait_seconds": 60}, progress_callback=on_progress
                )
                status = result.structured_content
                assert status is not None and status["state"] == "ended", status
                assert status["outcome"] == "DONE" and status["turns"] == 4
                # One notification per turn that landed while the call waited, in order, the last one turn 4.
                values = [value for value, _, _ in progress]
                assert len(values) >= 3 and values == sorted(set(values)) and values[-1] == 4
                assert all(message and "accepted" in message for _, _, message in progress)

                outcome = await call(session, "debate_result", debate_id=debate)
                assert outcome["outcome"] == "DONE" and outcome["consensus"] is True
                assert "builds scoped to changed services" in outcome["reason"]
                assert outcome["verdict"] == "valid" and outcome["violations"] == []
                assert outcome["turns"] == 4 and outcome["tokens"] == 4 * 13
                assert outcome["summary"]["detail"]["roles"] == ["proposer", "critic"]
                record = Path(outcome["record"])
                assert record == root / ".dialogues" / "adopt-a-monorepo.md"

                listed = await call(session, "list_debates")
                assert [(row["debate_id"], row["state"], row["outcome"]) for row in listed["debates"]] == [
                    (debate, "ended", "DONE")
                ]

        checked = moot_check(record)
        assert checked.returncode == 0, checked.stdout
        assert "status DONE" in checked.stdout and "4 turn(s)" in checked.stdout

    anyio.run(scenario)


def test_a_cancelled_debate_keeps_its_turns_and_records_a_durable_ending(root: Path) -> None:
    async def scenario() -> None:
        # The critic's first reply never comes: the debate is mid-turn when it is cancelled.
        with PacedModelServer(REPLIES, hold_from=1) as model:
            async with connect(root, *model.allowed) as session:
                started = await call(
                    session, "start_debate", protocol="critique", topic="Adopt a monorepo", agents=model.spec
                )
                debate = started["debate_id"]
                status = started
                with anyio.fail_after(30):
                    while status["turns"] < 1:
                        status = await call(session, "debate_status", debate_id=debate, wait_seconds=5)
                assert status["state"] == "running" and status["next_speaker"] == "critic"
                assert status["speaking"] == ["critic"]

                cancelled = await call(session, "cancel_debate", debate_id=debate)
                assert cancelled["state"] == "cancelled" and cancelled["turns"] == 1
                again = await call(session, "cancel_debate", debate_id=debate)  # harmless once it stopped
                assert again["state"] == "cancelled"
                outcome = await call(session, "debate_result", debate_id=debate)
                assert outcome["outcome"] is None and outcome["verdict"] == "valid"
                assert outcome["run_halted"]["cause"] == "interrupted"
                assert "cancel_debate" in outcome["run_halted"]["reason"]
                record = Path(outcome["record"])
                # A second debate is still waiting for its first turn when the host closes the server.
                left = await call(session, "start_debate", protocol="critique", topic="Left running", agents=model.spec)
                assert left["state"] == "running"
            # The server has stopped: the endings are on disk, beside the records, for every later reader.
            sidecar = json.loads(record.with_name(f".{record.name}.run.json").read_text(encoding="utf-8"))
            assert sidecar["halted"]["cause"] == "interrupted" and sidecar["halted"]["turns"] == 1
            assert record.read_text(encoding="utf-8").count("## [") == 1
            abandoned = root / left["debate_id"]
            halted = json.loads(abandoned.with_name(f".{abandoned.name}.run.json").read_text(encoding="utf-8"))
            assert halted["halted"]["cause"] == "interrupted" and halted["halted"]["turns"] == 0
            assert halted["halted"]["reason"] == "the server running it stopped"

        checked = moot_check(record)
        assert checked.returncode == 0, checked.stdout
        assert "RUN_HALTED" in checked.stdout and "cancelled with cancel_debate" in checked.stdout

    anyio.run(scenario)


def test_a_refused_start_is_one_sentence_and_writes_nothing(root: Path, tmp_path: Path) -> None:
    async def scenario() -> None:
        closed = "http://127.0.0.1:9/v1"
        with PacedModelServer(REPLIES) as model:
            async with connect(root, *model.allowed, "--allow-server", closed) as session:
                before = tree(root)
                unknown = await tool_error(
                    session, "start_debate", protocol="critique", topic="T", agents=model.spec, options={"colour": 1}
                )
                assert "colour" in unknown["error"] and "max_rounds" in unknown["error"]
                role = await tool_error(
                    session, "start_debate", protocol="critique", topic="T", agent={"judge": model.spec}
                )
                assert "judge" in role["error"] and "proposer" in role["error"]
                # The record is created before the agents are probed; an unreachable server removes it again.
                unreachable = await tool_error(
                    session, "start_debate", protocol="critique", topic="T", agents=f"openai:m@{closed}"
                )
                assert "127.0.0.1:9" in unreachable["error"]
                missing = await tool_error(session, "start_debate", protocol="duel", topic="T", agents=model.spec)
                assert "source" in missing["error"]
                council = await tool_error(session, "start_debate", protocol="council", topic="T")
                assert "question" in council["error"]
                nowhere = await tool_error(session, "start_debate", protocol="parliament", topic="T")
                assert "critique" in nowhere["error"]
                assert tree(root) == before

                # A record that exists is replaced only with force, never while it runs.
                first = await call(session, "start_debate", protocol="critique", topic="T", agents=model.spec)
                await call(session, "debate_status", debate_id=first["debate_id"], wait_seconds=30)
                exists = await tool_error(session, "start_debate", protocol="critique", topic="T", agents=model.spec)
                assert "force: true" in exists["error"]
                done = tree(root)
                # A forced start whose agents cannot be reached leaves the old debate as it was.
                written = {path: path.read_bytes() for path in (root / ".dialogues").iterdir()}
                await tool_error(
                    session, "start_debate", protocol="critique", topic="T", agents=f"openai:m@{closed}", force=True
                )
                assert {path: path.read_bytes() for path in (root / ".dialogues").iterdir()} == written
                await tool_error(session, "debate_result", debate_id="../outside.md")
                assert tree(root) == done

    anyio.run(scenario)


class SlowRefusal:
    """A model server on loopback that answers moot's probe only after ``delay`` seconds, and then refuses the
    key: a start that stays in its probe for a while and then fails."""

    def __init__(self, delay: float) -> None:
        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                time.sleep(delay)
                body = json.dumps({"error": {"message": "Incorrect API key provided", "type": "invalid_request_error"}})
                self.send_response(401)
                self.send_header("Content-Type", "application/json")
                self.end_headers()
                self.wfile.write(body.encode())

            def log_message(self, *args: object) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}/v1"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def __enter__(self) -> SlowRefusal:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()


def test_two_forced_starts_of_one_debate_at_once_never_lose_a_record(root: Path) -> None:
    """While one forced start waits on its agents' probe, a second forced start of the same debate is refused in
    one sentence instead of setting the first one's new record aside; when the first then fails, the old debate
    is back, byte for byte, and nothing of either start is left."""

    async def scenario() -> None:
        with PacedModelServer(REPLIES) as model, SlowRefusal(delay=2.0) as slow:
            async with connect(root, *model.allowed, "--allow-server", slow.url) as session:
                first = await call(session, "start_debate", protocol="critique", topic="T", agents=model.spec)
                ended = await call(session, "debate_status", debate_id=first["debate_id"], wait_seconds=30)
                assert ended["state"] == "ended"
                before = tree(root)
                answers: dict[str, dict[str, object]] = {}

                async def forced(name: str, agents: str, after: float) -> None:
                    await anyio.sleep(after)
                    answers[name] = await tool_error(
                        session, "start_debate", protocol="critique", topic="T", agents=agents, force=True
                    )

                async with anyio.create_task_group() as group:
                    group.start_soon(forced, "slow", f"openai:m@{slow.url}", 0.0)
                    group.start_soon(forced, "second", model.spec, 0.7)
                assert "another start" in str(answers["second"]["error"]), answers["second"]
                assert "401" in str(answers["slow"]["error"]) or "key" in str(answers["slow"]["error"])
                assert tree(root) == before
                assert not list((root / ".dialogues").glob(".moot-replaced-*"))

    anyio.run(scenario)
    assert moot_check(root / ".dialogues" / "t.md").returncode == 0


def drone(signal: str, message: str, target: str | None = None) -> str:
    """An Agora drone's reply in the seed's JSON."""
    return json.dumps({"signal": signal, "message": message, "confidence": 0.9, "target": target, "evidence": []})


def test_an_agora_debate_reports_its_consensus_and_conformity_metrics(root: Path, tmp_path: Path) -> None:
    script = tmp_path / "drones.jsonl"
    replies = [
        {"role": "advocate", "reply": drone("propose", "One repository, one CI pipeline.")},
        {
            "role": "skeptic",
            "reply": drone("approve", "Builds scoped to changes answer my worry.", "proposal-advocate"),
        },
        {"role": "advocate", "reply": drone("no-change", "I hold the proposal.")},
    ]
    script.write_text("".join(json.dumps(line) + "\n" for line in replies), encoding="utf-8")

    async def scenario() -> None:
        async with connect(root, "--allow-agent", "script") as session:
            started = await call(
                session, "start_debate", protocol="agora", topic="Adopt a monorepo", agents=f"script:{script}"
            )
            assert started["debate_id"] == ".agora/adopt-a-monorepo.md"
            status = await call(session, "debate_status", debate_id=started["debate_id"], wait_seconds=60)
            assert status["state"] == "ended" and status["outcome"] == "CONSENSUS"
            outcome = await call(session, "debate_result", debate_id=started["debate_id"])
            assert outcome["consensus"] is True and "proposal-advocate" in outcome["reason"]
            signals = outcome["conformity"]["signal"]
            assert signals["participants"]["advocate"]["positions"] == ["propose", "no-change"]
            assert outcome["conformity"]["proposal"]["final_distinct"] == 1
        checked = moot_check(root / started["debate_id"])
        assert checked.returncode == 0, checked.stdout

    anyio.run(scenario)


def test_a_sealed_phase_shows_every_role_it_asks_at_once(root: Path) -> None:
    async def scenario() -> None:
        with PacedModelServer(REPLIES, hold_from=0) as model:  # nobody answers: the openings stay open
            async with connect(root, *model.allowed) as session:
                started = await call(
                    session,
                    "start_debate",
                    protocol="agora",
                    topic="Cache",
                    agents=model.spec,
                    options={"sealed": True},
                )
                assert started["state"] == "running" and started["speaking"] == ["advocate", "skeptic"]
                cancelled = await call(session, "cancel_debate", debate_id=started["debate_id"])
                assert cancelled["state"] == "cancelled" and cancelled["speaking"] == []

    anyio.run(scenario)
