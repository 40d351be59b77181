"""Reading an interrupted debate back so that it can go on: ``moot resume`` and the MCP ``resume_debate`` tool
both call :func:`resumable` before the engine continues it.

A record the ledger shares across hosts is continued through the agent tools, never by an engine appending to
this host's copy; a torn append (a crash in the middle of one) is set aside first; a limit the debate ended at
is raised where its protocol allows it; a debate that has ended has nothing to resume.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path

from moot import registry
from moot.core import ledger_place
from moot.core.run_state import with_record
from moot.core.torn import set_aside_torn_append
from moot.detect import detect
from moot.engine.driver import Driver
from moot.engine.sealed import open_phase
from moot.errors import UserError


def resumable(
    record: Path,
    root: Path,
    shown: str,
    *,
    context: str | None = None,
    raised: Mapping[str, int] | None = None,
    note: Callable[[str], None] = lambda _: None,
) -> Driver:
    """The driver of the interrupted debate at ``record`` (work root ``root``), ready to go on; a debate that
    cannot go on is one sentence naming ``shown`` (how the caller named the record). ``context`` goes to the first
    role (a critique's); ``raised`` limits (``max_rounds``, ``max_turns``) are raised first; ``note`` hears what
    was repaired on the way."""
    protocol, target, report = detect(record)
    if report is not None or protocol is None:
        problem = report.violations[0].message if report is not None and report.violations else "unknown format"
        raise UserError(f"cannot resume {shown}: {problem}")
    driver_class = registry.get(protocol).driver.load()
    for option in raised or {}:
        refusal = driver_class.limit_refusal(option)
        if refusal is not None:
            raise UserError(f"cannot raise the limit of {shown}: {with_record(refusal, shown)}")
    if ledger_place.configured(root):  # only then is the ledger imported and asked
        from moot.tools.shared_record import shared_turns

        shared = shared_turns(protocol, target, root)
        if shared is not None:
            raise UserError(
                f"{shown} is shared through the moot ledger and is now as the ledger holds it; its participants "
                f"take their turns with {shared}, not a resume."
            )
    set_aside = set_aside_torn_append(target, registry.get(protocol).record.load().check)
    if set_aside is not None:
        note(set_aside)
    driver = driver_class.resume(target, context=context)
    if driver.repaired_chain:
        note(f"brought the digest chain of {shown} up to date with its turns.")
    for option, value in (raised or {}).items():
        driver.raise_limit(option, value)
    if driver.next_speaker() is None and open_phase(driver) is None:
        outcome = driver.outcome()
        reason = with_record(outcome.reason, shown) if outcome is not None else ""
        ended = f"it ended with {outcome.name} ({reason})" if outcome is not None else "it has ended"
        advice = "" if "`moot " in reason else "; start a new debate instead"  # else the reason names the command
        raise UserError(f"nothing to resume in {shown}: {ended}{advice}.")
    return driver
