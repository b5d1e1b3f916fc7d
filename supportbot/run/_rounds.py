# Generated from _rounds_async.py by scripts/async_to_sync.py: edit that file and run the script.
"""One round as the engine runs it: what the loop carries from step to step under the lease, when
the round ends or pauses, and the RoundResult a caller is told."""

from __future__ import annotations

import time
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass, field

import psycopg

from .._records import CustomerRecords
from .._state import Outcome, SupportState
from ..errors import ModelError
from ..store import _lease as lease_repo
from ..store._rows import Loaded, StepWrite
from ._deps import ModelTime
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


@dataclass(slots=True)
class ActiveRound:
    """One round in progress under this worker's lease: what the loop carries from step to step."""

    loaded: Loaded  # the state after the last step run
    owner: str  # the lease's owner
    turn_count: int  # the ticket's stored turns when the lease was taken
    results: list[RoundResult]  # the drive's results, this round's added as it ends or pauses
    held: ExitStack = field(default_factory=ExitStack)  # the connection of the round's first steps
    records: CustomerRecords | None = None  # the customer's records, read before the round (Engine.drive)
    # The step records written behind, with the round's next transaction (Engine._execute).
    pending: list[StepWrite] = field(default_factory=list)
    renewed: float = field(default_factory=time.monotonic)  # when the lease was last renewed
    model_time: ModelTime | None = None  # the model time it used (Settings.llm_round_seconds)
    released: bool = False  # the round's last record freed the lease ...
    stored_at_release: int | None = None  # ... and said how many turns the ticket had by then

    def release_read(self, cur: psycopg.Cursor) -> None:
        """Note the lease freed by the record behind ``cur`` (read after the commit: no round trip)."""
        self.released = True
        self.stored_at_release = lease_repo.released(cur)


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
