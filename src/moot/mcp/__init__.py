"""moot over the Model Context Protocol: ``moot mcp`` serves the agent tools of :mod:`moot.tools` and runs
deliberations with :mod:`moot.engine.runner`, with the official ``mcp`` SDK (stdio by default, streamable HTTP on
127.0.0.1 as an option).

Modules: :mod:`moot.mcp.server` (``build_server``), :mod:`moot.mcp.run_tools` (start, follow, fetch, list and
cancel a deliberation), :mod:`moot.mcp.agent_tools` (every protocol's agent tools, generated from their
declarations), :mod:`moot.mcp.params` (the tool annotations), :mod:`moot.mcp.state` (how a call is answered),
:mod:`moot.mcp.resources` (the debate artifacts), :mod:`moot.mcp.identity` (a connection acts only as the
participant it joined as), :mod:`moot.mcp.http` (loopback and the bearer token), :mod:`moot.mcp.cli`.
This package imports nothing of the SDK itself, so the CLI can register ``moot mcp`` cheaply.
"""
