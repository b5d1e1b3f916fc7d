"""What a caller is told about a round: its RoundResult once it ended or paused for a refund decision,
``queued`` while a worker still has it to run, ``escalated`` or ``with_human`` when a person answers.

A caller whose round ran elsewhere (``wait()``, a message another worker took up) reads its result
back from the round's latest step record.
"""

from __future__ import annotations

from .._state import Outcome
from ..store._rows import LeaseTaken
from ..store._store_async import AsyncStore
from ._engine_async import AsyncEngine
from ._rounds import RoundResult, result_of


async def answer(
    engine: AsyncEngine,
    ticket_id: str,
    idx: int,
    *,
    owner: str | None = None,
    taken: LeaseTaken | None = None,
) -> RoundResult:
    """Run the ticket's pending rounds in this thread; the result of the one that answers turn ``idx``.

    ``queued`` when no round has taken the message up (another worker holds the ticket).
    """
    for result in await engine.drive(ticket_id, owner=owner, taken=taken) or []:
        if result.handled_upto > idx:
            return result
    async with engine.store.connection() as conn:
        round_ = await engine.store.history.round_of_message(conn, ticket_id, idx)
    if round_ is None:
        return RoundResult(ticket_id=ticket_id, round=0, outcome="queued")
    return await of_round(engine.store, ticket_id, round_)


async def finished(
    store: AsyncStore, ticket_id: str, idx: int | None, round_: int | None
) -> RoundResult | None:
    """The result ``wait()`` returns for turn ``idx`` (or round ``round_``); None while it is to come."""
    async with store.connection() as conn:
        if round_ is None:
            assert idx is not None
            round_ = await store.history.round_of_message(conn, ticket_id, idx)
        handed_off = await store.queue.handed_off(conn, ticket_id)
        person = await store.tickets.human_agent(conn, ticket_id)
    if round_ is not None:
        result = await of_round(store, ticket_id, round_)
        if result.outcome != "queued":
            return result
    if handed_off:
        return RoundResult(ticket_id=ticket_id, round=round_ or 0, outcome="escalated")
    if person is not None and idx is not None:  # the message is for the person who took the ticket
        return await with_human(store, ticket_id, idx)
    return None


async def of_round(store: AsyncStore, ticket_id: str, round_: int) -> RoundResult:
    """Round ``round_``'s result as its latest step record shows it (``queued`` before its first)."""
    async with store.connection() as conn:
        seq = await store.history.last_seq_of_round(conn, ticket_id, round_)
        if seq is None:
            return RoundResult(ticket_id=ticket_id, round=round_, outcome="queued")
        loaded = await store.load(conn, ticket_id, at=seq)
    state = loaded.state
    outcome: Outcome
    if loaded.next_step is None:
        outcome = state.outcome or "resolved"
    elif state.outcome == "waiting_approval":
        outcome = "waiting_approval"
    else:
        outcome = "queued"
    return result_of(state, outcome)


async def with_human(store: AsyncStore, ticket_id: str, idx: int) -> RoundResult:
    """The result for customer turn ``idx`` while a person owns the ticket: stored for them, no round ran."""
    async with store.connection() as conn:
        round_ = await store.history.ticket_round(conn, ticket_id)
    return RoundResult(ticket_id=ticket_id, round=round_, outcome="with_human", handled_upto=idx)
