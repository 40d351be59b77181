"""Legal scripted debates for the duel, Agora and roundtable, for benchmarks that need whole debates without a model.

The duel reply has the shape of tests/engine_duel/conftest.py's ``guided()``, but its own texts: the tests'
are short placeholders, these are sized like what a capable model writes within moot's limits, so that the
token counts mean something (and changing them changes bench/RESULTS.md's token figures).
The critique script is bench/scripted.py's. Each script is a list of (role, reply) in speaking order.
"""

from __future__ import annotations

import json

# The Socratic Duel's read-only source document (also what model-efficiency's duel debates).
DUEL_SOURCE = """# Shared cache across tenants

## Goals
Tenant isolation comes first; memory savings second.

## Eviction
One global LRU list serves all tenants. A tenant that scans its whole key space evicts everyone else's
hot entries, and nothing bounds how much of the cache one tenant may hold.

## Billing
Memory is billed per tenant, from each tenant's share of the cache at the end of every hour.
"""
DUEL_NOVEL = (
    "A per-tenant minimum share bounds the worst-case hit rate of quiet tenants.",
    "Separate caches make per-tenant memory billing exact.",
    "A shared overflow sized at ten percent keeps most of the pooling gain.",
    "Regulated tenants can opt out of the overflow by default.",
)


def duel_reply(number: int, stance: str, blocking: tuple[str, ...] = ()) -> str:
    """A legal reply for duel turn ``number`` (at most 4), its texts unique to that turn."""
    data: dict[str, object] = {
        "stance": stance,
        "position": f"The shared cache needs a per-tenant floor, so one noisy tenant cannot starve others ({number}).",
        "counterpoints": [
            {
                "addresses": f"Turn {number - 1}" if number > 1 else "source § Eviction",
                "claim": f"One global LRU lets a scanning tenant evict every other tenant's hot keys (point {number}).",
                "evidence": {"section": "Eviction", "principle": "isolation bounds the worst case"},
            }
        ],
        "agreements": [f"Pooling memory across tenants lowers the total footprint (agreement {number})."],
        "novel_argument": DUEL_NOVEL[number - 1],
        "novel_evidence": {"section": "Goals", "principle": ""},
        "limitation": f"There are no benchmarks yet for the floor sizes of variant {number}",
        "blocking_issues": list(blocking),
    }
    if number > 2:
        data["stance_revision"] = {"because_of": f"Turn {number - 1}", "why": f"turn {number - 1} answered my concern"}
    return json.dumps(data)


# advocate opens, skeptic converges with a blocker, both accept: ACCEPTED_CONSENSUS after 4 turns.
DUEL_SCRIPT = [
    ("advocate", duel_reply(1, "OPEN_TO_DEBATE")),
    ("skeptic", duel_reply(2, "CONVERGING", ("timing leaks through the shared pool",))),
    ("advocate", duel_reply(3, "ACCEPTING_CONSENSUS")),
    ("skeptic", duel_reply(4, "ACCEPTING_CONSENSUS")),
]


def drone(signal: str, message: str, target: str | None = None, confidence: float = 0.7) -> str:
    """One Agora drone reply in the seed's JSON."""
    return json.dumps(
        {"signal": signal, "message": message, "confidence": confidence, "target": target, "evidence": []}
    )


# advocate proposes, skeptic counters, advocate revises, skeptic approves, advocate holds: CONSENSUS after 5 turns.
AGORA_SCRIPT = [
    ("advocate", drone("propose", "Move every service into one repository with one CI pipeline and shared tooling.")),
    (
        "skeptic",
        drone(
            "counter",
            "One pipeline for every service makes each change wait for the slowest build in the company.",
            "proposal-advocate",
        ),
    ),
    (
        "advocate",
        drone("propose", "One repository, but CI builds only the services a change touches, via the build graph."),
    ),
    (
        "skeptic",
        drone("approve", "Scoped builds answer my concern; I approve the revised proposal.", "proposal-advocate", 0.9),
    ),
    ("advocate", drone("no-change", "I hold the revised proposal as approved.", "proposal-advocate", 0.9)),
]

ROUNDTABLE_TOPIC = "Should our API cache reads, and how?"
ROUNDTABLE_MINUTES = json.dumps(
    {
        "summary": "The speakers weighed a read cache in front of the API against its consistency and security costs.",
        "consensus": "Cache reads with a short TTL, keyed per tenant, and purge entries on writes.",
        "unresolved": "How to invalidate entries that several services write to.",
        "action_items": "- architect: write the design note\n- security: review the tenant keying",
    }
)


def roundtable_speech(number: int, role: str) -> str:
    """Speech ``number`` of ``role``: a legal reply within moot's length limits, distinct from every other."""
    return json.dumps(
        {
            "position": f"As the {role}, I support a read cache with a short TTL in front of the API ({number}).",
            "analysis": (
                f"Reads outnumber writes twenty to one, so a cache with a 30 second TTL removes most database load. "
                f"The risk is stale data after writes; purging the affected keys on every write bounds that window. "
                f"From the {role}'s side, point {number}: measure the hit rate per endpoint before widening the cache."
            ),
            "responses_and_questions": (
                f"I agree with the earlier speakers on the TTL. Question {number}: who owns invalidation when two "
                "services write the same entity?"
            ),
            "prompt_for_next_speaker": f"Are per-tenant cache keys enough for isolation? (asked in speech {number})",
            "consensus_reached": False,
        }
    )


def roundtable_script(speakers: tuple[str, ...], rounds: int) -> list[tuple[str, str]]:
    """Every speaker in order for ``rounds`` rounds, then the moderator's minutes."""
    order = [role for _ in range(rounds) for role in speakers]
    speeches = [(role, roundtable_speech(number, role)) for number, role in enumerate(order, start=1)]
    return [*speeches, ("moderator", ROUNDTABLE_MINUTES)]
