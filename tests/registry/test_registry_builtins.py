"""moot's own protocols come from the registry like any plugin, and what they share is written once."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from pydantic import ValidationError

from moot import registry, tools
from moot.core.files import CheckReport
from moot.core.machine import DeliberationProtocol, RuleBook
from moot.detect import check_path
from moot.engine.driver import Driver
from moot.errors import UserError
from moot.protocols.duel import tools as duel
from moot.protocols.duel.driver import DuelDriver, DuelOptions
from moot.protocols.duel.machine import MAX_TURNS, DuelConfig

BUILT_IN = ["agora", "auto", "council", "critique", "duel", "roundtable"]


def test_the_built_in_protocols_are_registered_through_entry_points() -> None:
    assert list(registry.protocols())[: len(BUILT_IN)] == BUILT_IN
    folders = [plugin.folder for plugin in registry.protocols().values()]
    assert len(set(folders)) == len(folders)
    assert registry.folders() >= {".dialogues", "debates", ".agora", ".roundtable", ".council", ".auto"}


@pytest.mark.parametrize("name", BUILT_IN)
def test_every_part_a_plugin_names_resolves_to_what_the_contract_says(name: str) -> None:
    plugin = registry.get(name)
    books = [ref.load() for ref in plugin.rules]
    assert books and all(isinstance(book, RuleBook) for book in books)
    assert issubclass(plugin.machine.load(), DeliberationProtocol)
    driver = plugin.driver.load()
    assert issubclass(driver, Driver) and driver.protocol == name
    assert callable(plugin.command.load()) and callable(plugin.record.load().check)
    assert all(ref.load() is not None for ref in plugin.references())


def test_an_unknown_protocol_is_one_sentence_naming_the_known_ones() -> None:
    with pytest.raises(
        UserError, match=r"protocol 'chess' is unknown; use one of agora, auto, council, critique, duel, roundtable"
    ):
        registry.get("chess")


def test_a_record_in_no_protocols_format_names_every_title(tmp_path: Path) -> None:
    stray = tmp_path / "notes.md"
    stray.write_text("# Notes\n", encoding="utf-8")
    report: CheckReport = check_path(stray)
    message = report.violations[0].message
    assert report.exit_code == 2
    assert all(plugin.title in message for plugin in registry.protocols().values() if plugin.title)


FENCED_SOURCE = "```bash\n# install the cache\npip install cache\n```\n\n# Shared cache across tenants\n\nBody.\n"


def test_engine_and_agent_tools_infer_the_same_topic_past_a_fenced_block(tmp_path: Path) -> None:
    """A '#' line inside fenced code is not a heading: both take the first real heading."""
    source = tmp_path / "design.md"
    source.write_text(FENCED_SOURCE, encoding="utf-8")
    driver = DuelDriver.start(tmp_path, DuelOptions(source=source, models=("m", "m")), "2026-05-01 10:00")
    assert isinstance(driver, DuelDriver)
    with tools.open_workspace(tmp_path) as ws:
        joined = duel.join(ws, target=source, topic=None, participant_name="alice", harness="codex", run_id="r")
    assert driver.config.topic == joined.topic == "Shared cache across tenants"


def test_duel_config_enforces_the_seeds_six_turn_cap(tmp_path: Path) -> None:
    assert MAX_TURNS == 6
    with pytest.raises(ValidationError, match="less than or equal to 6"):
        DuelConfig(duel_id="d", source_path="s.md", topic="t", topic_slug="t", max_turns=7)
    source = tmp_path / "s.md"
    source.write_text("# T\n", encoding="utf-8")
    with pytest.raises(UserError, match=r"--max-turns 7 is outside 2\.\.6"):
        DuelDriver.start(tmp_path, DuelOptions(source=source, max_turns=7), "2026-05-01 10:00")


def test_a_duel_record_claiming_more_than_six_turns_is_a_metadata_error(tmp_path: Path) -> None:
    valid = Path(__file__).resolve().parents[1] / "duel" / "examples" / "valid" / "consensus-six-turns.md"
    record = tmp_path / "debates" / "d.md"
    record.parent.mkdir()
    text = valid.read_text(encoding="utf-8")
    assert "| Max Turns | 6 |" in text
    record.write_text(text.replace("| Max Turns | 6 |", "| Max Turns | 8 |"), encoding="utf-8")
    report = check_path(record)
    assert report.exit_code == 1
    assert any(v.rule == "DUEL_METADATA" and "'8'" in v.message for v in report.violations)


def test_the_cli_starts_without_importing_any_protocol() -> None:
    """Entry points load plain data; a protocol's modules load only when one of its commands runs."""
    probe = (
        "import sys, moot.cli; "
        "print(sorted(m for m in sys.modules if m.rsplit('.', 1)[-1] in {'critique', 'duel', 'agora', 'roundtable'}))"
    )
    loaded = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=120)
    assert loaded.stdout.strip() == "[]"
