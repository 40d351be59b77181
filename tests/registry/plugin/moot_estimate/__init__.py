"""Estimate: a protocol outside moot whose positions are numbers, plugged in through the ``moot.protocols`` entry point.

N estimators each give a number and a reason, round after round; a round is sealed: moot asks its estimators at
once, and each prompt shows the finished rounds only. The answer is the median of the last round. Its package
metadata declares ``estimate = moot_estimate:PLUGIN`` (the tests write that entry point to a temporary
``dist-info``).
"""

from moot.plugin import SEALED, Protocol, Ref

PLUGIN = Protocol(
    name="estimate",
    summary="estimators each give a number with a reason, round after round; the answer is the last round's median.",
    folder=".estimates",
    title="# Estimate:",
    rules=(Ref("moot_estimate.protocol:RULES"), Ref("moot_estimate.record:FORMAT_RULES")),
    machine=Ref("moot_estimate.protocol:EstimateProtocol"),
    record=Ref("moot_estimate.record:FORMAT"),
    driver=Ref("moot_estimate.driver:EstimateDriver"),
    command=Ref("moot_estimate.driver:run_estimate"),
    analysis=Ref("moot_estimate.analysis:ANALYSIS"),
    view=Ref("moot_estimate.view:panels"),
    tools=Ref("moot_estimate.tools:TOOLS"),
    capabilities=frozenset({SEALED}),
)
