"""The agent tools on the command line: ``moot PROTOCOL TOOL …`` for every registered protocol's tools and
``moot emit``, generated from their declarations (:class:`moot.plugin.Tool`), and ``moot events``. Imported
only when such a command runs, so that ``moot --help`` stays fast; their options (:mod:`moot.cli.tool_options`)
are read without typer on an agent's every-turn call.

Every agent command prints one JSON object on stdout — ``ok: true`` and the result, or ``ok: false`` with
``error``, ``kind`` and the ``rules`` that refused it — and exits 0 (ok), 1 (refused by a rule or the
lease), 2 (bad input) or 3 (the ledger is unavailable; retry). A refusal's sentence also goes to stderr.
See docs/agent-tools.md.
"""

from __future__ import annotations

import json
import os
import sys
import time
import typing
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from moot.cli.tool_options import EXPORT, FOLDER, ROOT, ROOT_OPTION, Option, options, typer_command
from moot.tools.declare import SECRET_ENV, SHARED, arguments_of, description, exports, moot_keeps_seat

if TYPE_CHECKING:
    import typer
    from pydantic import BaseModel, ValidationError

    from moot.plugin import Protocol, Tool
    from moot.tools.workspace import Workspace


def _print(payload: dict[str, Any], code: int) -> NoReturn:
    print(json.dumps(payload, ensure_ascii=False, indent=2), flush=True)
    if code:
        print(f"moot: {payload.get('error', 'refused')}", file=sys.stderr, flush=True)
    raise SystemExit(code)


def _print_exports(tool: Tool, payload: dict[str, Any], code: int) -> NoReturn:
    """``--export``: the answer's values that later calls read from the environment, as ``export NAME=value``
    lines a shell evaluates; a refusal prints nothing there (its JSON and sentence go to stderr)."""
    import shlex

    if code:
        print(json.dumps(payload, ensure_ascii=False, indent=2), file=sys.stderr)
        print(f"moot: {payload.get('error', 'refused')}", file=sys.stderr, flush=True)
        raise SystemExit(code)
    for field, variable in exports(tool).items():
        if payload.get(field) is not None:
            print(f"export {variable}={shlex.quote(str(payload[field]))}")
    sys.stdout.flush()
    raise SystemExit(0)


def _read(path: str, what: str) -> tuple[str, str]:
    """(text, name) of a file an agent wrote; ``-`` reads stdin. Refused with a located reason."""
    from moot.core.files import decode_text
    from moot.errors import BadInput

    if path == "-":
        data, name = sys.stdin.buffer.read(), "<stdin>"
    else:
        try:
            data, name = Path(path).read_bytes(), path
        except OSError as exc:
            raise BadInput(f"Cannot read the {what} {path} ({exc.strerror}); pass an existing file.") from exc
    text, problems = decode_text(data, name)
    if text is None:
        raise BadInput(f"The {what} cannot be used: {problems[0].message}", rules=problems)
    return text, name


def _absolute(path: Path) -> Path:
    return path if path.is_absolute() else Path.cwd() / path


def _folder_root(tool: Tool, folder: str, given: Path, root: Path | None) -> Path:
    """The work root a folder option (``--debate-dir``) names, checked against ``root`` when both are given."""
    from moot.errors import BadInput

    given = Path(os.path.abspath(given))
    if given.is_symlink():
        link = BadInput(
            f"{tool.folder_option} {given} is a symbolic link; moot writes only to real directories under the work "
            "root, so replace the link with a directory (or pass the real one).",
            rule="FILE_SYMLINK",
        )
        _print(link.payload(), link.exit_code)
    root = root or given.parent
    if given.resolve() != (_absolute(root).resolve() / folder):
        wrong = BadInput(f"{tool.folder_option} {given} is not <work root>/{folder}; pass --root with the work root.")
        _print(wrong.payload(), 2)
    return root


def _invalid(tool: Tool, error: ValidationError) -> str:
    """The first option that does not fit the tool's arguments, as one sentence naming the fix."""
    flags = {arg.name: arg.flag for arg in arguments_of(tool.function)}
    first = error.errors(include_url=False, include_input=False)[0]
    where = flags.get(str(first["loc"][0]), str(first["loc"][0])) if first["loc"] else "an option"
    return f"{where} is invalid ({first['msg'].lower()}); fix it and run the command again."


def _call_values(tool: Tool, given: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """The function's keyword arguments from the options' values: files read, paths made absolute, lists split,
    then checked against the tool's argument model (its refusals are ``BadInput``)."""
    from pydantic import ValidationError

    from moot.errors import BadInput
    from moot.tools.declare import call_values

    values: dict[str, Any] = {}
    own: dict[str, Any] = {}
    for arg in arguments_of(tool.function):
        value = given.get(arg.name)
        if value is None:
            if arg.required:
                values[arg.name] = None  # left out, which only an argument that may be None is (see options)
            continue
        if arg.cli.file:
            value, name = _read(value, arg.cli.file)
            if arg.cli.file_name:
                own[arg.cli.file_name] = name
        elif arg.cli.here:
            value = str(_absolute(Path(value)))
        elif typing.get_origin(arg.annotation) is list:
            value = value.split(",")
        values[arg.name] = value
    try:
        return call_values(tool, values), own
    except ValidationError as error:
        raise BadInput(_invalid(tool, error)) from None


def run_tool(folder: str | None, tool: Tool, given: dict[str, Any]) -> NoReturn:
    """Run ``tool`` with the options' values and print its answer: in ``--root``, else (for a tool that names a
    record by id) the root that holds that record (see moot.tools.locate), else the current directory."""
    from moot.errors import ToolError
    from moot.tools import invoke, open_workspace

    root: Path | None = given.get(ROOT)
    if given.get(FOLDER) is not None and folder is not None:
        root = _folder_root(tool, folder, given[FOLDER], root)
    try:
        if tool.locate is not None:
            from moot.tools.locate import open_for_debate

            workspace = open_for_debate(given[tool.locate], root)
        else:
            workspace = open_workspace(root, confined=False)  # the person running it names the files it reads
    except ToolError as problem:
        _print(problem.payload(), problem.exit_code)
    from moot.tools.seats import UserKeyring

    workspace.keyring = UserKeyring()  # the seats this OS user joined: the seed's commands pass only the id
    taken: list[tuple[tuple[str, str, str], str]] = []  # a seat this call took (moot keeps a plugin's), its secret

    def call(ws: Workspace) -> BaseModel:
        values, own = _call_values(tool, given)
        if moot_keeps_seat(tool):
            from moot.tools.seats import kept_seat

            seat = tool.seat
            assert seat is not None and seat.of is not None and ws.keyring is not None
            where = seat.of(ws, values)
            secret = kept_seat(
                ws.root, where, takes=seat.takes, claim=seat.claim, keyring=ws.keyring, given=os.environ.get(SECRET_ENV)
            )
            taken.extend([(where, secret)] if secret is not None else [])
        result = tool.function(ws, **values, **own)
        if tool.remembers is not None:
            from moot.tools.locate import remember

            remember(getattr(result, tool.remembers), ws.root)  # later commands find the root without --root
        return result

    with workspace:
        payload, code = invoke(lambda: call(workspace))
    if taken:
        from moot.tools.seats import settle_taken

        settle_taken(workspace.root, taken, payload, code)
    if given.get(EXPORT):
        _print_exports(tool, payload, code)
    _print(payload, code)


def tool_options(plugin: Protocol | None, tool: Tool) -> list[Option]:
    return options(tool, plugin.folder if plugin is not None else None)


def command(plugin: Protocol | None, tool: Tool) -> Any:
    """``tool`` as a typer command."""
    folder = plugin.folder if plugin is not None else None
    return typer_command(tool_options(plugin, tool), lambda given: run_tool(folder, tool, given), description(tool))


def group_app(plugin: Protocol) -> typer.Typer:
    """``moot NAME``: the protocol's agent tools as a typer app, built from their declarations only when a
    command of the group is run or listed (so ``moot --help`` imports no protocol's tools)."""
    import typer
    from typer.core import TyperGroup

    class Tools(TyperGroup):
        loaded = False

        def _load(self) -> None:
            if not self.loaded:
                self.loaded = True
                tools = typer.Typer()
                for tool in plugin.tools.load() if plugin.tools is not None else ():
                    tools.command(tool.name)(command(plugin, tool))
                for name, built in typer.main.get_group(tools).commands.items():
                    self.add_command(built, name)

        def list_commands(self, ctx: Any) -> list[str]:
            self._load()
            return super().list_commands(ctx)

        def get_command(self, ctx: Any, name: str) -> Any:
            self._load()
            return super().get_command(ctx, name)

    return typer.Typer(cls=Tools, help=f"Agent tools of the {plugin.name} protocol: {plugin.summary}",
                       no_args_is_help=True)  # fmt: skip


def shared_tools() -> tuple[Tool, ...]:
    from moot.plugin import Ref, ToolSet

    return Ref[ToolSet](SHARED).load()


# --- moot events --------------------------------------------------------------------------------

EVENTS_OPTIONS = [
    Option("run_id", "--run-id", str, "Only this run's events.", default=None),
    Option("follow", "--follow", bool, "Keep printing new events (until the run closes).", default=False),
    Option("as_json", "--json", bool, "One JSON object per line.", default=False),
    Option("after_id", "--after-id", int, "Only events after this id.", default=None),
    Option("interval", "--interval", float, "Seconds between polls with --follow.", default=0.5),
    ROOT_OPTION,
]


def _event_line(event: dict[str, Any]) -> str:
    where = " ".join(f"{k}={event[k]}" for k in ("step", "unit", "harness") if event.get(k))
    closing = " [run closed]" if event["close_run"] else ""
    data = json.dumps(event["data"], ensure_ascii=False)
    return f"#{event['id']} {event['created_at']} {event['workflow']} {event['type']} run={event['run_id']} {where} {data}{closing}"


def events(given: dict[str, Any]) -> None:
    """Print stored events in order; --follow keeps polling (and stops at --run-id's close-run event)."""
    from moot.errors import ToolError
    from moot.tools import open_workspace
    from moot.tools.events import read_events

    run_id = given["run_id"]
    try:
        ws = open_workspace(given[ROOT])
    except ToolError as problem:
        _print(problem.payload(), problem.exit_code)
    with ws:
        last = given["after_id"]
        while True:
            try:
                batch = read_events(ws, run_id=run_id, after_id=last)
            except ToolError as problem:
                _print(problem.payload(), problem.exit_code)
            for event in batch.events:
                payload = event.model_dump(mode="json")
                print(json.dumps(payload, ensure_ascii=False) if given["as_json"] else _event_line(payload))
            sys.stdout.flush()
            last = batch.last_id
            closed = run_id is not None and any(e.close_run for e in batch.events)
            if not given["follow"] or closed:
                return
            time.sleep(max(given["interval"], 0.05))


def register(app: typer.Typer) -> None:
    """Add ``moot emit`` (the shared tools) and ``moot events`` to the ``moot`` app."""
    for tool in shared_tools():
        app.command(tool.name)(command(None, tool))
    app.command("events")(typer_command(EVENTS_OPTIONS, events, typing.cast(str, events.__doc__)))
