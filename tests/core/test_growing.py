"""A protocol state's growing map: each state sees exactly the entries of its own line of turns, also when a
state is grown twice (a rejected attempt, then the accepted one)."""

from __future__ import annotations

from moot.core.growing import GrowingMap


def test_a_grown_map_leaves_the_one_it_grew_from_as_it_was() -> None:
    empty: GrowingMap[str, int] = GrowingMap()
    one = empty.plus("a", 1)
    two = one.plus("b", 2)
    assert dict(empty.items()) == {} and "a" not in empty and empty.get("a") is None
    assert dict(one.items()) == {"a": 1} and "b" not in one and len(one) == 1
    assert dict(two.items()) == {"a": 1, "b": 2} and two["b"] == 2 and list(two) == ["a", "b"]
    assert two.plus("a", 99) is two and two["a"] == 1  # a key keeps its first value


def test_two_branches_from_one_state_never_see_each_other() -> None:
    base = GrowingMap([("a", 1)])
    rejected = base.plus("x", 2)  # an attempt the engine then refused
    accepted = base.plus("y", 2)
    later = accepted.plus("z", 3)
    assert dict(rejected.items()) == {"a": 1, "x": 2}
    assert dict(accepted.items()) == {"a": 1, "y": 2} and "x" not in accepted
    assert dict(later.items()) == {"a": 1, "y": 2, "z": 3} and later.get("x") is None
    assert rejected.plus("w", 3).get("y") is None
    assert accepted == GrowingMap([("a", 1), ("y", 2)]) and accepted != rejected
