"""The Auto record as ``moot check`` reads it: the documented example, and sections past the most a run can hold."""

from __future__ import annotations

import re
from pathlib import Path

from moot.core.machine import TURNS_PAST_THE_END
from moot.detect import check_path

DOC = Path(__file__).parents[2] / "docs" / "formats.md"


def documented(tmp_path: Path) -> Path:
    fenced = re.findall(r"^````markdown\n(.*?)^````$", DOC.read_text(encoding="utf-8"), re.MULTILINE | re.DOTALL)
    (block,) = [block for block in fenced if block.startswith("# Auto:")]
    path = tmp_path / ".auto" / "weekly-backups.md"
    path.parent.mkdir()
    # Without its mark, as a record another tool wrote: the example's chain sidecar is not in the docs.
    path.write_text(re.sub(r"^<!-- moot-chain .*-->\n", "", block, flags=re.MULTILINE), encoding="utf-8")
    return path


def test_the_documented_example_checks_clean(tmp_path: Path) -> None:
    report = check_path(documented(tmp_path))
    assert report.violations == [] and report.summary is not None and report.summary.status == "VOTED"


def test_sections_past_the_most_a_run_can_hold_are_named_not_skipped(tmp_path: Path) -> None:
    path = documented(tmp_path)
    text = path.read_text(encoding="utf-8")
    stage = text[text.index("## Stage 1 — Answer of smol") : text.index("## Vote")]
    extra = TURNS_PAST_THE_END + 20  # far more than a council of three can hold (3 answers, 3 reviews, synthesis)
    path.write_text(text.replace("## Vote", stage * extra + "## Vote"), encoding="utf-8")
    report = check_path(path)
    rest = [v for v in report.errors if "more sections, from this line on" in v.message]
    assert len(rest) == 1 and rest[0].rule == "COUNCIL_STAGE_ORDER" and rest[0].line is not None
