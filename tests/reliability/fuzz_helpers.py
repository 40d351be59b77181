"""Inputs and harness of the fuzz suite (a plain module, not collected).

Inputs are mutations of the valid examples under tests/*/examples (the mutations that break parsers:
cut, spliced, duplicated and swapped lines, changed numbers, stray bytes, invalid UTF-8, tokens from
other records), plus random bytes and text. The CLI runs in-process through ``moot.cli.main``, the
console script's own entry point, so a crash shows as what a user would see: exit 3, "internal error".
"""

from __future__ import annotations

import io
import re
import sys
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, redirect_stderr, redirect_stdout
from pathlib import Path
from typing import Any

import typer
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))
from tools_helpers import Result

from moot import cli

TESTS = Path(__file__).resolve().parents[1]

# Tokens that sit on the edges of the formats and of the decoders under them.
TRICKY: tuple[bytes, ...] = (
    b"",
    b"\n",
    b"\r\n",
    b"\r",
    b" ",
    b"\t",
    b"---",
    b"```",
    b"#",
    b"## ",
    b"|",
    b"- ",
    b"**",
    b":",
    b"{",
    b"}",
    b"[",
    b"]",
    b'"',
    b"\\",
    b"null",
    b"true",
    b"-1",
    b"0",
    b"1e999",
    b"NaN",
    b"-Infinity",
    b"9" * 5000,  # past Python's limit on the digits of an int it parses
    b"[" * 3000,  # deeper than the JSON and TOML decoders recurse
    b"\x00",
    b"\xff",
    b"\xc3",  # a cut UTF-8 sequence
    b"\xed\xa0\x80",  # an encoded surrogate: invalid UTF-8
    b"\xef\xbb\xbf",  # a byte-order mark
    "\u202e\u200b\u00a0".encode(),
    "缓存设计".encode(),
    "𝄞".encode(),
)
NUMBERS = ("0", "-1", "1.5", "", "999999999999999999999", "9" * 5000)


def example_bytes(*patterns: str) -> list[bytes]:
    """The contents of the example files matching ``patterns`` (globs under tests/)."""
    found = sorted({path for pattern in patterns for path in TESTS.glob(pattern) if path.is_file()})
    assert found, f"no examples match {patterns}"
    return [path.read_bytes() for path in found]


def _lines(seeds: Sequence[bytes]) -> list[bytes]:
    return sorted({line for seed in seeds for line in seed.splitlines(keepends=True)})[:400]


@st.composite
def _mutation(draw: st.DrawFn, data: bytes, pool: Sequence[bytes]) -> bytes:
    """One edit of ``data``; ``pool`` holds lines and tokens to splice in."""
    size = len(data)
    at = draw(st.integers(0, size))
    upto = draw(st.integers(at, min(size, at + 200)))
    piece = draw(st.sampled_from(pool) | st.binary(max_size=16))
    lines = data.splitlines(keepends=True) or [b""]
    line = draw(st.integers(0, len(lines) - 1))
    other = draw(st.integers(0, len(lines) - 1))
    match draw(st.integers(0, 8)):
        case 0:  # insert
            return data[:at] + piece + data[at:]
        case 1:  # delete a span
            return data[:at] + data[upto:]
        case 2:  # duplicate a span
            return data[:upto] + data[at:upto] + data[upto:]
        case 3:  # replace a line
            lines[line] = piece + b"\n"
            return b"".join(lines)
        case 4:  # swap two lines
            lines[line], lines[other] = lines[other], lines[line]
            return b"".join(lines)
        case 5:  # truncate
            return data[:at]
        case 6:  # change a number
            numbers = list(re.finditer(rb"\d+", data))
            if not numbers:
                return data + piece
            found = draw(st.sampled_from(numbers))
            return data[: found.start()] + draw(st.sampled_from(NUMBERS)).encode() + data[found.end() :]
        case 7:  # replace a value: what follows the first '=' or ':' of a line (TOML, JSON, headers)
            key, sep, _value = lines[line].partition(b"=" if b"=" in lines[line] else b":")
            lines[line] = key + sep + b" " + piece + b"\n" if sep else lines[line]
            return b"".join(lines)
        case _:  # flip a byte
            if not data:
                return piece
            index = min(at, size - 1)
            return data[:index] + bytes([data[index] ^ draw(st.integers(1, 255))]) + data[index + 1 :]


@st.composite
def _mutants(draw: st.DrawFn, seeds: Sequence[bytes], pool: Sequence[bytes]) -> bytes:
    data = draw(st.sampled_from(seeds))
    for _ in range(draw(st.integers(1, 4))):
        data = draw(_mutation(data, pool))
    return data


def documents(seeds: Sequence[bytes]) -> st.SearchStrategy[bytes]:
    """Bytes: mostly mutated seeds, else random bytes, random text, or a soup of tokens and lines."""
    pool = [*TRICKY, *_lines(seeds)]
    mutants = _mutants(seeds, pool)
    return st.one_of(
        mutants,
        mutants,
        mutants,
        st.sampled_from(seeds),
        st.binary(max_size=1000),
        st.text(max_size=300).map(str.encode),
        st.lists(st.sampled_from(pool), max_size=30).map(b"".join),
    )


def texts(seeds: Sequence[bytes], *, surrogates: bool = False) -> st.SearchStrategy[str]:
    """``documents`` as text; with ``surrogates``, invalid bytes become lone surrogates, as a JSON
    string's ``\\ud800`` escapes do (what an agent's reply or an MCP argument can carry)."""
    errors = st.sampled_from(["replace", "surrogateescape"] if surrogates else ["replace"])
    return st.tuples(documents(seeds), errors).map(lambda pair: pair[0].decode("utf-8", pair[1]))


JSON_SCALARS = st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=40)
JSON_VALUES: st.SearchStrategy[Any] = st.recursive(
    JSON_SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=4),
    max_leaves=12,
)


# typer turns the app into its click command on every call (about 40 ms, 97% of a `moot check`); the
# fuzz suite builds it once and lets main() call that, so the examples measure moot, not typer.
_COMMAND = typer.main.get_command(cli.app)


def run_cli(*args: str) -> Result:
    """``moot ARGS`` in this process, through the console script's entry point ``moot.cli.main``."""
    out, err = io.StringIO(), io.StringIO()
    code = 0
    app, cli.app = cli.app, _COMMAND  # type: ignore[assignment]
    try:
        with redirect_stdout(out), redirect_stderr(err):
            cli.main(list(args))
    except SystemExit as exit_:
        code = exit_.code if isinstance(exit_.code, int) else int(exit_.code is not None)
    finally:
        cli.app = app
    return Result(code, out.getvalue(), err.getvalue())


def assert_clean_exit(result: Result, codes: tuple[int, ...] = (0, 1, 2)) -> None:
    """A documented exit code and no traceback: exit 3 ("internal error") is a crash."""
    shown = f"exit {result.code}\nstdout: {result.stdout[-1500:]}\nstderr: {result.stderr[-1500:]}"
    assert result.code in codes, shown
    assert "Traceback" not in result.stdout + result.stderr, shown
    assert "internal error" not in result.stderr, shown


class Tally:
    """Examples run and failing examples per target, for the long run's record."""

    def __init__(self) -> None:
        self.examples: Counter[str] = Counter()
        self.failures: Counter[str] = Counter()

    @contextmanager
    def example(self, target: str) -> Iterator[None]:
        self.examples[target] += 1
        try:
            yield
        except BaseException:
            self.failures[target] += 1
            raise

    def figures(self) -> dict[str, dict[str, int]]:
        return {name: {"examples": n, "failures": self.failures[name]} for name, n in sorted(self.examples.items())}
