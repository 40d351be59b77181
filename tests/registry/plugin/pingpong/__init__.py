"""Ping-pong: a protocol that lives outside moot and plugs in through the ``moot.protocols`` entry point.

Two players, ``ping`` and ``pong``, return the ball in turn, each saying its own word; a rally of
``volleys`` returns is a consensus, and a player that says ``miss`` ends it without one. Its package metadata
declares ``pingpong = pingpong:PLUGIN`` (the tests write that entry point to a temporary ``dist-info``).
"""

from moot.plugin import Protocol, Ref

PLUGIN = Protocol(
    name="pingpong",
    summary="two players return the ball in turn until a rally of volleys or a miss.",
    folder=".pingpong",
    title="# Ping Pong:",
    rules=(Ref("pingpong.protocol:RULES"), Ref("pingpong.record:FORMAT_RULES")),
    machine=Ref("pingpong.protocol:PingPong"),
    record=Ref("pingpong.record:FORMAT"),
    driver=Ref("pingpong.driver:PingPongDriver"),
    command=Ref("pingpong.driver:run_pingpong"),
)
