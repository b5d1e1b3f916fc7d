"""The SQL of the data lifecycle (``supportbot.lifecycle``): deleting a customer's tickets, pruning
closed tickets' step records, emptying the engine tables.

Every function takes the caller's transaction; ``lifecycle`` decides what to delete and when.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

import psycopg
from psycopg import sql
from psycopg.rows import class_row
from psycopg.types.json import Jsonb

from ._rows import HeldTicket, PruneTotals, Truncated

SCHEMA = "supportbot"

# Children before parents, so that each count is the table's own and not hidden by a cascade.
# Tables found by their ticket_id column but not listed here go first (they reference these).
_TICKET_TABLE_ORDER = ("checkpoints", "approvals", "effects", "prunes", "tool_calls", "turns", "steps")
# The audit log outlives the tickets it names: forgetting redacts its rows (audit.redact_customer)
# and reset leaves it alone; its trigger refuses deleting them.
# Kept by reset: the audit trail, and the API keys (integrations' configuration, not data).
_KEPT_TABLES = frozenset({"audit", "api_keys"})


# -- forget ------------------------------------------------------------------------------------


async def lock_customer_tickets(tx: psycopg.AsyncConnection, email: str) -> list[HeldTicket]:
    """The customer's tickets, locked until the transaction ends."""
    # FOR UPDATE: a worker cannot take a lease, nor a step record its foreign key, until we commit.
    rows = await (
        await tx.execute(
            "SELECT t.id, t.status, CASE WHEN t.lease_expires > now() THEN t.lease_expires END,"
            " EXISTS (SELECT 1 FROM supportbot.approvals a WHERE a.ticket_id = t.id AND a.decided_at IS NULL)"
            " FROM supportbot.tickets t WHERE lower(t.customer_email) = lower(%s)"
            " ORDER BY t.id FOR UPDATE OF t",
            (email,),
        )
    ).fetchall()
    return [
        HeldTicket(
            id=r[0],
            status=r[1],
            leased_until=r[2],
            awaiting_approval=bool(r[3]) or r[1] == "waiting_approval",
        )
        for r in rows
    ]


async def customer_ids_seen(tx: psycopg.AsyncConnection, ticket_ids: Sequence[str]) -> set[str]:
    """Customer ids the engine looked up for these tickets: the profile cache is keyed by them."""
    rows = await (
        await tx.execute(
            "SELECT DISTINCT result->>'id' FROM supportbot.tool_calls WHERE ticket_id = ANY(%s)"
            " AND name = 'get_customer' AND jsonb_typeof(result) = 'object' AND result ? 'id'",
            (list(ticket_ids),),
        )
    ).fetchall()
    return {r[0] for r in rows}


async def delete_tickets(tx: psycopg.AsyncConnection, ids: Sequence[str]) -> dict[str, int]:
    """Delete the tickets and every row of theirs; rows deleted per ``schema.table``."""
    rows: dict[str, int] = {}
    for table in await _ticket_tables(tx):
        rows[f"{SCHEMA}.{table}"] = await _count(
            tx,
            sql.SQL(
                "WITH gone AS (DELETE FROM {} WHERE ticket_id = ANY(%(t)s) RETURNING 1)"
                " SELECT count(*) FROM gone"
            ).format(sql.Identifier(SCHEMA, table)),
            {"t": list(ids)},
        )
    rows[f"{SCHEMA}.tickets"] = await _count(
        tx,
        sql.SQL(
            "WITH gone AS (DELETE FROM supportbot.tickets WHERE id = ANY(%(t)s) RETURNING 1)"
            " SELECT count(*) FROM gone"
        ),
        {"t": list(ids)},
    )
    return rows


async def delete_profiles(tx: psycopg.AsyncConnection, customer_ids: Sequence[str]) -> int:
    """Delete the cached profiles of these customers; how many there were."""
    return await _delete_customers_rows(tx, "customer_profiles", customer_ids)


async def delete_profile_corrections(tx: psycopg.AsyncConnection, customer_ids: Sequence[str]) -> int:
    """Delete operators' corrections of these customers' profiles; how many there were."""
    return await _delete_customers_rows(tx, "profile_corrections", customer_ids)


async def _delete_customers_rows(tx: psycopg.AsyncConnection, table: str, customer_ids: Sequence[str]) -> int:
    return await _count(
        tx,
        sql.SQL(
            "WITH gone AS (DELETE FROM {} WHERE customer_id = ANY(%(c)s) RETURNING 1)"
            " SELECT count(*) FROM gone"
        ).format(sql.Identifier(SCHEMA, table)),
        {"c": list(customer_ids)},
    )


async def _ticket_tables(tx: psycopg.AsyncConnection) -> list[str]:
    found = {
        r[0]
        for r in await (
            await tx.execute(
                "SELECT c.table_name FROM information_schema.columns c JOIN information_schema.tables t"
                " USING (table_schema, table_name) WHERE c.table_schema = %s AND c.column_name = 'ticket_id'"
                " AND t.table_type = 'BASE TABLE'",
                (SCHEMA,),
            )
        ).fetchall()
    }
    found -= _KEPT_TABLES
    known = [t for t in _TICKET_TABLE_ORDER if t in found]
    return sorted(found - set(known)) + known


async def _count(
    tx: psycopg.AsyncConnection, query: sql.SQL | sql.Composed, params: dict[str, object] | None = None
) -> int:
    row = await (await tx.execute(query, params)).fetchone()
    return int(row[0]) if row else 0


# -- prune -------------------------------------------------------------------------------------

# Closed, not held by a worker, not waiting for anyone, and quiet since the cutoff.
_CANDIDATES = """
SELECT t.id FROM supportbot.tickets t
WHERE t.status = ANY(%(statuses)s)
  AND (t.lease_expires IS NULL OR t.lease_expires < now())
  AND t.updated_at < %(cutoff)s
  AND NOT EXISTS (SELECT 1 FROM supportbot.steps s WHERE s.ticket_id = t.id AND s.created_at >= %(cutoff)s)
  AND NOT EXISTS (SELECT 1 FROM supportbot.approvals a WHERE a.ticket_id = t.id AND a.decided_at IS NULL)
ORDER BY t.id
LIMIT %(limit)s
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


async def prune_candidates(
    tx: psycopg.AsyncConnection,
    closed_before: datetime,
    *,
    statuses: Sequence[str] = ("resolved", "escalated"),
    limit: int | None = None,
) -> list[str]:
    """Tickets closed (``statuses``) and quiet since ``closed_before``, at most ``limit``, locked
    (those locked elsewhere skipped)."""
    values = {"cutoff": closed_before, "statuses": list(statuses), "limit": limit}
    return [r[0] for r in await (await tx.execute(_CANDIDATES, values)).fetchall()]


async def latest_checkpoints(tx: psycopg.AsyncConnection, ids: Sequence[str]) -> dict[str, int]:
    """The seq of each ticket's latest checkpoint (tickets without one are left out)."""
    return dict(
        await (
            await tx.execute(
                "SELECT ticket_id, max(seq) FROM supportbot.checkpoints WHERE ticket_id = ANY(%s) GROUP BY "
                "ticket_id",
                (list(ids),),
            )
        ).fetchall()
    )


async def delete_before(
    tx: psycopg.AsyncConnection, table: str, kept_from: Mapping[str, int]
) -> list[tuple[str, int, int]]:
    """Delete the rows of ``table`` (steps or checkpoints) before each ticket's ``kept_from`` seq;
    (ticket, rows, bytes) per ticket."""
    cut = {"t": list(kept_from), "k": list(kept_from.values())}
    return [
        (ticket_id, int(count), int(size))
        for ticket_id, count, size in await (
            await tx.execute(sql.SQL(_DELETE_BEFORE).format(table=sql.Identifier(SCHEMA, table)), cut)
        ).fetchall()
    ]


async def insert_checkpoint(tx: psycopg.AsyncConnection, ticket_id: str, seq: int, state: Any) -> int:
    """Write a checkpoint unless one exists at ``seq``; the bytes written (0 if none)."""
    row = await (
        await tx.execute(
            "INSERT INTO supportbot.checkpoints (ticket_id, seq, state) VALUES (%s, %s, %s)"
            " ON CONFLICT (ticket_id, seq) DO NOTHING RETURNING pg_column_size(checkpoints.*)",
            (ticket_id, seq, Jsonb(state)),
        )
    ).fetchone()
    return int(row[0]) if row else 0


async def record_prunes(
    tx: psycopg.AsyncConnection, kept_from: Mapping[str, int], per_ticket: Mapping[str, list[int]]
) -> None:
    """Add what was pruned per ticket ([steps, checkpoints, bytes]) to ``supportbot.prunes``."""
    if not per_ticket:
        return
    async with tx.cursor() as cur:
        await cur.executemany(
            "INSERT INTO supportbot.prunes (ticket_id, kept_from, steps, checkpoints, bytes) VALUES (%s, "
            "%s, %s, %s, %s)"
            " ON CONFLICT (ticket_id, kept_from) DO UPDATE SET steps = prunes.steps + EXCLUDED.steps,"
            " checkpoints = prunes.checkpoints + EXCLUDED.checkpoints, bytes = prunes.bytes + EXCLUDED.bytes",
            [(t, kept_from[t], s, c, b) for t, (s, c, b) in sorted(per_ticket.items())],
        )


async def prune_totals(conn: psycopg.AsyncConnection, ticket_id: str) -> PruneTotals:
    """The sums of the ticket's prunes; every field None when it was never pruned."""
    row = await (
        await conn.cursor(row_factory=class_row(PruneTotals)).execute(
            "SELECT max(kept_from) AS kept_from, sum(steps) AS steps, sum(checkpoints) AS checkpoints,"
            " sum(bytes) AS bytes, max(pruned_at) AS pruned_at FROM supportbot.prunes WHERE ticket_id = %s",
            (ticket_id,),
        )
    ).fetchone()
    assert row is not None  # an aggregate without GROUP BY always returns one row
    return row


# -- reset -------------------------------------------------------------------------------------


async def truncate_engine_tables(tx: psycopg.AsyncConnection) -> Truncated:
    """Empty every engine table but the migrations' (ticket numbering goes on); the tickets there
    were, and the rows per ``schema.table``."""
    tables = [
        r[0]
        for r in await (
            await tx.execute(
                "SELECT tablename FROM pg_tables WHERE schemaname = %s AND tablename <> 'schema_migrations'"
                " ORDER BY tablename",
                (SCHEMA,),
            )
        ).fetchall()
        if r[0] not in _KEPT_TABLES
    ]
    names = [sql.Identifier(SCHEMA, t) for t in tables]
    await tx.execute(sql.SQL("LOCK TABLE {} IN ACCESS EXCLUSIVE MODE").format(sql.SQL(", ").join(names)))
    ticket_ids = [
        r[0] for r in await (await tx.execute("SELECT id FROM supportbot.tickets ORDER BY id")).fetchall()
    ]
    rows = {
        f"{SCHEMA}.{t}": await _count(tx, sql.SQL("SELECT count(*) FROM {}").format(n))
        for t, n in zip(tables, names, strict=True)
    }
    await tx.execute(
        sql.SQL("TRUNCATE {}").format(sql.SQL(", ").join(names))
    )  # CONTINUE IDENTITY: numbering goes on
    return Truncated(ticket_ids, rows)


class AsyncLifecycleStatements:
    """Forgetting customers and resetting the engine's tables (``store.lifecycle``): the statements code
    outside the store runs, each on the transaction or connection it passes."""

    customer_ids_seen = staticmethod(customer_ids_seen)
    delete_profile_corrections = staticmethod(delete_profile_corrections)
    delete_profiles = staticmethod(delete_profiles)
    delete_tickets = staticmethod(delete_tickets)
    lock_customer_tickets = staticmethod(lock_customer_tickets)
    prune_totals = staticmethod(prune_totals)
    truncate_engine_tables = staticmethod(truncate_engine_tables)
