"""An agent tool given a subject too long for a deliberation: a duel joined with a huge topic is refused in one
sentence that names the limit, and no debate is opened."""

from __future__ import annotations

from tools_helpers import ALICE, Cli, join, write_source

from moot.limits import MAX_SUBJECT_CHARS


def test_joining_with_a_topic_over_the_limit_is_refused_and_opens_no_debate(cli: Cli) -> None:
    source = write_source(cli.root)
    refused = join(cli, source, ALICE, topic="cache " * (MAX_SUBJECT_CHARS // 6 + 1)).refused("TOOLS_BAD_INPUT", 2)
    assert f"limit of {MAX_SUBJECT_CHARS:,} for a topic" in refused["error"]
    assert not any((cli.root / "debates").glob("*.md"))
