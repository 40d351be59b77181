"""A participant's stated confidence, as every protocol that asks for one defines it: how sure it is, a number
from 0.0 (a guess) to 1.0 (certain).

A reply schema offers it as an enum of 0.05 steps (:data:`CONFIDENCES`), so a grammar-constrained model can
only write a legal one; a record may hold any number, and its protocol's check refuses one outside the range.
"""

from __future__ import annotations

import re
from typing import Any

CONFIDENCES = [round(step / 20, 2) for step in range(21)]  # 0.0, 0.05, … 1.0: legal by construction
BANDS = (
    "0.9-1.0 near-certain, strong evidence; 0.7-0.8 confident, some doubt; 0.5-0.6 balanced, "
    "it could go either way; 0.3-0.4 doubtful; 0.0-0.2 a guess"
)
_NUMBER = re.compile(r"-?\d{1,20}(?:\.\d{1,20})?(?:[eE][-+]?\d{1,3})?")


def confidence_schema() -> dict[str, Any]:
    """A reply's confidence field: one of :data:`CONFIDENCES`."""
    return {"type": "number", "enum": CONFIDENCES}


def in_range(value: float) -> bool:
    """Whether ``value`` is a confidence: from 0.0 to 1.0 (NaN is not)."""
    return 0.0 <= value <= 1.0


def confidence_text(value: float) -> str:
    """A confidence as a record writes it: the shortest text that reads back as the same number."""
    return repr(float(value))


def read_confidence(text: str) -> float | None:
    """A confidence as a record writes it, read back; None when ``text`` is not a plain decimal number."""
    return float(text) if _NUMBER.fullmatch(text.strip()) else None
