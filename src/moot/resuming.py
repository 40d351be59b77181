"""Reading an interrupted debate back so that it can go on: what the MCP ``resume_debate`` tool does before the
runner continues it, with ``moot resume``'s rules.

A record the ledger shares across hosts is continued through the agent tools, never by an engine appending to
this host's copy; a torn append (a crash in the middle of one) is set aside first; a debate that has ended has
nothing to resume.
"""

from __future__ import annotations

from pathlib import Path

from moot import registry
from moot.core.torn import set_aside_torn_append
from moot.detect import detect
from moot.engine.driver import Driver
from moot.engine.sealed import open_phase
from moot.errors import UserError
from moot.tools.shared_record import shared_turns


def resumable(record: Path, root: Path, shown: str) -> Driver:
    """The driver of the interrupted debate at ``record`` (work root ``root``), ready to go on; a debate that
    cannot go on is one sentence naming ``shown`` (how the caller named the record)."""
    protocol, target, report = detect(record)
    if report is not None or protocol is None:
        problem = report.violations[0].message if report is not None and report.violations else "unknown format"
        raise UserError(f"cannot resume {shown}: {problem}")
    shared = shared_turns(protocol, target, root)
    if shared is not None:
        raise UserError(f"{shown} is shared through the moot ledger; its participants take their turns with {shared}.")
    set_aside_torn_append(target, registry.get(protocol).record.load().check)
    driver = registry.get(protocol).driver.load().resume(target)
    if driver.next_speaker() is None and open_phase(driver) is None:
        outcome = driver.outcome()
        ended = f"it ended with {outcome.name} ({outcome.reason})" if outcome is not None else "it has ended"
        raise UserError(f"nothing to resume in {shown}: {ended}; start a new debate instead.")
    return driver
