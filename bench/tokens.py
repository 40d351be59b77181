"""tokens: prompt and completion tokens per debate for each protocol, and the roundtable's context policy vs peers.

Every debate runs with scripted participants (bench/scripted.py, bench/scripts.py), so the replies, and with
them everything moot sends, are the same on every run. Every text is counted with one tokenizer, SmolLM2's,
read from the embedded GGUF (``vocab_only``): a request costs its system prompt plus its prompt, a reply its
text. The reply's JSON Schema is not counted: moot hands it to the model as a grammar or response_format (a
server that accepts neither gets it as text; the column "schema if sent as text" says how much that adds).

The roundtable is compared, on the same script, with
- a full-transcript baseline: moot's own request with every speech it left out put back, so each speaker reads
  the whole meeting so far (what a prompt-only orchestrator that pastes the transcript sends), and
- AutoGen AgentChat's ``RoundRobinGroupChat`` of ``AssistantAgent``s whose ``ReplayChatCompletionClient``
  replays the same replies; the messages AutoGen hands to the model client on each call are captured.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench import scripted
from bench.common import BenchResult, Table, fmt, fmt_ratio, median, ratio
from bench.scripts import AGORA_SCRIPT, DUEL_SCRIPT, DUEL_SOURCE, ROUNDTABLE_TOPIC, roundtable_script
from moot.agents import Agent, AgentReply, AgentRequest, ScriptAgent, ScriptedReply
from moot.agents.base import schema_instruction
from moot.agents.llama_server import embedded_model_missing
from moot.agents.local import default_weights
from moot.detect import check_path
from moot.engine.loop import Limits
from moot.engine.session import run_driver
from moot.engine.specs import build_driver
from moot.protocols.roundtable import record as meeting_record
from moot.protocols.roundtable.driver import LATEST_SPEECHES
from moot.protocols.roundtable.machine import MODERATOR, speech_file_name

STARTED = "2026-05-01 10:00"
QUICK_ROUNDTABLE = (("architect", "reviewer", "security"), 2)
FULL_ROUNDTABLE = (("architect", "reviewer", "security", "operations"), 3)
RUNS = 3  # the counts are deterministic; the runs show it

Count = Callable[[str], int]


def smollm_tokenizer() -> Count:
    """Token counts by SmolLM2's tokenizer, loaded without the weights."""
    from llama_cpp import Llama

    # A vocabulary-only model still makes a context, and llama.cpp complains about its size through
    # llama-cpp-python's log callback, which writes to sys.stderr: keep that out of the report.
    with contextlib.redirect_stderr(io.StringIO()):
        llama = Llama(model_path=str(default_weights()), vocab_only=True, verbose=False)
    return lambda text: len(llama.tokenize(text.encode("utf-8"), add_bos=False, special=False)) if text else 0


class Recorder(Agent):
    """Passes each request to a scripted agent and keeps the request and the reply text."""

    name = "recorder"

    def __init__(self, inner: Agent) -> None:
        self.inner = inner
        self.exchanges: list[tuple[AgentRequest, str]] = []

    async def reply(self, request: AgentRequest) -> AgentReply:
        answer = await self.inner.reply(request)
        self.exchanges.append((request, answer.text))
        return answer


def scripted_agent(script: Sequence[tuple[str, str]]) -> ScriptAgent:
    """Each reply queued for its role, so it can only reach the participant it was written for."""
    return ScriptAgent([ScriptedReply(text, role) for role, text in script])


@dataclass(frozen=True)
class Debate:
    """One protocol's scripted debate: the driver spec and the agent that plays every role."""

    label: str
    spec: dict[str, Any]
    agent: Callable[[], Agent]
    requests: int  # one per scripted reply: every reply must be accepted


SOURCE_NAME = "cache-design.md"  # the duel's document, written into each run's work root (moot reads no other)


def debates(roundtable: tuple[tuple[str, ...], int]) -> dict[str, Debate]:
    speakers, rounds = roundtable
    table_script = roundtable_script(speakers, rounds)
    return {
        "critique": Debate(
            f"{scripted.TURNS_PER_DEBATE} turns, DONE",
            {"protocol": "critique", "topic": scripted.TOPIC, "max_rounds": scripted.MAX_ROUNDS},
            lambda: scripted.moot_agents()[scripted.ROLES[0]],
            scripted.TURNS_PER_DEBATE,
        ),
        "duel": Debate(
            f"{len(DUEL_SCRIPT)} turns, ACCEPTED_CONSENSUS",
            {"protocol": "duel", "source": SOURCE_NAME},
            lambda: scripted_agent(DUEL_SCRIPT),
            len(DUEL_SCRIPT),
        ),
        "agora": Debate(
            f"{len(AGORA_SCRIPT)} turns, CONSENSUS",
            {"protocol": "agora", "topic": scripted.TOPIC},
            lambda: scripted_agent(AGORA_SCRIPT),
            len(AGORA_SCRIPT),
        ),
        "roundtable": Debate(
            f"{len(speakers)} speakers × {rounds} rounds + minutes",
            {"protocol": "roundtable", "topic": ROUNDTABLE_TOPIC, "speakers": list(speakers), "max_rounds": rounds},
            lambda: scripted_agent(table_script),
            len(table_script),
        ),
    }


def run_debate(debate: Debate, root: Path) -> tuple[list[tuple[AgentRequest, str]], Path]:
    """Run the debate to its end and check that every turn was accepted and the record is valid."""
    spec = dict(debate.spec)
    if "source" in spec:
        root.mkdir(parents=True)
        source = root / spec["source"]
        source.write_text(DUEL_SOURCE, encoding="utf-8")
        spec["source"] = str(source)
    driver = build_driver(spec, root, STARTED)
    recorder = Recorder(debate.agent())
    result = asyncio.run(run_driver(driver, {role: recorder for role in driver.roles()}, Limits(repairs=0)))
    accepted = sum(row["accepted"] for row in result.usage)
    report = check_path(driver.record_path)
    if accepted != debate.requests or len(recorder.exchanges) != debate.requests or report.exit_code != 0:
        raise RuntimeError(
            f"the scripted {driver.protocol} debate ended {result.outcome!r} with {accepted} of {debate.requests} "
            f"replies accepted (check exit {report.exit_code}): the script no longer fits the protocol"
        )
    return recorder.exchanges, driver.record_path


def protocol_counts(exchanges: list[tuple[AgentRequest, str]], count: Count) -> dict[str, Any]:
    system = sum(count(request.system or "") for request, _ in exchanges)
    prompt = sum(count(request.prompt) for request, _ in exchanges)
    completion = sum(count(text) for _, text in exchanges)
    schema = sum(count(schema_instruction(r.json_schema)) for r, _ in exchanges if r.json_schema is not None)
    return {
        "requests": len(exchanges),
        "system_tokens": system,
        "user_prompt_tokens": prompt,
        "prompt_tokens": system + prompt,
        "completion_tokens": completion,
        "total_tokens": system + prompt + completion,
        "prompt_tokens_per_turn": (system + prompt) / len(exchanges),
        "schema_as_text_tokens": schema,
    }


# --- the roundtable against its peers -------------------------------------------------------------


def moot_turn_tokens(exchanges: list[tuple[AgentRequest, str]], count: Count) -> list[int]:
    return [count(request.system or "") + count(request.prompt) for request, _ in exchanges]


def full_transcript_tokens(exchanges: list[tuple[AgentRequest, str]], meeting: Path, count: Count) -> list[int]:
    """Each of moot's requests with the speeches it left out (all but the latest few) put back."""
    parsed, _ = meeting_record.parse_meeting(meeting)
    if parsed is None:
        raise RuntimeError(f"cannot read the meeting {meeting}")
    blocks = [f"### {speech_file_name(s.sequence, s.role)}\n{s.body.strip()}" for s in parsed.speeches]
    found = []
    for index, (request, _) in enumerate(exchanges):
        left_out = [] if request.role == MODERATOR else blocks[: max(0, index - LATEST_SPEECHES)]
        prompt = "\n\n".join([request.prompt, *left_out])
        found.append(count(request.system or "") + count(prompt))
    return found


def autogen_turn_tokens(
    exchanges: list[tuple[AgentRequest, str]], speakers: tuple[str, ...], count: Count
) -> list[int]:
    """What AutoGen's round-robin group chat sends the model on each speaker turn, replaying the same replies.

    Each AssistantAgent gets a one-line role and the reply format in its system message (AutoGen enforces no
    schema, so the format must be asked for in words); the task is moot's first prompt (agenda and instruction).
    """
    from autogen_agentchat.agents import AssistantAgent
    from autogen_agentchat.base import ChatAgent, Team
    from autogen_agentchat.conditions import MaxMessageTermination
    from autogen_agentchat.teams import RoundRobinGroupChat
    from autogen_core.models import CreateResult, LLMMessage
    from autogen_ext.models.replay import ReplayChatCompletionClient

    class CapturingReplayClient(ReplayChatCompletionClient):
        """Keeps the messages of every call: ReplayChatCompletionClient replays but does not record them."""

        def __init__(self, replies: list[str]) -> None:
            super().__init__(replies)
            self.calls: list[list[LLMMessage]] = []

        async def create(self, messages: Sequence[LLMMessage], **kwargs: Any) -> CreateResult:
            self.calls.append(list(messages))
            return await super().create(messages, **kwargs)

    speeches = [(request, text) for request, text in exchanges if request.role != MODERATOR]
    client = CapturingReplayClient([text for _, text in speeches])
    fields = ", ".join(json.loads(speeches[0][1]))
    agents: list[ChatAgent | Team] = [
        AssistantAgent(
            role,
            client,
            system_message=f"You are the {role} in a roundtable meeting about: {ROUNDTABLE_TOPIC} "
            f"Reply with one JSON object with {fields}.",
        )
        for role in speakers
    ]
    team = RoundRobinGroupChat(agents, termination_condition=MaxMessageTermination(len(speeches) + 1))
    asyncio.run(team.run(task=speeches[0][0].prompt))
    if len(client.calls) != len(speeches):
        raise RuntimeError(f"AutoGen made {len(client.calls)} model calls for {len(speeches)} speeches")
    return [sum(count(_text(message)) for message in call) for call in client.calls]


def _text(message: Any) -> str:
    content = message.content
    return content if isinstance(content, str) else "\n".join(str(part) for part in content)


def roundtable_rows(
    speakers: tuple[str, ...], moot: list[int], full: list[int], autogen: list[int]
) -> tuple[list[list[Any]], dict[str, Any]]:
    """Prompt tokens per round (and for the minutes) for moot, the full transcript and AutoGen."""
    rows = []
    per_round: list[dict[str, Any]] = []
    n = len(speakers)
    for start in range(0, len(autogen), n):
        figures = {"round": start // n + 1, **{k: sum(v[start : start + n]) for k, v in _series(moot, full, autogen)}}
        per_round.append(figures)
        rows.append(_row(f"round {figures['round']} ({n} speeches)", figures))
    speeches = {k: sum(v[: len(autogen)]) for k, v in _series(moot, full, autogen)}
    rows.append(_row(f"all {len(autogen)} speeches", speeches))
    minutes = {"moot": moot[-1], "full": full[-1]}
    rows.append(_row("moderator's minutes", minutes))
    data = {
        "per_round": per_round,
        "speeches": speeches,
        "minutes": minutes,
        "moot_vs_full": ratio(speeches["moot"], speeches["full"]),
        "moot_vs_autogen": ratio(speeches["moot"], speeches["autogen"]),
        "per_turn": {"moot": moot, "full": full, "autogen": autogen},
    }
    return rows, data


def _series(moot: list[int], full: list[int], autogen: list[int]) -> list[tuple[str, list[int]]]:
    return [("moot", moot), ("full", full), ("autogen", autogen)]


def _row(label: str, f: dict[str, int]) -> list[Any]:
    """A row of the comparison; a side that has no such turns (AutoGen's minutes) shows a dash."""
    cells = [label, fmt(f["moot"], 0), fmt(f["full"], 0)]
    cells.append(fmt(f["autogen"], 0) if "autogen" in f else "—")
    cells.append(fmt_ratio(ratio(f["moot"], f["full"])))
    cells.append(fmt_ratio(ratio(f["moot"], f["autogen"])) if "autogen" in f else "—")
    return cells


# --- the benchmark --------------------------------------------------------------------------------


def run(quick: bool) -> BenchResult:
    missing = embedded_model_missing()
    if missing:
        return BenchResult("tokens", "", [], {}, skipped=f"no SmolLM2 tokenizer: {missing}")
    count = smollm_tokenizer()
    speakers, rounds = QUICK_ROUNDTABLE if quick else FULL_ROUNDTABLE
    per_protocol: dict[str, dict[str, Any]] = {}
    deterministic = True
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        for name, debate in debates((speakers, rounds)).items():
            runs = [run_debate(debate, work / f"{name}-{index}") for index in range(RUNS)]
            counted = [protocol_counts(exchanges, count) for exchanges, _ in runs]
            deterministic &= all(c == counted[0] for c in counted)
            per_protocol[name] = {"debate": debate.label, **{k: median([c[k] for c in counted]) for k in counted[0]}}
            if name == "roundtable":
                table_exchanges, meeting = runs[0]
        moot = moot_turn_tokens(table_exchanges, count)
        full = full_transcript_tokens(table_exchanges, meeting, count)
    autogen_runs = [autogen_turn_tokens(table_exchanges, speakers, count) for _ in range(RUNS)]
    deterministic &= all(r == autogen_runs[0] for r in autogen_runs)
    rows, comparison = roundtable_rows(speakers, moot, full, autogen_runs[0])

    protocols = Table(
        "tokens per scripted debate (SmolLM2 tokenizer)",
        [
            "protocol",
            "debate",
            "requests",
            "system",
            "prompt",
            "completion",
            "total",
            "system + prompt per turn",
            "system share",
            "schema if sent as text",
        ],
        [
            [
                name,
                f["debate"],
                f"{f['requests']:g}",
                fmt(f["system_tokens"], 0),
                fmt(f["user_prompt_tokens"], 0),
                fmt(f["completion_tokens"], 0),
                fmt(f["total_tokens"], 0),
                fmt(f["prompt_tokens_per_turn"], 0),
                f"{f['system_tokens'] / f['prompt_tokens']:.0%}",
                fmt(f["schema_as_text_tokens"], 0),
            ]
            for name, f in per_protocol.items()
        ],
        [
            f"Median of {RUNS} runs of each debate; the counts were "
            f"{'identical' if deterministic else 'NOT identical'} across runs. The duel's prompts name the source "
            "document's absolute path, so its counts move by a few tokens with the name of the temporary directory.",
            "system: moot's system prompts (role, protocol rules); prompt: the per-turn prompt (topic, record "
            "excerpt, instruction); completion: the scripted replies. Chat-template tokens are not counted.",
            "schema if sent as text: what the JSON Schemas would add if the model server accepted no schema and "
            "moot had to send them in the system message (llama-cpp-python's server does, as json_object; OpenAI "
            "does not).",
        ],
    )
    n = len(speakers)
    comparison_table = Table(
        f"roundtable, {n} speakers × {rounds} rounds: prompt tokens moot sends vs peers on the same script",
        [
            "turns",
            "moot (latest speeches)",
            "full transcript",
            "AutoGen RoundRobinGroupChat",
            "moot ÷ full",
            "moot ÷ AutoGen",
        ],
        rows,
        [
            f"moot shows each speaker the agenda, the instruction and the latest {LATEST_SPEECHES} speeches; the "
            "full-transcript baseline is moot's own request with every earlier speech put back.",
            "AutoGen: each AssistantAgent's model context (the default, unbounded) holds the task and every message "
            "of the chat; a BufferedChatCompletionContext would trim it as moot does. Its system message is one line "
            "(role and reply fields), while moot's carries the protocol rules. The replies, and so the completion "
            "tokens, are the same on all three sides.",
            "AutoGen's round robin has no closing moderator, so the minutes are compared with the full transcript "
            "only.",
        ],
    )
    losses = []
    for figures in comparison["per_round"]:
        if figures["moot"] > figures["autogen"]:
            losses.append(
                f"In round {figures['round']} of the roundtable moot sends {figures['moot']:,} prompt tokens to "
                f"AutoGen's {figures['autogen']:,}: moot's system prompt carries the protocol rules and its prompt "
                "the agenda and instruction each turn, which outweighs AutoGen's growing chat history "
                "until enough speeches have been spoken."
            )
    if comparison["moot_vs_full"] > 1:
        losses.append(
            "moot sends more than the full transcript: its omission note costs more than the speeches left out."
        )
    summary = (
        f"On a {n}×{rounds} roundtable moot sends {fmt_ratio(comparison['moot_vs_full'])} the prompt tokens of a "
        f"full-transcript orchestrator and {fmt_ratio(comparison['moot_vs_autogen'])} those of AutoGen's group chat."
    )
    data = {
        "tokenizer": "SmolLM2-135M-Instruct (GGUF vocab)",
        "deterministic": deterministic,
        "protocols": per_protocol,
        "roundtable": {"speakers": list(speakers), "rounds": rounds, **comparison},
    }
    return BenchResult("tokens", summary, [protocols, comparison_table], data, losses)
