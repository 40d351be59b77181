"""Each host's record file, written from the ledger: the ledger holds the debate, the file is its view.

The ledger stores every accepted turn's exact text, the participants, the header's facts and the
conclusion as the record writes it. Whenever a tool touches a debate, the host's record file is brought up
to date from one snapshot of the ledger: rendered in the seed's own format (the same bytes on every host),
written atomically (temporary file, fsync, rename), then its chain sidecar. A write happens only when the
file is behind; two processes of one host never write it out of order (they take turns on a lock of the
record's folder and never replace a file with an older snapshot).

A file is never overwritten when its accepted turns disagree with the ledger (an outside edit): that is
reported, as before, as ``PRIOR_TURN_MODIFIED`` or ``PRIOR_TURN_REMOVED``. A turn recorded by an older moot
has only its digest in the ledger; its text is then taken from the local file, checked against the digest.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from moot.core.chain import ChainMark, read_chain, record_chain, turn_digest
from moot.core.files import MAX_ARTIFACT_BYTES, atomic_write_text, folder_lock, read_text, too_large
from moot.errors import ProtocolViolationError, Refused
from moot.ledger import DebateRecord
from moot.protocols.duel import record
from moot.protocols.duel.machine import DuelConclusion, DuelConfig, DuelTurn, Participant
from moot.protocols.duel.record import DuelDocument, DuelRecord
from moot.protocols.duel.text import duel_config, table_participant


@dataclass(frozen=True)
class SharedDuel:
    """A duel as the ledger holds it, read with the record's own parser."""

    config: DuelConfig
    table: list[Participant]
    texts: list[str]
    """Each accepted turn's exact text."""
    turns: list[DuelTurn]
    conclusion_text: str
    conclusion: DuelConclusion | None

    def record(self) -> DuelRecord:
        return DuelRecord(config=self.config, participants=self.table, turns=self.turns, conclusion=self.conclusion)

    def render(self, path: Path) -> str:
        """The record file's text; refused (``ProtocolViolationError``) unless it reads back exactly."""
        mark = ChainMark.of(self.texts)
        text = record.rendered(path, self.record(), self.texts, self.conclusion_text, mark)[0]
        size = len(text.encode("utf-8"))
        if size > MAX_ARTIFACT_BYTES:  # refused before the ledger accepts what no host could write
            raise ProtocolViolationError([too_large(str(path), size, writing=True)])
        return text

    def with_turn(self, text: str, turn: DuelTurn) -> SharedDuel:
        return SharedDuel(
            self.config, self.table, [*self.texts, text], [*self.turns, turn], self.conclusion_text, self.conclusion
        )


def local_document(path: Path) -> DuelDocument | None:
    """The host's record at ``path`` if it exists and parses (an unreadable one is left to the callers)."""
    if not path.is_file() or path.is_symlink():
        return None
    text, _ = read_text(path)
    return None if text is None else record.parse_document(text, str(path))[0]


def shared_duel(found: DebateRecord, local: DuelDocument | None, *, where: str) -> SharedDuel:
    """The duel of the ledger snapshot ``found``; ``local`` supplies the text of turns an older moot recorded."""
    config = duel_config(found.debate)
    table = [table_participant(p) for p in found.participants]
    local_texts = local.turn_texts if local is not None else []
    texts: list[str] = []
    for turn in found.turns:
        if turn.body is not None:
            texts.append(turn.body)
        elif turn.turn <= len(local_texts) and turn_digest(local_texts[turn.turn - 1]) == turn.digest:
            texts.append(local_texts[turn.turn - 1])
        else:
            raise Refused(
                f"The text of turn {turn.turn} of {where} is only in the record of the host that wrote it (an older "
                "moot stored its digest alone); the next append or close on that host stores it, so take the turn there.",
                rule="TOOLS_TURN_TEXT_MISSING",
            )
    tail = ""
    if found.conclusion is not None:
        tail = found.conclusion.body or (local.conclusion_text if local is not None else "")
    header = record.render_header(DuelRecord(config=config, participants=table))
    document, _ = record.parse_document("\n\n".join(part.rstrip() for part in (header, *texts, tail) if part.strip()))
    if document is None or len(document.record.turns) != len(texts):
        raise Refused(f"The ledger's turns of {where} do not read back as a duel; close it as INVALIDATED.")
    return SharedDuel(config, table, texts, document.record.turns, tail, document.record.conclusion)


def agrees(local: DuelDocument, ledger_texts: Sequence[str]) -> bool:
    """The local record's accepted turns are a prefix of the ledger's (so it is only behind, not edited)."""
    mine = local.turn_texts
    claimed = local.chain_mark.turns if local.chain_mark is not None else 0
    return (
        len(mine) <= len(ledger_texts)
        and claimed <= len(mine)
        and all(a == b for a, b in zip(mine, ledger_texts, strict=False))
    )


def _progress(document: DuelDocument | None) -> tuple[int, bool, int]:
    if document is None:
        return (0, False, 0)
    parsed = document.record
    return (len(document.turn_texts), parsed.conclusion is not None, len(parsed.participants))


def sync_duel(path: Path, found: DebateRecord) -> bool:
    """Bring the record file at ``path`` up to date with the ledger snapshot ``found``; True when it wrote.

    Nothing is written before the first turn or conclusion, nor over a file that is unreadable, disagrees
    with the ledger (an outside edit, left for ``moot check`` and the next guarded write to report), or
    already holds as much as the snapshot.
    """
    if not found.turns and found.conclusion is None:
        return False
    path.parent.mkdir(parents=True, exist_ok=True)
    with folder_lock(path.parent):
        if path.is_symlink() or (path.exists() and not path.is_file()):
            return False
        local = local_document(path)
        if path.exists() and local is None:
            return False
        wanted = shared_duel(found, local, where=str(path))
        if local is not None and not agrees(local, wanted.texts):
            return False
        target = (len(wanted.texts), wanted.conclusion is not None, len(wanted.table))
        text = wanted.render(path)
        current = path.read_bytes() if local is not None else None
        if current == text.encode("utf-8"):
            chain, _ = read_chain(path)
            if chain is None or len(chain) != len(wanted.texts):
                record_chain(path, wanted.texts)  # a crash between the record and its chain
            return False
        if local is not None and _progress(local) > target:
            return False  # a newer snapshot was written meanwhile
        atomic_write_text(path, text)
        record_chain(path, wanted.texts)
        return True
