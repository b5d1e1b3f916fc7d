"""One round's outcome: when the round ends or pauses, and the RoundResult a caller is told (the
loop's own state is the engine's ``ActiveRound``)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from .._state import Outcome, SupportState
from ..errors import ModelError
from ..store._rows import Loaded
from ._graph import START, pauses_before


class RoundDeferred(ModelError):
    """A model outage met by a round whose caller waits it out (a worker, within
    ``Settings.model_outage_grace``): the steps done so far are recorded, the ticket stays queued
    and nobody is told anything. Never leaves the worker; the outage's error is its cause."""


@dataclass(frozen=True, slots=True)
class RoundResult:
    ticket_id: str
    round: int
    outcome: Outcome
    reply: str = ""
    handled_upto: int = 0  # customer messages before this turn index were answered by this round
    # The decision on the round's refund as recorded (None: none in this round). An approval the
    # business system could not apply (nothing left to refund on the invoice) is recorded as a
    # rejection, and decision_note says why.
    approved: bool | None = None
    decision_note: str = ""


def result_of(state: SupportState, outcome: Outcome) -> RoundResult:
    """The result of ``state``'s round: ended, paused (``waiting_approval``), or still running
    (``queued``: no reply yet). The one way a round's state becomes what a caller is told."""
    approval = state.approval
    return RoundResult(
        ticket_id=state.ticket.id,
        round=state.round,
        outcome=outcome,
        # A paused round has no reply of its own, but for an answer to a reviewer's note (respond).
        reply="" if outcome == "queued" else state.reply,
        handled_upto=state.handled_upto,
        approved=None if approval is None else approval.approved,
        decision_note="" if approval is None else approval.note,
    )


class RoundResults(list[RoundResult]):
    """The results of one drive, reporting each as it is added."""

    def __init__(self, on_round: Callable[[RoundResult], None] | None) -> None:
        super().__init__()
        self._on_round = on_round

    def append(self, result: RoundResult, /) -> None:
        super().append(result)
        if self._on_round is not None:
            self._on_round(result)


# The steps a round starts with that call no model and read only the database (load_customer's
# backend reads, when the backend declares that it reads through the engine's pool).
READS_ONLY = frozenset({START, "load_customer"})


def unanswered(state: SupportState, turn_count: int) -> bool:
    """Whether customer messages wait for a round: stored after this state, or taken in mid-round."""
    return turn_count > len(state.turns) or any(
        t.role == "customer" for t in state.turns[state.handled_upto :]
    )


def ends_round(loaded: Loaded, turn_count: int) -> bool:
    """Whether this worker's part of the round ends with this record: it finished with no message
    waiting, or it pauses for a human (a message that waits is answered after the decision)."""
    if loaded.next_step is None:
        return not unanswered(loaded.state, turn_count)
    return pauses_before(loaded.next_step, loaded.state)
