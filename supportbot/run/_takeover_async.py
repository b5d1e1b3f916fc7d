"""A person takes a ticket over from the bot, answers the customer, and hands it back.

Each action is a step record between rounds (next step None), so history, ``state_at`` and
``fork`` see it like any step: ``human_takeover`` and ``hand_back`` set the state's
``human_agent``, ``human_reply`` adds the person's turn (role ``agent``, ``author`` their name)
after any customer messages that arrived since. The ticket row mirrors the owner in
``human_agent`` and status ``with_human``; no round takes a ticket whose row names a person (the
lease statements check it), so the bot answers nothing until the hand-back.

Each action takes the ticket's lease for its one transaction, which also writes its audit row;
while a round runs it raises TicketBusy instead of waiting: a round may wait minutes on a model,
and a person clicking "take over" should hear so at once and retry. A ticket inside a round
(paused for a refund decision, or left unfinished by a crashed worker) is refused: decide the
refund or resume the ticket first.
"""

from __future__ import annotations

import dataclasses

from .._state import StateUpdate, SupportState, Turn
from ..errors import NotTakenOver, TakeoverRefused
from ..memory._tokens import with_tokens
from ..store._handles import AsyncTx
from ..store._rows import AuditAction, LeaseTaken, Loaded
from ._engine_async import AsyncEngine
from ._graph import HAND_BACK, HUMAN_REPLY, TAKEOVER
from ._rounds import RoundResult


async def take_over(engine: AsyncEngine, ticket_id: str, *, agent: str, source: str) -> SupportState:
    """Make ``agent`` the ticket's owner; returns its state with every stored turn to show them."""
    owner, loaded, _ = await engine.hold(ticket_id)
    try:
        current = loaded.state.human_agent
        if current and current != agent:
            raise TakeoverRefused(
                f"ticket {ticket_id} is already taken over by {current}; they hand it back first",
                ticket_id=ticket_id,
            )
        if loaded.next_step is not None:
            raise TakeoverRefused(
                _inside_round(ticket_id, loaded), ticket_id=ticket_id, step=loaded.next_step
            )
        if not current:  # taking over twice is one takeover
            async with engine.store.transaction() as tx:
                after = await engine.record_action(tx, loaded, owner, TAKEOVER, {"human_agent": agent})
                await engine.store.tickets.set_human_agent(tx, ticket_id, owner, agent)
                await _audit(engine, tx, loaded, agent, "take_over", source, {"seq": after.seq})
    finally:
        await engine.release(ticket_id, owner)
    return (await engine.latest(ticket_id)).state


async def reply_as_human(engine: AsyncEngine, ticket_id: str, text: str, *, agent: str, source: str) -> Turn:
    """Store ``agent``'s reply to the customer as a turn; returns it (its ``idx`` set)."""
    owner, loaded, _ = await engine.hold(ticket_id)
    try:
        _check_owner(ticket_id, loaded, agent)
        state = loaded.state
        async with engine.store.transaction() as tx:
            stored = await engine.store.tickets.lock_turn_count(tx, ticket_id)
            # Customer messages stored since the last record come first: the reply answers them.
            arrived = (await engine.store.turns(tx, ticket_id, stored))[len(state.turns) :]
            turn = Turn("agent", text, round=state.round + 1, created_at=engine.deps.clock(), author=agent)
            update: StateUpdate = {
                "turns": [dataclasses.replace(t, idx=None) for t in arrived] + [with_tokens(turn)],
                "handled_upto": stored + 1,
            }
            after = await engine.record_action(tx, loaded, owner, HUMAN_REPLY, update, stored_turns=stored)
            await _audit(
                engine,
                tx,
                loaded,
                agent,
                "human_reply",
                source,
                {"seq": after.seq, "turn": stored, "chars": len(text)},
            )
    finally:
        await engine.release(ticket_id, owner)
    reply = after.state.turns[-1]
    engine.store.remember_turn(ticket_id, reply)
    return reply


async def hand_back(
    engine: AsyncEngine, ticket_id: str, *, agent: str, note: str, source: str
) -> RoundResult | None:
    """Give the ticket back to the bot; a round answers customer messages no one answered yet.

    Returns that round's result, or None when no message waited (the next one starts a round).
    ``note`` goes to the audit log only: it is for colleagues, never shown to the model.
    """
    owner, loaded, turn_count = await engine.hold(ticket_id)
    try:
        _check_owner(ticket_id, loaded, agent)
        async with engine.store.transaction() as tx:
            # outcome: the last round's "escalated" is over, so the ticket is open again.
            after = await engine.record_action(
                tx, loaded, owner, HAND_BACK, {"human_agent": "", "outcome": None}
            )
            await engine.store.tickets.set_human_agent(tx, ticket_id, owner, None)
            detail: dict[str, object] = {"seq": after.seq}
            if note:
                detail["note"] = note
            await _audit(engine, tx, loaded, agent, "hand_back", source, detail)
    except BaseException:
        await engine.release(ticket_id, owner)
        raise
    # The lease is still ours: the round (if a message waits) runs under it, and drive frees it.
    results = await engine.drive(ticket_id, owner=owner, taken=LeaseTaken(after.seq, turn_count)) or []
    return results[-1] if results else None


def _check_owner(ticket_id: str, loaded: Loaded, agent: str) -> None:
    current = loaded.state.human_agent
    if current != agent:
        who = f"{current} owns it" if current else "the bot owns it: take_over() it first"
        raise NotTakenOver(
            f"{agent} has not taken ticket {ticket_id} over ({who}); nothing was recorded",
            ticket_id=ticket_id,
        )


def _inside_round(ticket_id: str, loaded: Loaded) -> str:
    if loaded.status == "waiting_approval":
        return (
            f"ticket {ticket_id} waits for a refund decision; approve() or reject() it first, then take it "
            "over. Nothing was recorded"
        )
    return (
        f"ticket {ticket_id} stopped inside a round (before step {loaded.next_step!r}); resume() finishes "
        "it, then take it over. Nothing was recorded"
    )


async def _audit(
    engine: AsyncEngine,
    tx: AsyncTx,
    loaded: Loaded,
    agent: str,
    action: AuditAction,
    source: str,
    detail: dict[str, object],
) -> None:
    ticket = loaded.state.ticket
    await engine.store.audit.record(
        tx,
        actor=agent,
        action=action,
        source=source,
        ticket_id=ticket.id,
        customer_email=ticket.customer_email,
        detail=detail,
    )
