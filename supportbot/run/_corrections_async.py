"""An operator corrects or retracts a fact pinned in a ticket's ledger, or an entry of a
customer's profile.

The ledger is append-only, so a correction is one more fact: the same kind and subject, the
operator's value (empty for a retraction), role ``operator``, superseding the fact it corrects. It
is recorded as a step between rounds (``correct_fact``, next step None) under the ticket's lease,
with its audit row in the same transaction, so history, ``state_at`` and ``fork`` see it like any
step. The next prompt shows the corrected value with the one it replaced (memory/_ledger.py), or
the retracted value marked as wrong; a customer's later statement supersedes an operator's value
as it would any other.

A profile is derived from the business system's records, which are not ours to change: a
profile correction is a row of its own (sql/023_memory_corrections.sql) that the builder applies
on top of them, so every process's next profile shows it.
"""

from __future__ import annotations

import re

from .._records import Customer
from .._state import Fact, Turn
from ..errors import CorrectionRefused
from ..memory._facts import OPERATOR, current_facts, extract
from ..memory._profile import Profile, profile_entries
from ..memory._sentences import SENTENCE_KINDS, normalize_sentence
from ..store._store_async import AsyncStore
from ._engine_async import AsyncEngine
from ._graph import CORRECT_FACT
from ._profiles_async import Profiles


async def correct_fact(
    engine: AsyncEngine,
    ticket_id: str,
    position: int,
    *,
    value: str | None,
    reason: str,
    actor: str,
    source: str,
) -> Fact:
    """Replace the current fact at ledger ``position`` with ``value`` (None: retract it); returns
    the fact recorded. Refused inside a round (decide or resume it first)."""
    owner, loaded, _ = await engine.hold(ticket_id)
    try:
        state = loaded.state
        if loaded.next_step is not None:
            raise CorrectionRefused(
                f"ticket {ticket_id} is inside a round (before step {loaded.next_step!r}); decide or resume "
                "it, then correct the fact. Nothing was recorded",
                ticket_id=ticket_id,
                reason="inside_round",
            )
        current = dict(current_facts(state.facts))
        old = current.get(position)
        if old is None or not old.value:
            raise CorrectionRefused(
                f"ticket {ticket_id} has no current fact at position {position} (the ticket page lists "
                "them); nothing was recorded",
                ticket_id=ticket_id,
                reason="no_fact",
                position=position,
            )
        if value is not None and value == old.value:
            raise CorrectionRefused(
                f"fact {position} of ticket {ticket_id} already reads {value!r}; nothing was recorded",
                ticket_id=ticket_id,
                reason="unchanged",
                position=position,
            )
        said = state.turns[old.turn] if 0 <= old.turn < len(state.turns) else None
        fact = _replacement(old, position, value, said)
        async with engine.store.transaction() as tx:
            after = await engine.record_action(tx, loaded, owner, CORRECT_FACT, {"facts": [fact]})
            ticket = state.ticket
            await engine.store.audit.record(
                tx,
                actor=actor,
                action="correct_fact",
                source=source,
                ticket_id=ticket.id,
                customer_email=ticket.customer_email,
                # The reason under "note": forgetting the customer erases it with the other notes.
                detail={"seq": after.seq, "fact": position, "kind": old.kind, "retracted": value is None,
                        "note": reason},
            )  # fmt: skip
    finally:
        await engine.release(ticket_id, owner)
    return fact


def _replacement(old: Fact, position: int, value: str | None, said: Turn | None) -> Fact:
    if value is None:
        return Fact(old.kind, "", "", old.turn, old.subject, OPERATOR, position)
    return Fact(old.kind, value, _key(old.kind, value, said), old.turn, old.subject, OPERATOR, position)


def _key(kind: str, value: str, said: Turn | None) -> str:
    """The canonical value, as the extractor writes it for this kind ("CNY 200.00", "2026-10-01";
    a date without a year read as of the turn that stated the old value); else the value's own
    normal form."""
    when = said.created_at if said is not None else None
    for found in extract(Turn("customer", value, created_at=when), 0, mask=False):
        if found.kind == kind:
            return found.key
    return normalize_sentence(value) if kind in SENTENCE_KINDS else re.sub(r"\s+", "", value).upper()


async def correct_profile(
    store: AsyncStore,
    profiles: Profiles,
    customer: Customer,
    entry: str,
    key: str,
    *,
    value: str | None,
    reason: str,
    actor: str,
    source: str,
) -> Profile:
    """Retract (``value`` None) or correct one entry of the customer's current profile, as it
    shows it; returns the profile after. An issue and a channel preference can only be retracted."""
    profile = await profiles.for_customer(customer)
    shown = next((e for e in profile_entries(profile) if (e.entry, e.key) == (entry, key)), None)
    if shown is None:
        raise CorrectionRefused(
            f"the profile of {customer.email} has no {entry} entry {key!r} (its page lists them); "
            "nothing was recorded",
            reason="no_entry",
            entry=entry,
        )
    if value is not None and not shown.correctable:
        raise CorrectionRefused(
            f"a {entry} entry of a profile can only be retracted, not given another value; "
            "nothing was recorded",
            reason="retract_only",
            entry=entry,
        )
    async with store.transaction() as tx:
        await store.profiles.add_profile_correction(
            tx, customer.id, entry=entry, key=key, value=value, reason=reason, actor=actor
        )
        await store.audit.record(
            tx,
            actor=actor,
            action="correct_profile",
            source=source,
            customer_email=customer.email,
            detail={"entry": entry, "retracted": value is None, "note": reason},
        )
    profiles.corrected()
    return await profiles.for_customer(customer)
