"""The duel's text as agents hand it over: one turn in §TURN_MARKDOWN form, and the names that go into
the artifact. Both are read with the artifact's own parser (``moot.protocols.duel.record.parse_document``), over a
synthetic artifact whose header moot renders, so a turn is accepted here exactly when it would read back
from the record.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence

from moot.errors import BadInput, Refused, Violation
from moot.ledger import Debate
from moot.ledger import Participant as LedgerParticipant
from moot.protocols.duel.machine import DuelConfig, DuelTurn, Participant, Stance
from moot.protocols.duel.record import DuelRecord, parse_document, render, render_header
from moot.tools.errors import refused_by, shown

_RULE_LINE = re.compile(r"^\s*-{3,}\s*$")
_TURN_HEADING = re.compile(r"^#{2,6}\s+Turn\b", re.IGNORECASE)
MAX_NAME_CHARS = 200


def record_time(iso: str) -> str:
    """The ledger's ``2026-04-25T10:00:00.000000Z`` as the artifact writes it: ``2026-04-25T10:00:00Z``."""
    return f"{iso[:19]}Z" if len(iso) >= 19 else iso


def duel_config(debate: Debate) -> DuelConfig:
    return DuelConfig(
        duel_id=debate.id,
        source_path=debate.source_path,
        topic=debate.topic,
        topic_slug=debate.topic_slug,
        created=record_time(debate.created_at),
    )


def table_participant(participant: LedgerParticipant) -> Participant:
    return Participant(
        name=participant.name,
        harness=participant.harness,
        model=participant.model,
        joined=record_time(participant.joined_at),
    )


def check_names(config: DuelConfig, participant: Participant) -> None:
    """Refuse a topic, source path or identity that the artifact could not hold and read back exactly."""
    for label, value in (
        ("topic", config.topic),
        ("participant name", participant.name),
        ("harness", participant.harness),
        ("model id", participant.model),
        ("source path", config.source_path),
    ):
        if label != "source path" and (len(value) > MAX_NAME_CHARS or not value.strip()):
            raise BadInput(
                f"The {label} must be 1 to {MAX_NAME_CHARS} characters; pass a shorter, non-empty one.",
                rule="TOOLS_UNSAFE_NAME",
            )
        if any(unicodedata.category(ch) in {"Cc", "Cf", "Zl", "Zp"} for ch in value):
            raise BadInput(
                f"The {label} {shown(value)!r} holds a line break or control character; pass it on one line.",
                rule="TOOLS_UNSAFE_NAME",
            )
    if "|" in participant.name + participant.harness + participant.model:
        raise BadInput("Participant names, harnesses and model ids cannot hold '|'; drop it.", rule="TOOLS_UNSAFE_NAME")
    probe = DuelTurn(
        number=1,
        participant=participant.name,
        harness=participant.harness,
        model=participant.model,
        stance=Stance.OPEN_TO_DEBATE.value,
        position="p",
        novel_argument="n",
    )
    stamp = "2026-01-01T00:00:00Z"  # any time: only the names are probed
    record = DuelRecord(
        config=config.model_copy(update={"created": stamp}),
        participants=[participant.model_copy(update={"joined": stamp})],
        turns=[probe],
    )
    document, problems = parse_document(render(record))
    if document is None or document.record != record or any(v.is_error for v in problems):
        raise BadInput(
            f"The artifact cannot hold topic {config.topic!r} with participant {participant.name!r} "
            f"({participant.harness} / {participant.model}) and read them back; use names without '(', ')', "
            "'—' or Markdown markup, and a harness without '/'.",
            rule="TOOLS_UNSAFE_NAME",
        )


def _relocated(violation: Violation, offset: int, file: str) -> Violation:
    line = violation.line - offset if violation.line is not None and violation.line > offset else None
    return violation.model_copy(update={"file": file, "line": line, "turn": None})


def parse_turn(text: str, config: DuelConfig, participants: Sequence[Participant], *, file: str) -> DuelTurn:
    """The one turn in ``text`` (§TURN_MARKDOWN), or a refusal whose violations point into ``file``.

    The leading ``---`` may be left out. Content rules (sections, support, stances, alternation) are the
    protocol's and are checked when the turn is appended.
    """
    lines = text.removeprefix("\ufeff").replace("\r\n", "\n").replace("\r", "\n").split("\n")
    skipped = 0
    while skipped < len(lines) and not lines[skipped].strip():
        skipped += 1
    body = lines[skipped:]
    if not body or not (_RULE_LINE.match(body[0]) or _TURN_HEADING.match(body[0])):
        raise Refused(
            f"{file} must start with '---' and the heading '## Turn N — name (harness / model) — STANCE'; "
            "write the turn in the §TURN_MARKDOWN form.",
            rule="TOOLS_TURN_FILE",
        )
    prefix = [] if _RULE_LINE.match(body[0]) else ["---", ""]
    header = render_header(DuelRecord(config=config, participants=list(participants)))
    synthetic = header + "\n" + "\n".join([*prefix, *body])
    # Line k of the turn file is line k + offset of the synthetic artifact.
    offset = header.count("\n") + 1 + len(prefix) - skipped
    document, problems = parse_document(synthetic, file)
    errors = [_relocated(v, offset, file) for v in problems if v.is_error]
    if errors:
        raise refused_by(errors)
    if document is None:  # pragma: no cover - a document with no errors always parses
        raise Refused(
            f"{file} could not be read as a turn; write it in the §TURN_MARKDOWN form.", rule="TOOLS_TURN_FILE"
        )
    count = len(document.record.turns)
    if count != 1 or document.record.conclusion is not None:
        what = "a Terminal Conclusion" if document.record.conclusion is not None else f"{count} turns"
        raise Refused(
            f"{file} holds {what}; put exactly one turn in it (close the duel with release-lock --close).",
            rule="TOOLS_TURN_FILE",
        )
    return document.record.turns[0]
