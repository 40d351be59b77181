"""Estimate's agent tools: an outside agent takes an estimator's seat and gives its estimate, as ``moot estimate
status`` and ``moot estimate submit`` on the command line and the MCP tools ``estimate_status`` and
``estimate_submit``.

A round stays sealed here too: ``status`` shows the finished rounds only. Writes to one record are serialised by a
lock of its folder (one host), checked by the protocol's machine and chained as the engine chains them. The first
``submit`` as an estimator takes that seat: over MCP for the connection, which may submit as no other there; on the
command line for the OS user (moot keeps the seat's secret for it).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field

from moot.plugin import BadInput, Seat, Tool, ToolSet, Workspace, folder_lock, read_text, refused_by, tool
from moot_estimate import record as estimates
from moot_estimate.protocol import Estimate, EstimateProtocol, number

FOLDER = ".estimates"
Record = Annotated[str, Field(description="The estimate's record, relative to the work root (.estimates/NAME.md).")]


class EstimateStatus(BaseModel):
    model_config = ConfigDict(frozen=True)

    record: str
    question: str
    estimators: list[str]
    turns: int
    round: int | None
    next_speaker: str | None
    outcome: str | None
    reason: str | None
    seen: list[str]  # the estimates of the finished rounds, as the record writes them


class Submitted(BaseModel):
    model_config = ConfigDict(frozen=True)

    record: str
    estimator: str
    round: int
    estimate: str
    next_speaker: str | None
    outcome: str | None


def _open(ws: Workspace, record: str) -> tuple[Path, estimates.Parsed, EstimateProtocol]:
    path = ws.inside(FOLDER, record)
    text, _ = read_text(path)
    parsed = estimates.parse(text) if text is not None else None
    if parsed is None or parsed.config is None or parsed.violations:
        raise BadInput(f"{record} is not a clean estimate record; run `moot check` on it.", rule="TOOLS_BAD_INPUT")
    return path, parsed, EstimateProtocol(parsed.config)


@tool
def status(ws: Workspace, *, record: Record) -> EstimateStatus:
    """The estimate's question, whose estimate is next in which round, its outcome, and the finished rounds."""
    _, parsed, machine = _open(ws, record)
    assert parsed.config is not None
    summary = machine.summary(machine.replay(parsed.estimates).state)
    sealed = summary.round or parsed.config.rounds + 1
    return EstimateStatus(
        record=record,
        question=parsed.config.question,
        estimators=list(parsed.config.estimators),
        turns=summary.turns,
        round=summary.round,
        next_speaker=summary.next_speaker,
        outcome=summary.outcome.name if summary.outcome else None,
        reason=summary.outcome.reason if summary.outcome else None,
        seen=[estimates.turn_text(e) for e in parsed.estimates if e.round < sealed],
    )


@tool
def submit(
    ws: Workspace,
    *,
    record: Record,
    estimator: Annotated[str, Field(description="Your name: the estimator whose estimate this is.")],
    estimate: Annotated[float, Field(description="Your estimate, a finite number.")],
    reason: Annotated[str, Field(description="Why, in a sentence or two.")],
) -> Submitted:
    """Give your estimate for the current round; refused unless it is your turn and a finite number with a reason."""
    path = ws.inside(FOLDER, record)
    with folder_lock(path.parent):
        _, parsed, machine = _open(ws, record)
        assert parsed.config is not None
        state = machine.replay(parsed.estimates).state
        turn = Estimate(
            estimator=estimator, round=machine.expected(state)[1], value=estimate, reason=" ".join(reason.split())
        )
        violations = machine.validate(state, turn)
        if any(v.is_error for v in violations):
            raise refused_by(violations)
        state = estimates.RECORD.append(path, [turn])
    ended = machine.outcome(state)
    return Submitted(
        record=record,
        estimator=estimator,
        round=turn.round,
        estimate=number(turn.value),
        next_speaker=machine.next_speaker(state),
        outcome=ended.name if ended else None,
    )


def _seat(ws: Workspace, arguments: dict[str, Any]) -> tuple[str, str, str]:
    path = ws.inside(FOLDER, str(arguments["record"]))
    return str(path), str(arguments["estimator"]), f"the estimate {path.name}"


TOOLS: ToolSet = (
    Tool("status", status, read_only=True),
    Tool("submit", submit, seat=Seat(takes=True, of=_seat)),
)
