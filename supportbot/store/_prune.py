# Generated from _prune_async.py by scripts/async_to_sync.py: edit that file and run the script.
"""Pruning closed tickets' step records (what ``SupportBot.prune`` and the retention sweep do),
below both: the checks of the caller's arguments are the caller's. How a state is rebuilt, and so
what may go, is in supportbot/_front/_lifecycle.py's docstring."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING

import psycopg

from . import _lifecycle as lifecycle_repo
from ._codec import encode_state
from ._rows import PruneReport

if TYPE_CHECKING:  # the store calls these as its methods, with itself
    from ._store import Store


def prune_closed(
    store: Store,
    *,
    closed_before: datetime,
    final: bool,
    statuses: Sequence[str] = ("resolved", "escalated"),
    limit: int | None = None,
) -> PruneReport:
    """Prune the closed, quiet tickets (at most ``limit``) to their last round, or with ``final``
    to their final state alone."""
    schema = lifecycle_repo.SCHEMA
    with store.transaction() as tx:
        ids = lifecycle_repo.prune_candidates(tx, closed_before, statuses=statuses, limit=limit)
        added = _checkpoint_final_states(store, tx, ids) if final and ids else 0
        kept_from = lifecycle_repo.latest_checkpoints(tx, ids)
        per_ticket: dict[str, list[int]] = {}  # ticket -> [steps, checkpoints, bytes]
        rows: dict[str, int] = {}
        for column, table in ((1, "checkpoints"), (0, "steps")):  # checkpoints first: no cascade
            for ticket_id, count, size in lifecycle_repo.delete_before(tx, table, kept_from):
                tally = per_ticket.setdefault(ticket_id, [0, 0, 0])
                tally[column] += count
                tally[2] += size
                rows[f"{schema}.{table}"] = rows.get(f"{schema}.{table}", 0) + count
        lifecycle_repo.record_prunes(tx, kept_from, per_ticket)
    pruned = sorted(per_ticket)
    return PruneReport(tickets=pruned, rows=rows, bytes_freed=sum(t[2] for t in per_ticket.values()) - added)


def _checkpoint_final_states(store: Store, tx: psycopg.Connection, ids: Sequence[str]) -> int:
    """Write a checkpoint of each ticket's final state where there is none; bytes written."""
    added = 0
    for ticket_id in ids:
        loaded = store.load(tx, ticket_id)
        if loaded.seq == 0:
            continue
        added += lifecycle_repo.insert_checkpoint(tx, ticket_id, loaded.seq, encode_state(loaded.state))
    return added
