"""Data lifecycle: forget a customer, prune closed tickets' step records, reset for a reseed.

Where memory of a customer lives, so that forgetting misses nothing:

* ``supportbot.tickets`` and every table keyed by ``ticket_id`` (turns, tool calls, steps,
  checkpoints, approvals, effects, prunes): found by that column, so a table added by a later
  migration is covered without touching this module;
* ``supportbot.customer_profiles``, keyed by the business system's customer id;
* the business system itself, through the backend's optional ``forget_customer`` hook
  (:class:`~supportbot.backend.base.ForgetsCustomers`), in the same transaction when it can.

Pruning relies on how ``Store.load`` rebuilds a state: the latest checkpoint, the step records
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
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Literal, get_args

import psycopg
from psycopg import sql
from psycopg.types.json import Jsonb

from . import validate
from .backend.base import Backend, ForgetsCustomers, ResetsData
from .errors import CustomerBusy
from .store.codec import encode_state

if TYPE_CHECKING:
    from .store.store import Store

log = logging.getLogger(__name__)

KeepMode = Literal["last", "final"]
"""What ``prune`` keeps of a closed ticket: its last round from its checkpoint on, or only its final state."""
KEEP_MODES: tuple[KeepMode, ...] = get_args(KeepMode)
SCHEMA = "supportbot"

# Children before parents, so that each count is the table's own and not hidden by a cascade.
# Tables found by their ticket_id column but not listed here go first (they reference these).
_TICKET_TABLE_ORDER = ("checkpoints", "approvals", "effects", "prunes", "tool_calls", "turns", "steps")
# The audit log outlives the tickets it names: forgetting redacts its rows (audit.redact_customer)
# and reset leaves it alone; its trigger refuses deleting them.
_KEPT_TABLES = frozenset({"audit"})


@dataclass(frozen=True, slots=True)
class DeletionReport:
    """What ``forget_customer`` deleted: the customer's tickets and rows per ``schema.table``."""

    email: str
    tickets: list[str]
    rows: dict[str, int]

    @property
    def total(self) -> int:
        return sum(self.rows.values())


@dataclass(frozen=True, slots=True)
class PruneReport:
    """What ``prune`` removed; ``bytes_freed`` is the net ``pg_column_size`` of the rows."""

    tickets: list[str]
    rows: dict[str, int]
    bytes_freed: int


@dataclass(frozen=True, slots=True)
class ResetReport:
    """What ``reset`` emptied: the tickets that existed and rows per ``schema.table``."""

    tickets: list[str]
    rows: dict[str, int]

    @property
    def total(self) -> int:
        return sum(self.rows.values())


@dataclass(frozen=True, slots=True)
class Pruned:
    """A ticket's pruning so far: step records before ``kept_from`` are gone."""

    ticket_id: str
    kept_from: int
    steps: int
    checkpoints: int
    bytes: int
    pruned_at: datetime


# -- forget ------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Held:
    id: str
    status: str
    leased_until: datetime | None  # set while a worker holds the ticket
    awaiting_approval: bool


def forget_customer(
    store: Store,
    backend: Backend,
    email: str,
    *,
    force: bool,
    audit: Callable[[psycopg.Connection, list[str]], None] | None = None,
) -> DeletionReport:
    """Delete every trace of the customer with ``email``, in one transaction.

    Refuses with :class:`CustomerBusy` while one of their tickets is mid-round (a live lease) or
    waits for an approval, unless ``force``: deleting the rows then cancels the round, whose
    worker fails its next lease check, and the approval, which no one can decide any more.
    """
    email, force = validate.email(email), validate.flag("force", force)
    known = backend.get_customer(email)
    with store.transaction() as tx:
        held = _lock_tickets(tx, email)
        busy = [t for t in held if t.leased_until is not None or t.awaiting_approval]
        if busy and not force:
            raise CustomerBusy(_busy_message(email, busy), tickets=tuple(t.id for t in busy))
        if busy:
            log.warning("forgetting %s cancels %s", email, ", ".join(t.id for t in busy))
        ids = [t.id for t in held]
        customer_ids = sorted(({known.id} if known else set()) | _customer_ids_seen(tx, ids))
        rows = _delete_tickets(tx, ids)
        rows[f"{SCHEMA}.customer_profiles"] = _count(
            tx,
            sql.SQL(
                "WITH gone AS (DELETE FROM supportbot.customer_profiles"
                " WHERE customer_id = ANY(%(c)s) RETURNING 1) SELECT count(*) FROM gone"
            ),
            {"c": customer_ids},
        )
        if isinstance(backend, ForgetsCustomers):
            rows.update(backend.forget_customer(email, ticket_ids=ids, tx=tx))
        else:
            log.warning("the backend has no forget_customer hook: %s stays in the business system", email)
        if audit is not None and any(rows.values()):  # its row, in the deleting transaction
            audit(tx, ids)
    return DeletionReport(email=email, tickets=ids, rows=rows)


def _lock_tickets(tx: psycopg.Connection, email: str) -> list[_Held]:
    # FOR UPDATE: a worker cannot take a lease, nor a step record its foreign key, until we commit.
    rows = tx.execute(
        "SELECT t.id, t.status, CASE WHEN t.lease_expires > now() THEN t.lease_expires END,"
        " EXISTS (SELECT 1 FROM supportbot.approvals a WHERE a.ticket_id = t.id AND a.decided_at IS NULL)"
        " FROM supportbot.tickets t WHERE lower(t.customer_email) = lower(%s) ORDER BY t.id FOR UPDATE OF t",
        (email,),
    ).fetchall()
    return [
        _Held(
            id=r[0],
            status=r[1],
            leased_until=r[2],
            awaiting_approval=bool(r[3]) or r[1] == "waiting_approval",
        )
        for r in rows
    ]


def _busy_message(email: str, busy: Sequence[_Held]) -> str:
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


def _customer_ids_seen(tx: psycopg.Connection, ticket_ids: Sequence[str]) -> set[str]:
    """Customer ids the engine looked up for these tickets: the profile cache is keyed by them."""
    rows = tx.execute(
        "SELECT DISTINCT result->>'id' FROM supportbot.tool_calls WHERE ticket_id = ANY(%s)"
        " AND name = 'get_customer' AND jsonb_typeof(result) = 'object' AND result ? 'id'",
        (list(ticket_ids),),
    ).fetchall()
    return {r[0] for r in rows}


def _delete_tickets(tx: psycopg.Connection, ids: Sequence[str]) -> dict[str, int]:
    rows: dict[str, int] = {}
    for table in _ticket_tables(tx):
        rows[f"{SCHEMA}.{table}"] = _count(
            tx,
            sql.SQL(
                "WITH gone AS (DELETE FROM {} WHERE ticket_id = ANY(%(t)s) RETURNING 1)"
                " SELECT count(*) FROM gone"
            ).format(sql.Identifier(SCHEMA, table)),
            {"t": list(ids)},
        )
    rows[f"{SCHEMA}.tickets"] = _count(
        tx,
        sql.SQL(
            "WITH gone AS (DELETE FROM supportbot.tickets WHERE id = ANY(%(t)s) RETURNING 1)"
            " SELECT count(*) FROM gone"
        ),
        {"t": list(ids)},
    )
    return rows


def _ticket_tables(tx: psycopg.Connection) -> list[str]:
    found = {
        r[0]
        for r in tx.execute(
            "SELECT c.table_name FROM information_schema.columns c JOIN information_schema.tables t"
            " USING (table_schema, table_name) WHERE c.table_schema = %s AND c.column_name = 'ticket_id'"
            " AND t.table_type = 'BASE TABLE'",
            (SCHEMA,),
        ).fetchall()
    }
    found -= _KEPT_TABLES
    known = [t for t in _TICKET_TABLE_ORDER if t in found]
    return sorted(found - set(known)) + known


def _count(
    tx: psycopg.Connection, query: sql.SQL | sql.Composed, params: dict[str, object] | None = None
) -> int:
    row = tx.execute(query, params).fetchone()
    return int(row[0]) if row else 0


# -- prune -------------------------------------------------------------------------------------

# Closed, not held by a worker, not waiting for anyone, and quiet since the cutoff.
_CANDIDATES = """
SELECT t.id FROM supportbot.tickets t
WHERE t.status IN ('resolved', 'escalated')
  AND (t.lease_expires IS NULL OR t.lease_expires < now())
  AND t.updated_at < %(cutoff)s
  AND NOT EXISTS (SELECT 1 FROM supportbot.steps s WHERE s.ticket_id = t.id AND s.created_at >= %(cutoff)s)
  AND NOT EXISTS (SELECT 1 FROM supportbot.approvals a WHERE a.ticket_id = t.id AND a.decided_at IS NULL)
ORDER BY t.id
FOR UPDATE OF t SKIP LOCKED
"""

_DELETE_BEFORE = """
WITH cut AS (SELECT * FROM unnest(%(t)s::text[], %(k)s::int[]) AS cut (ticket_id, kept_from)),
gone AS (
    DELETE FROM {table} x USING cut WHERE x.ticket_id = cut.ticket_id AND x.seq < cut.kept_from
    RETURNING x.ticket_id, pg_column_size(x.*) AS bytes
)
SELECT ticket_id, count(*), coalesce(sum(bytes), 0) FROM gone GROUP BY ticket_id
"""


def prune(store: Store, *, closed_before: datetime, keep: KeepMode = "last") -> PruneReport:
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
    with store.transaction() as tx:
        ids = [r[0] for r in tx.execute(_CANDIDATES, {"cutoff": closed_before}).fetchall()]
        added = _checkpoint_final_states(store, tx, ids) if keep == "final" and ids else 0
        kept_from = dict(
            tx.execute(
                "SELECT ticket_id, max(seq) FROM supportbot.checkpoints WHERE ticket_id = ANY(%s) GROUP BY "
                "ticket_id",
                (ids,),
            ).fetchall()
        )
        cut = {"t": list(kept_from), "k": list(kept_from.values())}
        per_ticket: dict[str, list[int]] = {}  # ticket -> [steps, checkpoints, bytes]
        rows: dict[str, int] = {}
        for column, table in ((1, "checkpoints"), (0, "steps")):  # checkpoints first: no cascade
            for ticket_id, count, size in tx.execute(
                sql.SQL(_DELETE_BEFORE).format(table=sql.Identifier(SCHEMA, table)), cut
            ).fetchall():
                tally = per_ticket.setdefault(ticket_id, [0, 0, 0])
                tally[column] += int(count)
                tally[2] += int(size)
                rows[f"{SCHEMA}.{table}"] = rows.get(f"{SCHEMA}.{table}", 0) + int(count)
        _record_prunes(tx, kept_from, per_ticket)
    pruned = sorted(per_ticket)
    return PruneReport(tickets=pruned, rows=rows, bytes_freed=sum(t[2] for t in per_ticket.values()) - added)


def _checkpoint_final_states(store: Store, tx: psycopg.Connection, ids: Sequence[str]) -> int:
    """Write a checkpoint of each ticket's final state where there is none; bytes written."""
    added = 0
    for ticket_id in ids:
        loaded = store.load(tx, ticket_id)
        if loaded.seq == 0:
            continue
        row = tx.execute(
            "INSERT INTO supportbot.checkpoints (ticket_id, seq, state) VALUES (%s, %s, %s)"
            " ON CONFLICT (ticket_id, seq) DO NOTHING RETURNING pg_column_size(checkpoints.*)",
            (ticket_id, loaded.seq, Jsonb(encode_state(loaded.state))),
        ).fetchone()
        added += int(row[0]) if row else 0
    return added


def _record_prunes(
    tx: psycopg.Connection, kept_from: dict[str, int], per_ticket: dict[str, list[int]]
) -> None:
    if not per_ticket:
        return
    with tx.cursor() as cur:
        cur.executemany(
            "INSERT INTO supportbot.prunes (ticket_id, kept_from, steps, checkpoints, bytes) VALUES (%s, "
            "%s, %s, %s, %s)"
            " ON CONFLICT (ticket_id, kept_from) DO UPDATE SET steps = prunes.steps + EXCLUDED.steps,"
            " checkpoints = prunes.checkpoints + EXCLUDED.checkpoints, bytes = prunes.bytes + EXCLUDED.bytes",
            [(t, kept_from[t], s, c, b) for t, (s, c, b) in sorted(per_ticket.items())],
        )


def pruned(conn: psycopg.Connection, ticket_id: str) -> Pruned | None:
    """How much of the ticket's step history was pruned, or None if none was."""
    row = conn.execute(
        "SELECT max(kept_from), sum(steps), sum(checkpoints), sum(bytes), max(pruned_at)"
        " FROM supportbot.prunes WHERE ticket_id = %s",
        (ticket_id,),
    ).fetchone()
    if row is None or row[0] is None:
        return None
    return Pruned(
        ticket_id=ticket_id,
        kept_from=int(row[0]),
        steps=int(row[1]),
        checkpoints=int(row[2]),
        bytes=int(row[3]),
        pruned_at=row[4],
    )


# -- reset -------------------------------------------------------------------------------------


def reset(store: Store, backend: Backend) -> ResetReport:
    """Empty every engine table (and the demo data) in one transaction.

    The ticket-number sequence is *not* reset: a ticket id is never handed out twice, so a
    snapshot that somehow survived could never be read as part of a new ticket (seed 000's
    T000153, where a reseed restarted numbering and a new ticket continued an old conversation).
    """
    with store.transaction() as tx:
        tables = [
            r[0]
            for r in tx.execute(
                "SELECT tablename FROM pg_tables WHERE schemaname = %s AND tablename <> 'schema_migrations'"
                " ORDER BY tablename",
                (SCHEMA,),
            ).fetchall()
            if r[0] not in _KEPT_TABLES
        ]
        names = [sql.Identifier(SCHEMA, t) for t in tables]
        tx.execute(sql.SQL("LOCK TABLE {} IN ACCESS EXCLUSIVE MODE").format(sql.SQL(", ").join(names)))
        ticket_ids = [r[0] for r in tx.execute("SELECT id FROM supportbot.tickets ORDER BY id").fetchall()]
        rows = {
            f"{SCHEMA}.{t}": _count(tx, sql.SQL("SELECT count(*) FROM {}").format(n))
            for t, n in zip(tables, names, strict=True)
        }
        tx.execute(
            sql.SQL("TRUNCATE {}").format(sql.SQL(", ").join(names))
        )  # CONTINUE IDENTITY: numbering goes on
        if isinstance(backend, ResetsData):
            rows.update(backend.reset_data(tx=tx))
    return ResetReport(tickets=ticket_ids, rows=rows)
