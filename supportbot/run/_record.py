"""A step's record: the state after a step, and the write that stores the step with what it added.

No connection and no I/O: the engine (run/_engine.py) runs a step, makes its record here, and writes
a round's records in batches (``steps_repo.record_steps``).
"""

from __future__ import annotations

import dataclasses
import enum
from datetime import UTC, datetime
from typing import Final, Literal

from .._state import StateUpdate, SupportState, new_round, reduce
from ..store._codec import encode_fields, encode_state
from ..store._rows import Loaded, StepRow, StepWrite
from ._graph import ROUTES, START, pauses_before

# Each round stores one checkpoint (a whole state without turns, so loading never replays far),
# after this step: the summary it may rewrite is a state's largest field, and stored there it is
# stored once.
CHECKPOINT_AFTER = "prepare_context"


class _Route(enum.Enum):
    BY_STATE = "by state"


# The next step to pass when the route is to be read off the state after the step, which
# record_step computes anyway (routes read no append-only field, so one reduce serves both).
ROUTED_BY_STATE: Final = _Route.BY_STATE
NextStep = str | None | Literal[_Route.BY_STATE]


def record_step(
    loaded: Loaded,
    step: str,
    update: StateUpdate,
    next_step: NextStep,
    *,
    max_revisions: int,
    stored_turns: int | None = None,
) -> tuple[Loaded, StepWrite, bool]:
    """The state after ``step``, the write that records it, and whether it must commit now.

    ``stored_turns``: turns below this index are in the database already (customer messages);
    new turns above it are written with the record. ``max_revisions`` bounds the draft-review
    loop where the route is ``ROUTED_BY_STATE``. A record must commit at once when it adds turns
    (a reply the customer may see), pauses for a person, or ends the round.
    """
    state = loaded.state
    if step == START:
        state = new_round(state)  # implied by the record, so not stored in it
    after = reduce(state, update)
    if next_step is ROUTED_BY_STATE:
        next_step = ROUTES[step](after, max_revisions)
    pausing = pauses_before(next_step, after)
    if pausing:
        update = {**update, "outcome": "waiting_approval"}
        after = dataclasses.replace(after, outcome="waiting_approval")
    new_turns = after.turns[stored_turns if stored_turns is not None else len(state.turns) :]
    seq = loaded.seq + 1
    refs = after.round_calls  # what this round's tools returned: stored values may refer to it
    checkpoint = encode_state(after) if step == CHECKPOINT_AFTER else None
    row = StepRow(
        seq=seq,
        round=after.round,
        step=step,
        next_step=next_step,
        turn_count=len(after.turns),
        tool_call_count=len(after.tool_log),
        # the checkpoint is the state after this step, so the step's update is not kept twice
        update={} if checkpoint is not None else encode_fields(update, tools=refs),
        fact_count=len(after.facts),
    )
    status = ticket_status(after, next_step)
    write = StepWrite(
        row=row,
        created_at=datetime.now(UTC),
        turns=new_turns,
        tool_calls=after.tool_log[len(state.tool_log) :],
        facts_start=len(state.facts),
        facts=after.facts[len(state.facts) :],
        checkpoint=checkpoint,
        status=status if status != loaded.status else None,
        approval=encode_fields({"refund_request": after.refund_request}, tools=refs) if pausing else None,
    )
    must_commit = bool(new_turns) or pausing or next_step is None
    return Loaded(state=after, seq=seq, next_step=next_step, status=status), write, must_commit


def ticket_status(state: SupportState, next_step: str | None) -> str:
    """The ticket's status once a step left ``state`` and ``next_step`` to run."""
    if state.human_agent:
        return "with_human"
    if pauses_before(next_step, state):
        return "waiting_approval"
    if next_step is None:
        return {"resolved": "resolved", "escalated": "escalated"}.get(state.outcome or "", "open")
    return "in_progress"
