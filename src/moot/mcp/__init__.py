"""moot over the Model Context Protocol: ``moot mcp`` serves the agent tools of :mod:`moot.tools` and runs
deliberations with :mod:`moot.engine.runner`, with the official ``mcp`` SDK (stdio by default, streamable HTTP on
127.0.0.1 as an option).

Modules: :mod:`moot.mcp.server` (``build_server``), :mod:`moot.mcp.run_tools` (start, follow, fetch, list and
cancel a deliberation), the participation tools :mod:`moot.protocols.duel.mcp_tools`, :mod:`moot.protocols.critique.mcp_tools` and
:mod:`moot.protocols.roundtable.mcp_tools` (each registered by its protocol), :mod:`moot.mcp.params` (what they share),
:mod:`moot.mcp.resources` (the debate artifacts), :mod:`moot.mcp.identity` (a connection acts only as the
participant it joined as), :mod:`moot.mcp.http` (loopback and the bearer token), :mod:`moot.mcp.cli`.
This package imports nothing of the SDK itself, so the CLI can register ``moot mcp`` cheaply.
"""
