"""One open transaction, as the shared ledger code sees it: parameterised SQL with ``?`` placeholders.

The SQL text is always a constant of this package; values travel only as parameters. PostgreSQL's driver
wants ``%s`` placeholders, so its ``Tx`` rewrites them (the constant statements contain no ``%`` or ``?``
of their own).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol

Row = tuple[Any, ...]
Params = Sequence[object]


class Cursor(Protocol):
    @property
    def rowcount(self) -> int: ...

    def fetchone(self) -> Any: ...

    def fetchall(self) -> Any: ...


class Tx:
    def __init__(self, execute: Callable[[str, Params], Cursor], *, format_placeholders: bool = False) -> None:
        self._execute = execute
        self._format_placeholders = format_placeholders

    def _cursor(self, sql: str, params: Params) -> Cursor:
        return self._execute(sql.replace("?", "%s") if self._format_placeholders else sql, params)

    def one(self, sql: str, params: Params = ()) -> Row | None:
        row = self._cursor(sql, params).fetchone()
        return None if row is None else tuple(row)

    def all(self, sql: str, params: Params = ()) -> list[Row]:
        return [tuple(row) for row in self._cursor(sql, params).fetchall()]

    def run(self, sql: str, params: Params = ()) -> int:
        """Execute a statement that returns no rows; the number of rows it changed."""
        return self._cursor(sql, params).rowcount
