# Generated from _lifecycle_async.py by scripts/async_to_sync.py: edit that file and run the script.
"""Data lifecycle: forget a customer, prune closed tickets' step records, reset for a reseed.

Where memory of a customer lives, so that forgetting misses nothing:

* ``supportbot.tickets`` and every table keyed by ``ticket_id`` (turns, tool calls, steps,
  checkpoints, approvals, effects, prunes): found by that column, so a table added by a later
  migration is covered without touching this module;
* ``supportbot.customer_profiles``, keyed by the business system's customer id;
* the business system itself, through the backend's optional ``forget_customer`` hook
  (:class:`~supportbot.backend.base.ForgetsCustomers`), in the same transaction when it can.

Pruning relies on how the store's ``load`` rebuilds a state: the latest checkpoint, the step records
from that checkpoint's step on, and the turns and tool calls those records count. Turns and tool
calls are never pruned; records before the latest checkpoint are, and ``supportbot.prunes`` says
so. Bytes are measured as the sum of ``pg_column_size`` of the deleted rows (their stored size,
without tuple headers and index entries); PostgreSQL reuses that space after (auto)vacuum, and
returns it to the operating system only on ``VACUUM FULL``.

A schedule that suits most deployments: nightly, ``prune(closed_before=now - 30 days)`` (the last
round of every quiet ticket stays replayable step by step), and monthly
``prune(closed_before=now - 180 days, keep="final")``. Neither touches turns or tool calls, so
what the customer and the agent said is kept until ``forget_customer``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, get_args

from .._reports import DeletionReport, KeepMode, Pruned, ResetReport
from ..backend.base import Backend, ForgetsCustomers, ResetsData
from ..errors import CustomerBusy
from ..store._handles import Tx
from ..store._lifecycle import SCHEMA
from ..store._rows import HeldTicket, PruneReport
from . import _validate as validate

if TYPE_CHECKING:
    from ..store._store import Store

log = logging.getLogger(__name__)


KEEP_MODES: tuple[KeepMode, ...] = get_args(KeepMode)


# -- forget ------------------------------------------------------------------------------------


def forget_customer(
    store: Store,
    backend: Backend,
    email: str,
    *,
    force: bool,
    audit: Callable[[Tx, list[str]], None] | None = None,
) -> DeletionReport:
    """Delete every trace of the customer with ``email``, in one transaction.

    Refuses with :class:`CustomerBusy` while one of their tickets is mid-round (a live lease) or
    waits for an approval, unless ``force``: deleting the rows then cancels the round, whose
    worker fails its next lease check, and the approval, which no one can decide any more.
    """
    email, force = validate.email(email), validate.flag("force", force)
    known = backend.get_customer(email)
    with store.transaction() as tx:
        held = store.lifecycle.lock_customer_tickets(tx, email)
        busy = [t for t in held if t.leased_until is not None or t.awaiting_approval]
        if busy and not force:
            raise CustomerBusy(_busy_message(email, busy), tickets=tuple(t.id for t in busy))
        if busy:
            log.warning("forgetting %s cancels %s", email, ", ".join(t.id for t in busy))
        ids = [t.id for t in held]
        customer_ids = sorted(({known.id} if known else set()) | store.lifecycle.customer_ids_seen(tx, ids))
        rows = store.lifecycle.delete_tickets(tx, ids)
        rows[f"{SCHEMA}.customer_profiles"] = store.lifecycle.delete_profiles(tx, customer_ids)
        corrected = store.lifecycle.delete_profile_corrections(tx, customer_ids)
        if corrected:
            rows[f"{SCHEMA}.profile_corrections"] = corrected
        if isinstance(backend, ForgetsCustomers):
            rows.update(backend.forget_customer(email, ticket_ids=ids, tx=tx))
        else:
            log.warning("the backend has no forget_customer hook: %s stays in the business system", email)
        if audit is not None and any(rows.values()):  # its row, in the deleting transaction
            audit(tx, ids)
    return DeletionReport(email=email, tickets=ids, rows=rows)


def _busy_message(email: str, busy: Sequence[HeldTicket]) -> str:
    reasons = []
    for t in busy:
        if t.leased_until is not None:
            reasons.append(f"{t.id} is mid-round (a worker holds it until {t.leased_until:%H:%M:%S})")
        else:
            reasons.append(f"{t.id} is waiting for a refund approval")
    return (
        f"cannot forget {email} yet: " + "; ".join(reasons) + ". Nothing was deleted. Retry later, or pass "
        "force=True to cancel them and delete anyway"
    )


# -- prune -------------------------------------------------------------------------------------


def prune(
    store: Store,
    *,
    closed_before: datetime,
    keep: KeepMode = "last",
    statuses: Sequence[str] = ("resolved", "escalated"),
    limit: int | None = None,
) -> PruneReport:
    """Remove step records and checkpoints that closed tickets' current states do not need.

    A ticket qualifies when it is resolved or escalated, no worker holds it, no approval waits,
    and nothing happened to it since ``closed_before``. ``keep="last"`` keeps its last round
    from that round's checkpoint on (taken after prepare_context), so ``state_at`` still works for
    every step from there;
    ``keep="final"`` first writes a checkpoint of the final state and keeps only the last step.
    Either way ``state()`` loads exactly as before, and a follow-up message starts a new round.
    """
    closed_before = validate.moment("closed_before", closed_before)
    keep = validate.choice("keep", keep, KEEP_MODES)
    return store.prune_closed(
        closed_before=closed_before, final=keep == "final", statuses=statuses, limit=limit
    )


def pruned(store: Store, conn: Tx, ticket_id: str) -> Pruned | None:
    """How much of the ticket's step history was pruned, or None if none was."""
    totals = store.lifecycle.prune_totals(conn, ticket_id)
    if totals.kept_from is None or totals.pruned_at is None:
        return None
    return Pruned(
        ticket_id=ticket_id,
        kept_from=int(totals.kept_from),
        steps=int(totals.steps or 0),
        checkpoints=int(totals.checkpoints or 0),
        bytes=int(totals.bytes or 0),
        pruned_at=totals.pruned_at,
    )


# -- reset -------------------------------------------------------------------------------------


def reset(store: Store, backend: Backend) -> ResetReport:
    """Empty every engine table (and the demo data) in one transaction.

    The ticket-number sequence is *not* reset: a ticket id is never handed out twice, so a
    snapshot that somehow survived could never be read as part of a new ticket (seed 000's
    T000153, where a reseed restarted numbering and a new ticket continued an old conversation).
    """
    with store.transaction() as tx:
        ticket_ids, rows = store.lifecycle.truncate_engine_tables(tx)
        if isinstance(backend, ResetsData):
            rows.update(backend.reset_data(tx=tx))
    return ResetReport(tickets=ticket_ids, rows=rows)
