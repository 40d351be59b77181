"""Shared pieces of the duel driver tests: a source document and well-formed guided replies."""

from __future__ import annotations

import json
from typing import Any

SOURCE_TEXT = """# Shared cache across tenants

## Goals
Tenant isolation comes first; memory savings second.

## Eviction
One global LRU list serves all tenants.

## Billing
Memory is billed per tenant.
"""
STARTED = "2026-05-01 10:00"
NOVEL = (
    "A per-tenant minimum share bounds the worst-case hit rate of quiet tenants.",
    "Separate caches make per-tenant memory billing exact.",
    "A shared overflow sized at ten percent keeps most of the pooling gain.",
    "Regulated tenants can opt out of the overflow by default.",
    "The overflow cap can reuse the existing quota setting.",
    "Rolling out behind a per-tenant flag allows before-and-after comparison.",
)


def guided(
    number: int,
    stance: str,
    *,
    blocking: tuple[str, ...] = (),
    revision: bool | None = None,
    **overrides: Any,
) -> str:
    """A valid guided reply for turn ``number`` whose texts are unique to that turn."""
    data: dict[str, Any] = {
        "stance": stance,
        "position": f"Position {number}: the shared cache needs a per-tenant floor number {number}.",
        "counterpoints": [
            {
                "addresses": f"Turn {number - 1}" if number > 1 else "source § Eviction",
                "claim": f"Counterclaim {number}: one noisy tenant evicts the others (variant {number}).",
                "evidence": {"section": "Eviction", "principle": "isolation bounds the worst case"},
            }
        ],
        "agreements": [f"Agreement {number}: pooling lowers the footprint ({number})."],
        "novel_argument": NOVEL[number - 1],
        "novel_evidence": {"section": "Goals", "principle": ""},
        "limitation": f"Benchmarks for variant {number} are missing",
        "blocking_issues": list(blocking),
    }
    if revision if revision is not None else number > 2:
        data["stance_revision"] = {"because_of": f"Turn {number - 1}", "why": f"turn {number - 1} answered my concern"}
    data.update(overrides)
    return json.dumps(data)
