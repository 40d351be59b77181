"""The ``moot`` command line: thin typer commands over the layers below.

User errors end as one sentence on stderr and exit code 2, never a traceback (``--debug`` shows it).
"""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from moot import __version__, registry
from moot.cli.agents import agents_command
from moot.cli.check import check_command
from moot.cli.eval import eval_command
from moot.cli.log import log_command
from moot.cli.ls import ls_command
from moot.cli.receipts import receipt_command, verify_command
from moot.cli.review import review_command
from moot.cli.rules import rules_command
from moot.cli.run import resume_command, run_app
from moot.cli.serve import export_command, serve_command
from moot.cli.show import show_command
from moot.errors import UserError

app = typer.Typer(
    name="moot",
    help="Structured deliberations between LLMs, coding agents and people, with the protocol rules enforced.",
    no_args_is_help=True,
    add_completion=True,  # --install-completion / --show-completion for bash, zsh, fish, PowerShell
    pretty_exceptions_enable=False,
)
app.command("check")(check_command)
app.add_typer(run_app, name="run")
app.command("resume")(resume_command)
app.command("show")(show_command)
app.command("agents")(agents_command)
app.command("rules")(rules_command)
app.command("receipt")(receipt_command)
app.command("verify")(verify_command)
app.command("review")(review_command)
app.command("eval")(eval_command)
app.command("log")(log_command)
app.command("ls")(ls_command)
app.command("serve")(serve_command)
app.command("export")(export_command)

# Every registered protocol brings `moot run NAME` and, if it has agent tools, `moot NAME …`; one that cannot
# be loaded is left out, and main() says why.
_unloaded = list(registry.problems())
for _plugin in registry.protocols().values():
    try:
        _command = registry.load(_plugin.command)
        _tools = None if _plugin.tool_commands is None else registry.load(_plugin.tool_commands)
    except Exception as _exc:
        _unloaded.append(registry.unloadable(_plugin.name, _plugin.command, _exc))
        continue
    run_app.command(_plugin.name)(_command)
    if _tools is not None:
        app.add_typer(_tools, name=_plugin.name)

# --- agent tools: register their commands/sub-apps below this line ---
from moot.cli.tools import register as _register_agent_tools  # noqa: E402

_register_agent_tools(app)
# --- end of agent tools ---
from moot.mcp.cli import mcp_command  # noqa: E402

app.command("mcp")(mcp_command)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"moot {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Print the version and exit.")
    ] = False,
    debug: Annotated[bool, typer.Option("--debug", help="Show tracebacks for errors.")] = False,
) -> None:
    """moot — structured second opinions with enforced protocols."""
    if debug:
        from moot.cli import run

        run.debug_everything = True


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
            typer.echo(
                f"moot: the argument {shown!r} is not UTF-8 text; run moot in a UTF-8 locale (e.g. LANG=C.UTF-8) "
                "or rename the file to a UTF-8 name.",
                err=True,
            )
            sys.exit(2)
    for problem in _unloaded:
        typer.echo(f"moot: {problem}", err=True)
    try:
        app(args=args, prog_name="moot")
    except UserError as exc:
        if debug:
            raise
        typer.echo(f"moot: {exc}", err=True)
        sys.exit(2)
    except KeyboardInterrupt:
        typer.echo("moot: interrupted.", err=True)
        sys.exit(130)
    except Exception as exc:
        if debug:
            raise
        typer.echo(f"moot: internal error: {exc!r}. Run again with --debug and report the traceback.", err=True)
        sys.exit(3)
