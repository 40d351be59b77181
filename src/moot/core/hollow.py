"""Hollow turns: a message with no letter or digit in it, and a message that repeats an earlier turn's word for word.

Protocols whose turns carry free text use these to refuse a turn that says nothing (``][``) and to flag one
that copies another turn (a small model often hands back the previous speaker's words). A message is compared
after case and whitespace are normalised, and only when it has at least :data:`ECHO_MIN_CHARS` letters and
digits: short replies such as "Agreed." or "No objection from me." are legitimately said twice.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import islice

ECHO_MIN_CHARS = 20


def has_content(text: str) -> bool:
    """Whether ``text`` holds at least one letter or digit, in any script."""
    return any(char.isalnum() for char in text)


def echo_key(text: str) -> str:
    """``text`` casefolded with its whitespace collapsed, or ``""`` when it is too short to count as an echo."""
    # Only whether there are enough letters and digits matters: stop counting there (records near the size cap
    # hold thousands of long turns).
    if len(list(islice(filter(str.isalnum, text), ECHO_MIN_CHARS))) < ECHO_MIN_CHARS:
        return ""
    return " ".join(text.casefold().split())


def echoed(key: str, earlier: Sequence[str]) -> int | None:
    """The 1-based position of the first of ``earlier`` (the echo keys of the turns so far) that ``key`` repeats,
    or ``None`` when it repeats none (an empty key never repeats)."""
    if not key:
        return None
    try:
        return earlier.index(key) + 1
    except ValueError:
        return None


def content_pattern(max_chars: int) -> str:
    """A JSON Schema ``pattern`` for one line of 1 to ``max_chars`` characters that opens with a letter or digit
    (an ASCII one or any non-ASCII character) and holds no quote, backslash or control character.

    A grammar-decoded small model given a plain string writes ``][`` or ``{`` and writes it again when asked to
    fix it; opening with a letter or digit is what a grammar can enforce. Without quotes and backslashes every
    character of the reply is one character of the text (an escape would cost several).
    """
    first = r"[^\x00-\x2f\x3a-\x40\x5b-\x60\x7b-\x7f]"
    return rf'^{first}[^"\\\x00-\x1f\x7f]{{0,{max_chars - 1}}}$'
