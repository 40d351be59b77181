"""What moot knows of ACP without the SDK: the coding agents it knows by name, whether each is on
PATH (for ``moot agents``; nothing is started or installed), and the switch that allows writes.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass

ACP_INSTALL = "pip install 'moot[acp]'"
# Set by `moot run --allow-writes`: ACP agents may then edit files and run tools that change things.
ALLOW_WRITES_ENV = "MOOT_ACP_ALLOW_WRITES"


@dataclass(frozen=True)
class KnownAcpAgent:
    command: str  # the program looked up on PATH
    spec: str  # how to name it as a participant
    install: str  # how a user gets it


KNOWN_ACP_AGENTS: tuple[KnownAcpAgent, ...] = (
    KnownAcpAgent("claude-code-acp", "acp:claude-code-acp", "npm install -g @zed-industries/claude-code-acp"),
    KnownAcpAgent("codex-acp", "acp:codex-acp", "npm install -g @zed-industries/codex-acp"),
    KnownAcpAgent("gemini", "acp:'gemini --experimental-acp'", "npm install -g @google/gemini-cli"),
)


def installed_path(agent: KnownAcpAgent) -> str | None:
    return shutil.which(agent.command)
