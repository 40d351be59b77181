"""A map that a protocol's state carries from turn to turn, growing by a few entries each turn.

A state is immutable: each accepted turn makes a new one. A plain dict or tuple in it must then be copied on
every turn, which makes replaying a record quadratic in its turns (a record near the size cap holds tens of
thousands). :class:`GrowingMap` is immutable too, but :meth:`GrowingMap.plus` takes constant time: the maps of
successive states share one dict, and each knows how many of its entries it holds (a dict keeps insertion
order). Only a map that is not the newest of its line (a state that is grown twice, a branch) copies its part of
the dict before it grows.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from itertools import islice
from typing import Any, Generic, TypeVar

from pydantic import GetCoreSchemaHandler
from pydantic_core import core_schema

K = TypeVar("K")
V = TypeVar("V")
D = TypeVar("D")


class GrowingMap(Generic[K, V]):
    """An immutable mapping whose :meth:`plus` returns a larger one in constant time (see the module docstring).

    A key keeps its first value: adding a key already held returns the same map.
    """

    __slots__ = ("_entries", "_size")

    def __init__(self, items: Iterable[tuple[K, V]] = ()) -> None:
        self._entries: dict[K, tuple[int, V]] = {}  # key -> (its place in the line, value); shared by the line
        for key, value in items:
            self._entries.setdefault(key, (len(self._entries), value))
        self._size = len(self._entries)  # how many of the shared entries this map holds

    def get(self, key: K, default: D | None = None) -> V | D | None:
        found = self._entries.get(key)
        if found is None or found[0] >= self._size:
            return default
        return found[1]

    def plus(self, key: K, value: V) -> GrowingMap[K, V]:
        """This map with ``key`` mapped to ``value``, unless it holds ``key`` already."""
        if self.get(key, _MISSING) is not _MISSING:
            return self
        grown = GrowingMap.__new__(GrowingMap)
        if self._size == len(self._entries):
            grown._entries = self._entries  # the newest of its line: share
        else:
            grown._entries = dict(islice(self._entries.items(), self._size))  # a branch: its own copy from here
        grown._entries[key] = (self._size, value)
        grown._size = self._size + 1
        return grown

    def plus_all(self, items: Iterable[tuple[K, V]]) -> GrowingMap[K, V]:
        grown = self
        for key, value in items:
            grown = grown.plus(key, value)
        return grown

    def items(self) -> Iterator[tuple[K, V]]:
        return ((key, value) for key, (_, value) in islice(self._entries.items(), self._size))

    def __contains__(self, key: object) -> bool:
        found = self._entries.get(key)  # type: ignore[arg-type]
        return found is not None and found[0] < self._size

    def __iter__(self) -> Iterator[K]:
        return islice(iter(self._entries), self._size)

    def __len__(self) -> int:
        return self._size

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, GrowingMap):
            return NotImplemented
        return len(self) == len(other) and dict(self.items()) == dict(other.items())

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"GrowingMap({dict(self.items())!r})"

    def __getitem__(self, key: K) -> V:
        found = self._entries.get(key)
        if found is None or found[0] >= self._size:
            raise KeyError(key)
        return found[1]

    @classmethod
    def __get_pydantic_core_schema__(cls, source: Any, handler: GetCoreSchemaHandler) -> core_schema.CoreSchema:
        # A state field of this type holds one as it is (states are built by the machine, never from JSON).
        return core_schema.is_instance_schema(cls)


_MISSING: Any = object()
