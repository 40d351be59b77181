"""Supporting files in a duel: source evidence that cites the duel's document may add a quote from another
file (``supporting file `PATH` line N "excerpt"``); the quote is checked against that file, refused when
it is not there, marked when it is, and re-checked by moot check."""

from __future__ import annotations

from pathlib import Path

from tools_helpers import EXAMPLE, EXAMPLE_SOURCE, Cli, start_duel

from moot.detect import check_path

TRUE_QUOTE = '"one global LRU list serves all tenants"'
CODE = "def evict(cache):\n    # one list for every tenant\n    cache.lru.pop_oldest()\n"


def _with_supporting(turn: str, quote: str) -> str:
    return turn.replace(TRUE_QUOTE, f'{TRUE_QUOTE}; supporting file `src/cache.py` line 3 "{quote}"', 1)


def test_a_supporting_quote_is_checked_in_its_own_file(cli: Cli) -> None:
    (cli.root / "src").mkdir()
    (cli.root / "src" / "cache.py").write_text(CODE, encoding="utf-8")
    duel = start_duel(cli)
    lock = duel.claim("alice").ok()
    # A quote that is in the duel's document but not in the supporting file it is cited from is refused.
    wrong_file = _with_supporting(duel.turns[0], "one global LRU list serves all tenants")
    refused = duel.append("alice", lock["lease_token"], duel.write_turn(1, wrong_file)).refused("CITATION_UNVERIFIED")
    assert "src/cache.py" in refused["error"]
    assert duel.artifact_bytes() is None

    appended = duel.append(
        "alice", lock["lease_token"], duel.write_turn(1, _with_supporting(duel.turns[0], "cache.lru.pop_oldest()"))
    )
    assert appended.ok()["turn_number"] == 1
    text = duel.debate_path.read_text(encoding="utf-8")
    # the record names the duel's document relative to itself, as every host sharing the duel reads it
    assert '"cache.lru.pop_oldest()" (verified at ../cache-design.md:42, src/cache.py:3)' in text
    report = check_path(duel.debate_path)
    assert report.exit_code == 0, [str(v) for v in report.violations]
    assert report.summary is not None
    assert report.summary.detail["grounding"] == {"alice": {"cited": 2, "verified": 2, "share": 1.0}}

    # The supporting file changes under moot's mark: an error names it.
    (cli.root / "src" / "cache.py").write_text(CODE.replace("pop_oldest", "pop_lru"), encoding="utf-8")
    changed = [v for v in check_path(duel.debate_path).violations if v.rule == "CITATION_UNVERIFIED"]
    assert [v.severity.value for v in changed] == ["error"] and "src/cache.py" in changed[0].message


def test_a_foreign_record_quoting_a_missing_supporting_file_gets_a_warning(root: Path) -> None:
    source = root / "cache-design.md"
    source.write_text(EXAMPLE.read_text(encoding="utf-8"), encoding="utf-8")  # any text: the quote is elsewhere
    turns = EXAMPLE.read_text(encoding="utf-8").replace(EXAMPLE_SOURCE, str(source))
    record = root / "foreign.md"
    record.write_text(_with_supporting(turns, "cache.lru.pop_oldest()"), encoding="utf-8")
    unverified = [v for v in check_path(record).violations if v.rule == "CITATION_UNVERIFIED"]
    assert ("warning", 1) in [(v.severity.value, v.turn) for v in unverified]
    assert any("src/cache.py is not a readable text file" in v.message for v in unverified)
