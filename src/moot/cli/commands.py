"""The whole ``moot`` app: every command, each a thin typer wrapper over the layers below.

:func:`moot.cli.main` runs it (or, for an agent-tool command, the small app of :mod:`moot.cli.tool_app`).
"""

from __future__ import annotations

from moot import registry
from moot.cli.agents import agents_command
from moot.cli.check import check_command
from moot.cli.eval import eval_command
from moot.cli.follow import continue_command
from moot.cli.log import log_command
from moot.cli.ls import ls_command
from moot.cli.protocols import protocols_command
from moot.cli.receipts import receipt_command, verify_command
from moot.cli.review import review_command
from moot.cli.root import new_app
from moot.cli.rules import rules_command
from moot.cli.run import resume_command, run_app
from moot.cli.serve import export_command, serve_command
from moot.cli.show import show_command
from moot.cli.tools import group_app

app = new_app()
app.command("check")(check_command)
app.add_typer(run_app, name="run")
app.command("resume")(resume_command)
app.command("continue")(continue_command)
app.command("show")(show_command)
app.command("agents")(agents_command)
app.command("rules")(rules_command)
app.command("protocols")(protocols_command)
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
unloaded = list(registry.problems())
for _plugin in registry.protocols().values():
    try:
        _command = _plugin.command.load()
    except Exception as _exc:
        unloaded.append(registry.unloadable(_plugin.name, _plugin.command.target, _exc))
        continue
    run_app.command(_plugin.name)(_command)
    if _plugin.tools is not None:
        app.add_typer(group_app(_plugin), name=_plugin.name)

# --- agent tools: register their commands/sub-apps below this line ---
from moot.cli.tools import register as _register_agent_tools  # noqa: E402

_register_agent_tools(app)
# --- end of agent tools ---
from moot.mcp.cli import mcp_command  # noqa: E402

app.command("mcp")(mcp_command)
