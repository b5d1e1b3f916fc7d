# Generated from _results_async.py by scripts/async_to_sync.py: edit that file and run the script.
"""What a caller is told about a round: its RoundResult once it ended or paused for a refund decision,
``queued`` while a worker still has it to run, ``escalated`` or ``with_human`` when a person answers.

A caller whose round ran elsewhere (``wait()``, a message another worker took up) reads its result
back from the round's latest step record.
"""

from __future__ import annotations

from .._state import Outcome
from ..store._rows import LeaseTaken
from ..store._store import Store
from ._engine import Engine
from ._rounds import RoundResult, result_of


def answer(
    engine: Engine,
    ticket_id: str,
    idx: int,
    *,
    owner: str | None = None,
    taken: LeaseTaken | None = None,
) -> RoundResult:
    """Run the ticket's pending rounds in this thread; the result of the one that answers turn ``idx``.

    ``queued`` when no round has taken the message up (another worker holds the ticket).
    """
    for result in engine.drive(ticket_id, owner=owner, taken=taken) or []:
        if result.handled_upto > idx:
            return result
    with engine.store.connection() as conn:
        round_ = engine.store.history.round_of_message(conn, ticket_id, idx)
    if round_ is None:
        return RoundResult(ticket_id=ticket_id, round=0, outcome="queued")
    return of_round(engine.store, ticket_id, round_)


def finished(store: Store, ticket_id: str, idx: int | None, round_: int | None) -> RoundResult | None:
    """The result ``wait()`` returns for turn ``idx`` (or round ``round_``); None while it is to come."""
    with store.connection() as conn:
        if round_ is None:
            assert idx is not None
            round_ = store.history.round_of_message(conn, ticket_id, idx)
        handed_off = store.queue.handed_off(conn, ticket_id)
        person = store.tickets.human_agent(conn, ticket_id)
    if round_ is not None:
        result = of_round(store, ticket_id, round_)
        if result.outcome != "queued":
            return result
    if handed_off:
        return RoundResult(ticket_id=ticket_id, round=round_ or 0, outcome="escalated")
    if person is not None and idx is not None:  # the message is for the person who took the ticket
        return with_human(store, ticket_id, idx)
    return None


def of_round(store: Store, ticket_id: str, round_: int) -> RoundResult:
    """Round ``round_``'s result as its latest step record shows it (``queued`` before its first)."""
    with store.connection() as conn:
        seq = store.history.last_seq_of_round(conn, ticket_id, round_)
        if seq is None:
            return RoundResult(ticket_id=ticket_id, round=round_, outcome="queued")
        loaded = store.load(conn, ticket_id, at=seq)
    state = loaded.state
    outcome: Outcome
    if loaded.next_step is None:
        outcome = state.outcome or "resolved"
    elif state.outcome == "waiting_approval":
        outcome = "waiting_approval"
    else:
        outcome = "queued"
    return result_of(state, outcome)


def with_human(store: Store, ticket_id: str, idx: int) -> RoundResult:
    """The result for customer turn ``idx`` while a person owns the ticket: stored for them, no round ran."""
    with store.connection() as conn:
        round_ = store.history.ticket_round(conn, ticket_id)
    return RoundResult(ticket_id=ticket_id, round=round_, outcome="with_human", handled_upto=idx)
