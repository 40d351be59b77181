"""The slash command that asks other models for a critique of the current plan or change: the Claude Code
plugin's ``/moot:critique`` and Codex's ``/prompts:moot-critique``. It starts a Critique Loop in the moot MCP
server with ``start_debate`` and follows it with ``debate_status`` and ``debate_result``; the tool names are checked
against the server's own list, so a renamed tool fails generation instead of drifting.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from moot.protocols.critique.machine import TEMPLATES

if TYPE_CHECKING:  # the MCP SDK is an extra: the guide reads only the names of the tools it is given
    from mcp_types import Tool

DESCRIPTION = (
    "Have other models critique the current plan or change in a moot Critique Loop (rules enforced, record kept)."
)
ARGUMENT_HINT = "[what to critique, and optionally which models]"
WAIT_SECONDS = 60  # one debate_status call waits at most this long: below the usual client timeouts


def body(tools: Sequence[Tool]) -> str:
    """The command's instructions (the host puts the user's words where ``$ARGUMENTS`` stands)."""
    names = {tool.name for tool in tools}

    def t(name: str) -> str:
        if name not in names:
            raise KeyError(f"the MCP server has no tool {name!r}")
        return f"`{name}`"

    templates = ", ".join(f"`{name}` ({first}, {second})" for name, (first, second, _) in TEMPLATES.items())
    lines = [
        "Get a critique from other models through the `moot` MCP server, which runs a Critique Loop between two "
        "roles, enforces its rules and keeps the record. What to critique: $ARGUMENTS",
        "",
        "1. **Gather the material.** If the request above names something, use that. Otherwise use the plan you are "
        "working on; if there is none, the current change (`git diff HEAD`, and `git status --short` for new "
        "files). Keep it to what a reviewer needs.",
        f'2. **Start.** Call {t("start_debate")} with `protocol: "critique"`, a one-line `topic` naming what is '
        'critiqued, and `options: {"template": …, "context": <the material>}` — `planning` for a plan, `review` '
        f"for a change (the templates and their roles: {templates}; the context goes to the first role). Leave "
        "`agents` empty to use the project's moot.toml, or pass the models the user named (e.g. `agents: "
        '"openai:gpt-4o-mini"`, or `agent: {"reviewer": "anthropic:claude-sonnet-4"}`). A refusal is one '
        "sentence naming the fix: fix the call and start again.",
        f"3. **Follow it.** Call {t('debate_status')} with the returned `debate_id` and `wait_seconds: "
        f"{WAIT_SECONDS}` while `state` is `running`; tell the user briefly as turns land (`turns`, "
        "`next_speaker`, `last_event`). To stop early, call "
        f"{t('cancel_debate')}.",
        f"4. **Report.** Call {t('debate_result')}: give the `outcome` and its `reason`, the reviewer's points that "
        "still stand, and the `record` path (the whole dialogue). If `state` is `halted`, say why (`reason`) and "
        "that `moot resume <record>` continues it.",
        "5. **Do not change anything yet.** Propose what to change in the plan or the code, and ask before you do.",
        "",
    ]
    return "\n".join(lines)


def command(tools: Sequence[Tool]) -> str:
    """The command file: Claude Code's plugin commands and Codex's custom prompts read the same front matter."""
    front = ["---", f"description: {DESCRIPTION}", f"argument-hint: {ARGUMENT_HINT}", "---", ""]
    return "\n".join(front) + body(tools)


def host_files(tools: Sequence[Tool]) -> dict[str, str]:
    """The critique's files for agent hosts (moot.hosts): Claude Code's ``/moot:critique`` command and Codex's
    custom prompt, one text."""
    text = command(tools)
    return {"claude-code/commands/critique.md": text, "codex/prompts/moot-critique.md": text}
