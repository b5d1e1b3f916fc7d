"""Forking a ticket: a new ticket whose history is a copy of another's up to one step.

The copy and its audit row are one transaction. The fork starts in the status the original had right
after that step (``in_progress`` from inside a round), so the next ``resume`` or message carries on
from there, on the fork.
"""

from __future__ import annotations

from ..errors import ForkRefused
from ..store._store_async import AsyncStore
from ._record import ticket_status


async def fork(store: AsyncStore, ticket_id: str, seq: int, *, actor: str, source: str) -> str:
    """Copy ticket ``ticket_id``'s history up to step ``seq`` into a new ticket; returns its id.

    Raises ForkRefused inside a round that holds a refund request: the request is one row of the
    business system, and two tickets deciding it would decide one refund twice.
    """
    async with store.transaction() as tx:
        loaded = await store.load(tx, ticket_id, at=seq)
        if loaded.next_step is not None and loaded.state.refund_request is not None:
            raise ForkRefused(
                f"step {seq} of ticket {ticket_id} is inside a round that holds refund request "
                f"{loaded.state.refund_request.id}; a fork would share that request with the original. "
                "Fork from a step before the request was filed, or from the end of the round",
                ticket_id=ticket_id,
                at=seq,
                refund=loaded.state.refund_request.id,
            )
        origin = loaded.state.ticket
        new = await store.tickets.create_ticket(
            tx,
            email=origin.customer_email,
            subject=origin.subject,
            body=origin.body,
            now=origin.created_at,
        )
        await store.history.copy_history(
            tx,
            ticket_id,
            new.id,
            seq=seq,
            turn_count=len(loaded.state.turns),
            tool_call_count=len(loaded.state.tool_log),
            fact_count=len(loaded.state.facts),
            status=ticket_status(loaded.state, loaded.next_step),
            human_agent=loaded.state.human_agent or None,
        )
        await store.audit.record(
            tx,
            actor=actor,
            action="fork",
            source=source,
            ticket_id=ticket_id,
            customer_email=loaded.state.ticket.customer_email,
            detail={"seq": seq, "fork": new.id},
        )
    return new.id
