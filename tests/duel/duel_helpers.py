"""Hand-written duel content shared by the duel tests (and used to write examples/valid)."""

from __future__ import annotations

from collections.abc import Sequence

from moot.protocols.duel.machine import Counterpoint, DuelConfig, DuelTurn, Participant, Support, UnresolvedItem

SOURCE = "/srv/docs/cache-design.md"
CONFIG = DuelConfig(
    duel_id="duel-7f3a",
    source_path=SOURCE,
    topic="Shared cache across tenants",
    topic_slug="shared-cache-across-tenants",
    created="2026-04-25T10:00:00Z",
)
ALICE = Participant(name="alice", harness="claude-code", model="claude-opus-4", joined="2026-04-25T10:00:00Z")
BOB = Participant(name="bob", harness="codex", model="gpt-5", joined="2026-04-25T10:01:30Z")
CLOSED = "2026-04-25T10:42:00Z"


def support(text: str) -> Support:
    return Support.of(text, SOURCE)


def turn(
    number: int,
    who: Participant,
    stance: str,
    position: str,
    counterpoints: Sequence[tuple[str, str, Sequence[str]]],
    agreements: Sequence[str],
    novel: str,
    novel_support: Sequence[str],
    unresolved: Sequence[tuple[str, bool]],
    revision: Sequence[str] = (),
) -> DuelTurn:
    return DuelTurn(
        number=number,
        participant=who.name,
        harness=who.harness,
        model=who.model,
        stance=stance,
        position=position,
        counterpoints=[
            Counterpoint(addresses=a, claim=c, support=[support(x) for x in sup]) for a, c, sup in counterpoints
        ],
        agreements=list(agreements),
        novel_argument=novel,
        novel_support=[support(x) for x in novel_support],
        unresolved=[UnresolvedItem(text=t, blocking=b) for t, b in unresolved],
        stance_revision_support=list(revision),
    )


def simple_turn(number: int, stance: str, claim: str, *, blocking: bool = False, revision: str = "") -> DuelTurn:
    """A valid turn by alice (odd numbers) or bob (even numbers) whose novel argument is ``claim``."""
    who = ALICE if number % 2 else BOB
    earlier = f"Turn {number - 1}" if number > 1 else "source section §Eviction"
    return turn(
        number,
        who,
        stance,
        f"Position {number} on the shared cache.",
        [(earlier, f"Counterclaim {number} about eviction.", [f'`{SOURCE}` §Eviction, line 42: "one LRU"'])],
        [f"Agreement {number} on isolation."],
        claim,
        ["Principle: isolation bounds the worst case."],
        [(f"Open question {number}", blocking)],
        [revision] if revision else [],
    )


T1 = turn(
    1,
    ALICE,
    "OPEN_TO_DEBATE",
    "The design's shared cache is sound for read-heavy tenants, but its eviction policy needs a per-tenant floor "
    "before rollout.",
    [
        (
            "source section §Eviction",
            "A single LRU lets one noisy tenant evict everyone else's hot keys.",
            [f'`{SOURCE}` §Eviction, line 42: "one global LRU list serves all tenants"'],
        )
    ],
    ["Sharing memory across tenants lowers the total footprint the design targets."],
    "A per-tenant minimum share bounds the worst-case hit rate of quiet tenants without giving up pooling.",
    ["Principle: isolation guarantees should bound the worst case, not the average."],
    [("How large the per-tenant floor should be", False)],
)

T2 = turn(
    2,
    BOB,
    "DISSENTING",
    "A shared cache is the wrong default; per-tenant caches are simpler to reason about and to bill.",
    [
        (
            "Turn 1",
            "A floor still leaks timing information between tenants through shared eviction.",
            ["https://en.wikipedia.org/wiki/Timing_attack"],
        ),
        (
            "source section §Goals",
            "The design's own goals rank isolation above memory savings.",
            [f'`{SOURCE}` §Goals, line 8: "tenant isolation comes first"'],
        ),
    ],
    ["Per-tenant floors would improve the worst-case hit rate (Turn 1)."],
    "Separate caches make per-tenant memory billing exact, which the shared pool cannot do.",
    [f'`{SOURCE}` §Billing, line 77: "memory is billed per tenant"'],
    [("Whether timing leakage through a shared pool is acceptable", True)],
)

T3 = turn(
    3,
    ALICE,
    "CONVERGING",
    "Isolation comes first per the goals, so the shared pool should be partitioned by tenant with a small shared "
    "overflow.",
    [
        (
            "Turn 2",
            "Partitioning removes cross-tenant eviction, so the timing channel is limited to the overflow area.",
            [
                "Turn 2",
                "Principle: a side channel needs shared state that one party can change and another can observe.",
            ],
        )
    ],
    ["Isolation outranks memory savings, as the source's goals state (Turn 2)."],
    "A shared overflow sized at ten percent keeps most of the pooling gain while confining contention to cold data.",
    [f'`{SOURCE}` §Sizing, line 60: "ninety percent of reads hit the hottest tenth of keys"'],
    [("Whether the overflow should be disabled for regulated tenants", False)],
    [f"Turn 2 showed the goals put isolation first (`{SOURCE}` §Goals, line 8)."],
)

T4 = turn(
    4,
    BOB,
    "CONVERGING",
    "Partitioned caches with a small shared overflow satisfy isolation if regulated tenants can opt out of the "
    "overflow.",
    [("Turn 3", "The overflow still needs a per-tenant cap, or one tenant can fill it.", ["Turn 3"])],
    ["Partitioning by tenant removes cross-tenant eviction in the main area (Turn 3)."],
    "Letting regulated tenants opt out of the overflow turns the remaining timing risk into a documented choice.",
    ["https://csrc.nist.gov/glossary/term/covert_timing_channel"],
    [("The exact cap per tenant in the overflow", False)],
    ["Turn 3 confined contention to the overflow, which answers my blocking item from Turn 2."],
)

T5 = turn(
    5,
    ALICE,
    "ACCEPTING_CONSENSUS",
    "I accept partitioned caches, a capped shared overflow and an opt-out for regulated tenants.",
    [
        (
            "Turn 4",
            "The opt-out must be the default for regulated tenants, not a request they must remember to make.",
            ["Principle: secure defaults beat opt-in safety."],
        )
    ],
    ["The overflow needs a per-tenant cap (Turn 4)."],
    "The overflow cap can reuse the existing quota setting, so the change adds no new configuration.",
    [f'`{SOURCE}` §Quotas, line 91: "each tenant has a memory quota"'],
    [("Benchmarks of the overflow under load are still missing", False)],
    ["Turn 4 added the opt-out, which removes my last concern."],
)

T6 = turn(
    6,
    BOB,
    "ACCEPTING_CONSENSUS",
    "I accept the same design, with the opt-out on by default for regulated tenants.",
    [("Turn 5", "Reusing the quota setting couples two limits that may need to differ later.", ["Turn 5"])],
    ["Opt-out by default for regulated tenants (Turn 5)."],
    "Rolling the change out behind a per-tenant flag lets operators compare hit rates before and after on real "
    "traffic.",
    ["Principle: change one variable at a time when measuring."],
    [("Whether the quota and the overflow cap should become separate settings later", False)],
    ["Turn 5 made the opt-out a default, which was my remaining condition."],
)

TURNS = [T1, T2, T3, T4, T5, T6]
