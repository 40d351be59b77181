"""Ping-pong: a protocol that lives outside moot and plugs in through the ``moot.protocols`` entry point.

Two players, ``ping`` and ``pong``, return the ball in turn, each saying its own word; a rally of
``volleys`` returns is a consensus, and a player that says ``miss`` ends it without one. Its package metadata
declares ``pingpong = pingpong:PLUGIN`` (the tests write that entry point to a temporary ``dist-info``).
"""

from moot.registry import ProtocolPlugin

PLUGIN = ProtocolPlugin(
    name="pingpong",
    folder=".pingpong",
    title="# Ping Pong:",
    rules=("pingpong.protocol:RULES", "pingpong.record:FORMAT_RULES"),
    config="pingpong.protocol:RallyConfig",
    machine="pingpong.protocol:PingPong",
    record="pingpong.record",
    driver="pingpong.driver:PingPongDriver",
    command="pingpong.driver:run_pingpong",
)
