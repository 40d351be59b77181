"""start_debate's arguments: a subject the protocol does not take gets one sentence that names the fix."""

from __future__ import annotations

from pathlib import Path

import pytest

from moot.errors import UserError
from moot.mcp.run_tools import debate_spec


@pytest.mark.parametrize(("protocol", "sentence"), [("agora", "an agora debate"), ("duel", "a duel debate")])
def test_a_subject_of_another_protocol_is_refused_in_plain_english(
    tmp_path: Path, protocol: str, sentence: str
) -> None:
    with pytest.raises(UserError, match=f"^{sentence} takes no question; give its "):
        debate_spec(tmp_path, protocol, {"question": "Should we?"}, {}, {}, "")
