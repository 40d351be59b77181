"""Hollow turns: a message with no letter or digit in it, and a message that repeats an earlier turn's word for word.

Protocols whose turns carry free text use these to refuse a turn that says nothing (``][``) and to flag one
that copies another turn (a small model often hands back the previous speaker's words). A message is compared
after case and whitespace are normalised, and only when it has at least :data:`ECHO_MIN_CHARS` letters and
digits: short replies such as "Agreed." or "No objection from me." are legitimately said twice.
"""

from __future__ import annotations

from functools import lru_cache
from itertools import islice

from moot.core.growing import GrowingMap

ECHO_MIN_CHARS = 20


def has_content(text: str) -> bool:
    """Whether ``text`` holds at least one letter or digit, in any script."""
    return any(char.isalnum() for char in text)


Said = GrowingMap[str, int]  # each echo key said so far -> the 1-based position of the first turn that said it


@lru_cache(maxsize=8)  # a turn's key is asked for when it is checked and again when it is applied
def echo_key(text: str) -> str:
    """``text`` casefolded with its whitespace collapsed, or ``""`` when it is too short to count as an echo."""
    # Only whether there are enough letters and digits matters: stop counting there (records near the size cap
    # hold thousands of long turns).
    if len(list(islice(filter(str.isalnum, text), ECHO_MIN_CHARS))) < ECHO_MIN_CHARS:
        return ""
    return " ".join(text.casefold().split())


def echoed(key: str, earlier: Said) -> int | None:
    """The position of the first earlier turn that ``key`` repeats, or ``None`` (an empty key never repeats)."""
    return earlier.get(key) if key else None


def said_after(earlier: Said, key: str, position: int) -> Said:
    """``earlier`` with the turn at ``position`` whose echo key is ``key``, in constant time."""
    return earlier.plus(key, position) if key else earlier


def content_pattern(max_chars: int) -> str:
    """A JSON Schema ``pattern`` for one line of 1 to ``max_chars`` characters that opens with a letter or digit
    (an ASCII one or any non-ASCII character) and holds no quote, backslash or control character.

    A grammar-decoded small model given a plain string writes ``][`` or ``{`` and writes it again when asked to
    fix it; opening with a letter or digit is what a grammar can enforce. Without quotes and backslashes every
    character of the reply is one character of the text (an escape would cost several).
    """
    first = r"[^\x00-\x2f\x3a-\x40\x5b-\x60\x7b-\x7f]"
    return rf'^{first}[^"\\\x00-\x1f\x7f]{{0,{max_chars - 1}}}$'
