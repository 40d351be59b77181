"""Token counts without a tokenizer: a conservative estimate, a typical one, and text cut to fit a budget.

Prompts are sized before any model is asked (a duel's source, a roundtable's agenda), so that count errs on the
high side for the smallest tokenizer moot ships with. The dry run's expected figures use the typical count
instead: what a hosted model's tokenizer makes of English prose and JSON, about four characters a token.
"""

from __future__ import annotations

import math


def estimate_tokens(text: str) -> int:
    """A conservative token count for SmolLM2's tokenizer: ~3.4 ASCII characters per token and
    about two tokens per other character (CJK text measured at 1.8)."""
    ascii_chars = sum(1 for char in text if ord(char) < 128)
    return math.ceil(ascii_chars / 3 + (len(text) - ascii_chars) * 2)


TYPICAL_CHARS_PER_TOKEN = 4.0  # English prose and JSON in OpenAI's and SmolLM2's tokenizers: 4 to 5 characters


def typical_tokens(text: str) -> int:
    """The tokens ``text`` typically takes: about four ASCII characters a token, and 1.5 tokens per other
    character (CJK text)."""
    ascii_chars = sum(1 for char in text if ord(char) < 128)
    return math.ceil(ascii_chars / TYPICAL_CHARS_PER_TOKEN + (len(text) - ascii_chars) * 1.5)


def clip_to_tokens(text: str, tokens: int) -> str:
    """``text`` cut at the end to about ``tokens`` tokens, marked where it was cut."""
    if estimate_tokens(text) <= tokens:
        return text
    keep = len(text)
    while keep > 0 and estimate_tokens(text[:keep]) > max(0, tokens - 4):
        keep = int(keep * 0.9)
    return text[:keep].rstrip() + " […]" if keep else ""
