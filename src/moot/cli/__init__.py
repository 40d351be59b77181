"""The ``moot`` command line: thin typer commands over the layers below.

User errors end as one sentence on stderr and exit code 2, never a traceback (``--debug`` shows it).
The whole app (:mod:`moot.cli.commands`) is built only when a command needs it: an agent-tool command reads
its options without typer and runs alone (:mod:`moot.cli.tool_app`), which starts several times faster.
"""

from __future__ import annotations

import os
import sys
from typing import Any


def __getattr__(name: str) -> Any:
    """``moot.cli.app``, the whole app (moot.cli.commands), is imported on first use."""
    if name == "app":
        from moot.cli.commands import app

        globals()["app"] = app
        return app
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def main(argv: list[str] | None = None) -> None:
    """Entry point of the console script: every failure becomes a sentence and an exit code.

    typer handles usage errors (exit 2) and ``typer.Exit``; moot's user errors are caught here.
    """
    args = sys.argv[1:] if argv is None else argv
    debug = "--debug" in args
    for arg in args:
        try:
            arg.encode("utf-8")
        except UnicodeEncodeError:  # bytes that are not UTF-8 reach Python as lone surrogates, which no file can hold
            shown = arg.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
            print(
                f"moot: the argument {shown!r} is not UTF-8 text; run moot in a UTF-8 locale (e.g. LANG=C.UTF-8) "
                "or rename the file to a UTF-8 name.",
                file=sys.stderr,
            )
            sys.exit(2)
    from moot.cli.tool_app import for_tool_command
    from moot.errors import DiskFault, UserError

    app = for_tool_command(args)
    if app is None:
        from moot.cli.commands import unloaded

        app = globals().get("app") or __getattr__("app")  # a test may have put its own in place
        for problem in unloaded:
            print(f"moot: {problem}", file=sys.stderr)
    try:
        app(args=args, prog_name="moot")
    except UserError as exc:
        if debug:
            raise
        print(f"moot: {exc}", file=sys.stderr)
        sys.exit(2)
    except KeyboardInterrupt:
        print("moot: interrupted.", file=sys.stderr)
        sys.exit(130)
    except Exception as exc:
        if isinstance(exc, BrokenPipeError) and _reader_gone():
            # `moot … | head`: the reader stopped early. Nothing is wrong, and there is no one to tell; the exit's
            # own flush of stdout must not fail again.
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            sys.exit(1)
        if debug:
            raise
        fault = DiskFault.of(exc)  # a write below the commands that met a full disk or a read-only file system
        if fault is not None:
            print(f"moot: {fault}", file=sys.stderr)
            sys.exit(2)
        print(f"moot: internal error: {exc!r}. Run again with --debug and report the traceback.", file=sys.stderr)
        sys.exit(3)


def _reader_gone() -> bool:
    """Whether standard output is a pipe whose reader has closed it (its write end then polls as an error)."""
    import select

    try:
        poll = select.poll()
        poll.register(sys.stdout.fileno(), select.POLLOUT)
        return any(events & select.POLLERR for _, events in poll.poll(0))
    except (OSError, ValueError):  # no real file behind stdout (a test's capture, a closed stream)
        return False
