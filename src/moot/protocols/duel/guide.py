"""The duel guide an agent host loads: how to take part through the moot MCP server, the turn format, the
outcomes and every rule id — rendered from the protocol definitions and the server's own tool list, so it
cannot drift from what moot enforces.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from moot.core.files import FILE_RULES
from moot.core.grounding import NEAR_LINES
from moot.core.machine import RuleBook
from moot.errors import Severity
from moot.protocols.duel.machine import (
    MAX_TURNS,
    NAME,
    RULES,
    Counterpoint,
    DuelTurn,
    OutcomeName,
    Stance,
    Support,
    SupportKind,
    UnresolvedItem,
)
from moot.protocols.duel.record import FORMAT_RULES, render_turn
from moot.protocols.duel.tools import TOOLS
from moot.tools.declare import mcp_name
from moot.tools.errors import TOOL_RULES
from moot.tools.waiting import MAX_WAIT_SECONDS

if TYPE_CHECKING:  # the MCP SDK is an extra: the guide reads only the names of the tools it is given
    from mcp_types import Tool

SOURCE = "/abs/path/design.md"

# One turn as the protocol renders it (the guide's test parses it back with moot's turn parser).
EXAMPLE_TURN = DuelTurn(
    number=4,
    participant="bob",
    harness="codex",
    model="gpt-5",
    stance=Stance.CONVERGING.value,
    position="A shared cache can be the default once every tenant has a memory floor; isolation still decides.",
    counterpoints=[
        Counterpoint(
            addresses="Turn 3",
            claim="A per-tenant floor still leaks timing information through shared eviction.",
            support=[Support(kind=SupportKind.URL, text="https://en.wikipedia.org/wiki/Timing_attack")],
        ),
        Counterpoint(
            addresses="source section §Goals",
            claim="The design's own goals rank isolation above memory savings.",
            support=[
                Support(kind=SupportKind.SOURCE, text=f'`{SOURCE}` §Goals, line 8: "tenant isolation comes first"')
            ],
        ),
    ],
    agreements=["Per-tenant floors would improve the worst-case hit rate (Turn 3)."],
    novel_argument="Separate caches make per-tenant memory billing exact, which a shared pool cannot do.",
    novel_support=[
        Support(kind=SupportKind.PRINCIPLE, text="Principle: what is billed per tenant is measured per tenant.")
    ],
    unresolved=[UnresolvedItem(text="Whether timing leakage through a shared pool is acceptable", blocking=True)],
    # bob was DISSENTING in Turn 2: the change to CONVERGING cites what moved him.
    stance_revision_support=["Turn 3", f'`{SOURCE}` §Quotas, line 91: "each tenant has a memory quota"'],
)

OUTCOME_MEANING = {
    OutcomeName.ACCEPTED_CONSENSUS: "both participants' latest turns are ACCEPTING_CONSENSUS with no blocking item",
    OutcomeName.DISSENT: (
        "both latest turns are DISSENTING, or the last allowed turn leaves a DISSENTING stance or a blocking item"
    ),
    OutcomeName.MAX_TURNS: "the last allowed turn is accepted without consensus or dissent",
    OutcomeName.TIMEOUT: "you record it: no peer joined within the bounded wait (refused once two joined)",
    OutcomeName.INVALIDATED: "you record it with a reason: the record or the coordination failed validation",
}

RULE_BOOKS: tuple[tuple[str, RuleBook], ...] = (
    ("The duel protocol", RULES),
    ("The debate record's format", FORMAT_RULES),
    ("The agent tools", TOOL_RULES),
    ("Any record", FILE_RULES),
)


def _tool_rows(tools: Sequence[Tool]) -> list[str]:
    rows = ["| Tool | Arguments (required first) | What it does |", "|------|------|------|"]
    for tool in tools:
        schema = tool.input_schema
        required = list(schema.get("required", []))
        optional = [name for name in schema.get("properties", {}) if name not in required]
        arguments = ", ".join([*(f"`{name}`" for name in required), *(f"`{name}`?" for name in optional)])
        summary = " ".join((tool.description or "").split("\n\n")[0].split())
        rows.append(f"| `{tool.name}` | {arguments} | {summary} |")
    return rows


def _rule_rows(books: Iterable[tuple[str, RuleBook]]) -> list[str]:
    rows: list[str] = []
    for title, book in books:
        rows += ["", f"{title}:", "", "| Rule | What it asks |", "|------|------|"]
        for rule in book:
            note = " (a warning)" if rule.severity is Severity.WARNING else ""
            rows.append(f"| `{rule.id}` | {rule.summary}{note} |")
    return rows


def guide(tools: Sequence[Tool], *, harness: str, level: int = 1) -> str:
    """The guide in Markdown, its top heading at ``level``; ``harness`` is what the host passes to join."""
    names = {tool.name for tool in tools}
    h1, h2 = "#" * level, "#" * (level + 1)

    commands = {tool.name for tool in TOOLS}

    def c(name: str) -> str:
        if name not in commands:  # likewise for the command line's names
            raise KeyError(f"the duel has no command {name!r}")
        return name

    def t(name: str) -> str:
        if name not in names:  # the steps below name tools; a renamed tool must fail generation, not drift
            raise KeyError(f"the MCP server has no tool {name!r}")
        return f"`{name}`"

    outcomes = ", ".join(f"`{o.value}`" for o in OutcomeName)
    lines = [
        f"{h1} Socratic duel through moot",
        "",
        "<!-- Generated by `python -m moot.hosts` from moot's protocol definitions; do not edit by hand. -->",
        "",
        f"A Socratic duel is a bounded debate between two agents about a Markdown source: at most "
        f"{MAX_TURNS} turns, every claim backed by evidence, and an explicit outcome ({outcomes}). "
        "The `moot` MCP server enforces every rule in code and writes the debate record itself: never edit the "
        "record or the source. A refused call is a tool error whose first line names the fix and the rule ids; "
        "fix that and call again (nothing was written).",
        "",
        f"{h2} Steps",
        "",
        f"1. **Join.** Call {t('join')} with `target` (the source document), `participant_name` (yours, unique), "
        f"`harness` (`{harness}`), `model_id` and `run_id`; `topic` defaults to the source's first heading. Keep "
        "`duel_id` and `participant_id`: this connection may act only as that participant. The server keeps the "
        "seat's `participant_secret` for this connection; note it only to take your seat back from a new "
        f"connection after a restart ({t('join')} again with it; without it the name is refused, `TOOLS_SEAT`).",
        f"2. **Wait for your turn.** Call {t('wait_turn')} with `duel_id`, `participant_id` and `timeout_seconds` "
        f"(at most {MAX_WAIT_SECONDS:g}); never poll {t('status')}. It answers as soon as `waited` is `your_turn` "
        "(step 3), or `ended` (the duel reached its outcome or closed: step 7), else `timed_out` when the time runs "
        "out: call it again, and if `next_step` is still `waiting_for_participant` after your bounded wait, call "
        f"{t('claim_lock')} with `for_timeout: true`: `next_step: closing` means close with `TIMEOUT` (step 6); "
        "`debating` means the peer arrived, so keep the lease and go on. Never ask the user.",
        "   **Turn 1.** Before anyone wrote, either participant may (`may_write` lists both; `whose_turn` says so): "
        f"whoever's {t('claim_lock')} succeeds first writes Turn 1. The other is refused with `TOOLS_LOCK_HELD`; it "
        f"goes back to {t('wait_turn')}, then reads Turn 1 and writes Turn 2 (a Turn 1 it prepared is refused, "
        "`DUEL_TURN_NUMBER`).",
        f"3. **Take the lock.** {t('claim_lock')} returns `lease_token`. Refused with `TOOLS_LOCK_HELD`: back to "
        f"step 2. Composing for long? {t('refresh_lock')} before `lease_expires_at`.",
        f"4. **Read the record.** {t('read_debate')} returns the artifact's text, `artifact.turns` and "
        "`artifact.next_speaker`; your turn number is `artifact.turns + 1`. Read the source for evidence.",
        f"5. **Write one turn** in the format below and send it with {t('append_turn')}. The answer has "
        "`terminal_outcome`, `candidate_convergence` and `next_speaker`.",
        f"6. **Release or close.** No `terminal_outcome`: {t('release_lock')} and go back to step 2. A "
        f"`terminal_outcome`: {t('release_lock')} with `close: true` and `outcome` set to it (`reason` is required "
        "for `INVALIDATED`); the participant who wrote that turn closes, the other's wait answers `ended`. A "
        "refused close answers `closed: false`: follow `next_step`.",
        "7. **Report** the outcome and `debate_path`, briefly.",
        "",
        f"Workflow events (optional, for rp1-style runs): {t('emit')} `status_change` on each state entry "
        "(`data.status`: running, waiting, completed or failed), `artifact_registered` once after your first "
        "turn created the record, `btw_update` on candidate convergence; close the run with `close_run: true`.",
        "",
        f"{h2} The same on the command line",
        "",
        "Without the MCP server, every tool is a command that prints one JSON object and exits 0 (ok), 1 "
        "(refused: the sentence is on stderr too), 2 (bad input) or 3 (retry later). `join` prints `duel_id` and "
        "`participant_id` once; moot keeps your seat's secret for your OS user. `--export` prints "
        "`export MOOT_LEASE_TOKEN=…` instead of JSON (nothing on stdout when refused), and the commands that need "
        "the token read that variable. Join once, then loop over steps 2 to 6:",
        "",
        "```sh",
        f"moot duel {c('join')} --target design.md --participant-name NAME --harness {harness} --model-id MODEL "
        "--run-id RUN    # once: note duel_id, participant_id",
        'ME="--duel-id $DUEL_ID --participant-id $PARTICIPANT_ID"',
        f"moot duel {c('wait')} $ME --timeout-seconds {MAX_WAIT_SECONDS:g}    # waited: your_turn | ended | timed_out",
        f'lock=$(moot duel {c("claim-lock")} $ME --export) && eval "$lock"    # refused: wait again',
        f"moot duel {c('read')} --duel-id $DUEL_ID   # the record: turns, next_speaker, your peer's arguments",
        f"moot duel {c('append')} $ME --file turn.md  # terminal_outcome set? close instead of releasing:",
        f"moot duel {c('release-lock')} $ME           # ... --close --outcome <terminal_outcome>",
        "```",
        "",
        f"{h2} Turn format",
        "",
        "One turn per call, signed with your own name, harness and model (the leading `---` may be left out):",
        "",
        "```markdown",
        render_turn(EXAMPLE_TURN).rstrip("\n"),
        "```",
        "",
        f"- Stance: one of {', '.join(f'`{s.value}`' for s in Stance)}. A stance different from your previous "
        "turn's needs **Stance Revision Support** (as above: bob was `DISSENTING` in Turn 2) citing a turn, the "
        "source, a URL or a principle; on your first turn or with an unchanged stance leave that section empty.",
        "- Position, Counterpoints, Agreements, Novel Argument and Unresolved Items are never empty.",
        "- Every counterpoint has `Addresses:` (`Turn N` or a source section), `Claim:` and `Support:`.",
        "- Support is a URL, the source path with a heading, line or quoted excerpt, `Turn N`, or `Principle: ...`.",
        f"- A quoted excerpt is the source's exact words (case and spacing aside) within {NEAR_LINES} lines of the "
        "line you cite; moot refuses a quote it cannot find there (`CITATION_UNVERIFIED`), and appends "
        "` (verified at PATH:LINE)` to each support item whose quotes it verified, so the record shows more than "
        "you sent. Only quotes in a **Support** list (a counterpoint's, the novel argument's, Stance Revision "
        "Support) are verified; a quote in Position, a Claim, Agreements or Unresolved Items is not checked and is "
        "no evidence, so put what you rely on under Support.",
        "- The novel argument is a claim no earlier turn made, with support.",
        "- Every unresolved item ends with `(blocking)` or `(non-blocking)`.",
        "- `ACCEPTING_CONSENSUS` still brings evidence and names a non-blocking limitation, with no blocking "
        "item. Never accept because the peer is confident, first or authoritative; never repeat an argument.",
        "- Stay on the duel's topic.",
        "",
        f"{h2} Outcomes",
        "",
        "| Outcome | When |",
        "|---------|------|",
        *(f"| `{o.value}` | {OUTCOME_MEANING[o]} |" for o in OutcomeName),
        "",
        "moot computes the first three from the turns; a close with another outcome is refused "
        "(`DUEL_CONCLUSION_INCONSISTENT`). Candidate convergence never ends a duel by itself.",
        "",
        f"{h2} Tools",
        "",
        *_tool_rows(tools),
        "",
        f"{h2} Rules moot enforces",
        "",
        "A refusal lists the ids of the rules it broke.",
        *_rule_rows(RULE_BOOKS),
    ]
    return "\n".join(lines) + "\n"


SKILL = "moot-duel"
SKILL_DESCRIPTION = (
    "Take part in a Socratic duel (two agents, at most six evidence-backed turns, an explicit outcome) through "
    "the moot MCP server, which enforces the rules and writes the debate record. Use when asked to debate, "
    "duel or challenge a Markdown document with another agent."
)


def duel_tools(tools: Sequence[Tool]) -> list[Tool]:
    """The tools of the guide: the duel's own and the shared ones (emit)."""
    from moot.mcp.agent_tools import tool_sets

    names = {mcp_name(protocol, tool) for protocol, found in tool_sets() if protocol in (NAME, None) for tool in found}
    return [tool for tool in tools if tool.name in names]


def host_files(tools: Sequence[Tool]) -> dict[str, str]:
    """The duel's files for agent hosts (moot.hosts): Claude Code's skill and the section for Codex's AGENTS.md."""
    listed = duel_tools(tools)
    skill = "\n".join(["---", f"name: {SKILL}", f"description: {SKILL_DESCRIPTION}", "---", ""])
    agents = [
        "<!-- moot: paste this section into your AGENTS.md; generated by `python -m moot.hosts`. -->",
        "",
        guide(listed, harness="codex", level=2).rstrip("\n"),
        "",
        "<!-- moot: end -->",
        "",
    ]
    return {
        f"claude-code/skills/{SKILL}/SKILL.md": skill + guide(listed, harness="claude-code"),
        "codex/AGENTS.md": "\n".join(agents),
    }
