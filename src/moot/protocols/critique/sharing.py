"""Each host's critique dialogue file, written from the ledger: the critique loop's counterpart of
:mod:`moot.protocols.duel.sharing`.

A dialogue is one file that only grows: its header, then each turn appended after a separator. The
ledger holds the text before the first turn (the debate's opening) and, for each accepted turn, its exact
text with what lies between it and the turn before (``before``) and what followed it when it was written
(``after``, used for the last turn only). Every host joins them into the same bytes. A sync writes the
whole file atomically, then its chain sidecar, and only over a file whose header and accepted turns are
the ledger's (an outside edit is left for ``moot check`` and the next guarded append to report).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from moot.core.chain import read_chain, record_chain, turn_digest
from moot.core.files import atomic_write_text, folder_lock, read_text
from moot.errors import Refused
from moot.ledger import DebateRecord
from moot.protocols.critique import record as dialogue

Piece = tuple[str, str]
"""One accepted turn in the file: (the text before it, its exact text)."""


@dataclass(frozen=True)
class DialogueText:
    """A dialogue file cut at its turns: ``opening + Σ(before + turn) + tail`` is the whole text."""

    opening: str
    pieces: tuple[Piece, ...]
    tail: str

    @property
    def texts(self) -> list[str]:
        return [text for _, text in self.pieces]

    @property
    def text(self) -> str:
        return self.opening + "".join(before + text for before, text in self.pieces) + self.tail

    def layouts(self, file: str) -> list[str]:
        """Each turn's ``files`` for the ledger (the last one with the tail)."""
        last = len(self.pieces)
        return [
            turn_files(file, before, self.tail if n == last else "") for n, (before, _) in enumerate(self.pieces, 1)
        ]


def cut(text: str) -> DialogueText:
    """``text`` cut at the turns the record's parser finds (each turn's exact text, in order)."""
    pieces: list[Piece] = []
    cursor, start = 0, None
    for source in dialogue.turn_sources(text):
        found = text.find(source.text, cursor)
        if found < 0:  # pragma: no cover - a turn's text is a slice of the record
            raise ValueError("a turn's text is not in the record")
        if start is None:
            start = found
        pieces.append((text[cursor:found] if pieces else "", source.text))
        cursor = found + len(source.text)
    if start is None:
        return DialogueText(text, (), "")
    return DialogueText(text[:start], tuple(pieces), text[cursor:])


def opening_files(file: str, opening: str) -> str:
    return json.dumps({file: opening}, ensure_ascii=False, sort_keys=True)


def turn_files(file: str, before: str, after: str) -> str:
    return json.dumps({"file": file, "before": before, "after": after}, ensure_ascii=False, sort_keys=True)


def local_text(path: Path) -> str | None:
    """The dialogue file's text, if it exists and can be read."""
    if path.is_symlink() or not path.is_file():
        return None
    text, _ = read_text(path)
    return text


def shared_dialogue(found: DebateRecord, local: str | None, *, where: Path) -> DialogueText | None:
    """The dialogue of the ledger snapshot ``found``; ``local`` supplies what an older moot kept only on disk.

    ``None`` when the ledger does not hold the dialogue's opening (it was claimed by an older moot).
    """
    if found.opening is None:
        return None
    opening = json.loads(found.opening).get(where.name)
    mine = cut(local) if local is not None else None
    pieces: list[Piece] = []
    tail = ""
    for turn in found.turns:
        files = json.loads(turn.files) if turn.files is not None else None
        ours = mine.pieces[turn.turn - 1] if mine is not None and turn.turn <= len(mine.pieces) else None
        text = turn.body
        if text is None and ours is not None and turn_digest(ours[1]) == turn.digest:
            text = ours[1]
        if text is None or (files is None and ours is None) or opening is None:
            raise Refused(
                f"Turn {turn.turn} of {where} is only in the file of the host that wrote it (an older moot stored "
                "its digest alone); the next append on that host stores it, so append there.",
                rule="TOOLS_TURN_TEXT_MISSING",
            )
        before = files["before"] if files is not None else ours[0] if ours is not None else ""
        pieces.append((before, text))
        tail = files["after"] if files is not None else mine.tail if mine is not None else ""
    if opening is None:
        return None
    return DialogueText(opening, tuple(pieces), tail)


def _max_rounds(opening: str) -> int | None:
    found, _ = dialogue.parse(opening)
    return found.config.max_rounds if found is not None else None


def header_behind(local: str, wanted: str) -> bool:
    """The local header is the ledger's, or the ledger's before its round limit was raised (an extension)."""
    if local == wanted:
        return True
    mine, theirs = _max_rounds(local), _max_rounds(wanted)
    return (
        mine is not None and theirs is not None and mine < theirs and dialogue.with_max_rounds(local, theirs) == wanted
    )


def agrees(local: DialogueText, wanted: DialogueText) -> bool:
    """The local file's header and turns are the ledger's (so it is only behind, not edited)."""
    return (
        header_behind(local.opening, wanted.opening)
        and len(local.pieces) <= len(wanted.pieces)
        and all(a[1] == b[1] for a, b in zip(local.pieces, wanted.pieces, strict=False))
    )


def sync_dialogue(path: Path, found: DebateRecord) -> bool:
    """Bring the dialogue file at ``path`` up to date with the ledger snapshot ``found``; True when it wrote."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with folder_lock(path.parent):
        if path.is_symlink() or (path.exists() and not path.is_file()):
            return False
        text = local_text(path)
        if path.exists() and text is None:
            return False
        wanted = shared_dialogue(found, text, where=path)
        if wanted is None:
            return False
        local = cut(text) if text is not None else None
        if local is not None and (not agrees(local, wanted) or local.text == wanted.text):
            if local.text == wanted.text:
                chain, _ = read_chain(path)
                if chain is None or len(chain) != len(wanted.pieces):
                    record_chain(path, wanted.texts)  # a crash between the file and its chain
            return False
        atomic_write_text(path, wanted.text)
        record_chain(path, wanted.texts)
        return True
