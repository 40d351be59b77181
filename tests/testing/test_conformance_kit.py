"""The conformance kit (moot.testing) passes moot's five protocols, run with the scripted participant that gives
a legal turn in any state, and fails a protocol that breaks the contract."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "reliability"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "registry"))
from soak_helpers import scripted_reply
from test_registry_plugin import registered

import moot
from moot.core.files import CheckReport
from moot.errors import Severity
from moot.testing import Scenario, assert_conforms, conformance

SOURCE = "# Shared cache across tenants\n\n## Goals\nIsolation first.\n\n## Eviction\nOne global LRU list.\n"
MEMBERS = [["ada", "script:x"], ["bo", "script:x"], ["cy", "script:x"]]
BUILT_INS: dict[str, tuple[dict[str, Any], str]] = {
    "critique": ({"protocol": "critique", "topic": "Adopt a monorepo", "max_rounds": 2}, "DONE"),
    "duel": ({"protocol": "duel", "source": "design.md"}, "ACCEPTED_CONSENSUS"),
    "agora": ({"protocol": "agora", "topic": "Adopt a monorepo", "max_turns": 12}, "CONSENSUS"),
    "roundtable": (
        {"protocol": "roundtable", "topic": "Cache design", "speakers": ["a", "b"], "max_rounds": 1},
        "closed",
    ),
    "council": ({"protocol": "council", "question": "Share one cache?", "members": MEMBERS, "seed": 5}, "SYNTHESIZED"),
    # Two of three members agree: a vote at a threshold of two thirds, a council when it must be unanimous.
    "auto-voted": ({"protocol": "auto", "question": "Weeks?", "members": MEMBERS, "agree": "2/3"}, "VOTED"),
    "auto-escalated": ({"protocol": "auto", "question": "Weeks?", "members": MEMBERS, "seed": 5}, "SYNTHESIZED"),
}


def scenario(protocol: str) -> Scenario:
    spec, outcome = BUILT_INS[protocol]
    return Scenario(protocol, spec, scripted_reply, outcome, files={"design.md": SOURCE})


@pytest.mark.parametrize("protocol", sorted(BUILT_INS))
def test_each_built_in_protocol_conforms(protocol: str, tmp_path: Path) -> None:
    assert_conforms(scenario(protocol), tmp_path)


def test_a_run_that_ends_otherwise_is_named(tmp_path: Path) -> None:
    spec, _ = BUILT_INS["critique"]
    problems = conformance(Scenario("critique", spec, scripted_reply, "MAX_ROUNDS"), tmp_path)
    assert problems == ["the run ended in DONE, not MAX_ROUNDS"]


def test_a_record_check_blind_to_edits_fails_the_kit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from moot.protocols.critique import record

    def blind(path: Path) -> CheckReport:  # reports the chain's findings as warnings: nothing is an error
        report = record.check(path)
        return report.model_copy(
            update={"violations": [v.model_copy(update={"severity": Severity.WARNING}) for v in report.violations]}
        )

    monkeypatch.setattr(record, "FORMAT", dataclasses.replace(record.FORMAT, check=blind))
    problems = conformance(scenario("critique"), tmp_path)
    assert problems == [
        "moot check finds a record valid after a letter of its last turn was changed",
        "moot check finds a record valid after its last turn was cut in half",
    ]


def test_a_reading_hook_that_raises_on_a_damaged_record_fails_the_kit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from moot.protocols.critique import analysis

    read = analysis.ANALYSIS.decision
    assert read is not None

    def decision(path: Path) -> Any:
        if not path.read_text(encoding="utf-8").rstrip().endswith("-->"):  # a cut record ends mid-turn
            raise IndexError("list index out of range")
        return read(path)

    monkeypatch.setattr(analysis, "ANALYSIS", dataclasses.replace(analysis.ANALYSIS, decision=decision))
    problems = conformance(scenario("critique"), tmp_path)
    assert problems == ["the decision hook raised IndexError('list index out of range') on a cut record"]


def test_a_plugin_protocol_uses_the_kit_from_its_own_tests(tmp_path: Path) -> None:
    """The pingpong package (tests/registry/plugin) runs the kit in a process where only its entry point registers
    it: the rally conforms but for tamper evidence, which its whole-file record does not keep."""
    site = tmp_path / "site"
    env = registered(site)
    code = (
        "import json, sys; from pathlib import Path; from moot.testing import Scenario, conformance\n"
        "words = {'ping': ['{\"word\": \"ping\"}'] * 2, 'pong': ['{\"word\": \"pong\"}'] * 2}\n"
        "rally = Scenario('rally', {'protocol': 'pingpong', 'topic': 'Warm up'}, words, 'RALLY', turns=4)\n"
        "print(json.dumps(conformance(rally, Path(sys.argv[1]))))\n"
    )
    clean = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    here = str(Path(moot.__file__).resolve().parents[1])  # this moot, installed or not
    done = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path / "kit")],
        env={**clean, "PYTHONPATH": os.pathsep.join([here, env["PYTHONPATH"]])},
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == [
        "the record carries no chain mark, so an edited turn cannot be told from a written one "
        "(the digest chain in moot.plugin: docs/plugins.md)"
    ]


def test_an_agent_tool_refusing_with_a_misspelt_rule_id_fails_the_kit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from moot import registry
    from moot.plugin import Ref

    tools = tmp_path / "misspelt_tools.py"
    tools.write_text(
        "from moot.errors import Refused\n\n\ndef submit() -> None:\n"
        "    raise Refused('wait for your turn.', rule='CRITIQUE_TRUN_ORDER')\n",
        encoding="utf-8",
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    get = registry.get

    def with_misspelt_tools(name: str) -> Any:
        found = get(name)
        return dataclasses.replace(found, tools=Ref("misspelt_tools:TOOLS")) if name == "critique" else found

    monkeypatch.setattr(registry, "get", with_misspelt_tools)
    problems = conformance(scenario("critique"), tmp_path / "kit")
    assert problems == [
        "the agent tools (misspelt_tools.py:5) refuse with rule id CRITIQUE_TRUN_ORDER, which no rule book "
        "declares; declare it in the protocol's rules or correct the id"
    ]
