"""The retention sweep's statements (``run/_retention`` decides what a policy keeps): how much of
each kind of memory of a closed ticket is due, and its removal, at most ``BATCH`` tickets per kind.
Every statement skips rows another sweep holds, so sweeps running at once share the work."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import TYPE_CHECKING

import psycopg

from ._rows import RetentionDue, RetentionRemoved

if TYPE_CHECKING:  # the store calls these as its methods, with itself
    from ._store_async import AsyncStore


BATCH = 500


async def due(
    store: AsyncStore,
    *,
    steps_days: int,
    summaries_days: int,
    facts_days: int,
    audit_days: int,
    now: datetime,
) -> RetentionDue:
    """How many step logs, summaries, facts and audit rows those retentions would remove at ``now``."""
    async with store.connection() as conn:
        return RetentionDue(
            await _count(conn, _STEPS_DUE, steps_days, now),
            await _count(conn, _SUMMARIES_DUE, summaries_days, now),
            await _count(conn, _FACTS_DUE, facts_days, now),
            await _count(conn, _AUDIT_DUE, audit_days, now),
        )


async def remove(
    store: AsyncStore,
    *,
    summaries_days: int,
    facts_days: int,
    audit_days: int,
    now: datetime,
    changed: set[str],
) -> RetentionRemoved:
    """Empty the summaries and delete the facts and audit rows those retentions no longer keep, in
    one transaction; the tickets whose state changed join ``changed``."""
    async with store.transaction() as tx:
        summaries = await _apply(tx, _SUMMARIES_APPLY, summaries_days, now, changed)
        facts = await _apply(tx, _FACTS_APPLY, facts_days, now, changed)
        audit = 0
        if audit_days:
            # The audit table refuses deletion unless this transaction says it sweeps (the trigger
            # in sql/functions/audit_append_only.sql checks the age too).
            await tx.execute(
                "SELECT set_config('supportbot.audit_retention_days', %s, true)", (str(audit_days),)
            )
            audit = await _count(tx, _AUDIT_APPLY, audit_days, now)
    return RetentionRemoved(summaries, facts, audit)


async def _count(conn: psycopg.AsyncConnection, query: str, days: int, now: datetime) -> int:
    if not days:
        return 0
    values = {"cutoff": now - timedelta(days=days), "days": days, "n": BATCH}
    row = await (await conn.execute(query, values)).fetchone()
    assert row is not None  # a count has its row
    return int(row[0])


async def _apply(tx: psycopg.AsyncConnection, query: str, days: int, now: datetime, changed: set[str]) -> int:
    """Run an apply statement; it returns (rows, ticket ids); the ids join ``changed``."""
    if not days:
        return 0
    values = {"cutoff": now - timedelta(days=days), "n": BATCH}
    rows, ids = await (await tx.execute(query, values)).fetchone()  # type: ignore[misc]
    changed.update(ids or ())
    return int(rows)


# A resolved ticket quiet since the cutoff, not held, no approval waiting (as prune's candidates).
_QUIET = """
t.status = 'resolved'
AND (t.lease_expires IS NULL OR t.lease_expires < now())
AND t.updated_at < %(cutoff)s
AND NOT EXISTS (SELECT 1 FROM supportbot.steps s WHERE s.ticket_id = t.id AND s.created_at >= %(cutoff)s)
AND NOT EXISTS (SELECT 1 FROM supportbot.approvals a WHERE a.ticket_id = t.id AND a.decided_at IS NULL)
"""
# ... whose step log is already its final state: one step, and a checkpoint at it.
_FINAL = """
AND (SELECT count(*) FROM supportbot.steps s WHERE s.ticket_id = t.id) = 1
AND EXISTS (SELECT 1 FROM supportbot.checkpoints c WHERE c.ticket_id = t.id AND c.seq = t.last_seq)
"""
_STEPS_DUE = f"""
SELECT count(*) FROM supportbot.tickets t WHERE {_QUIET}
AND (SELECT count(*) FROM supportbot.steps s WHERE s.ticket_id = t.id) > 1
"""
_SUMMARIES_DUE = f"""
SELECT count(*) FROM supportbot.tickets t
JOIN supportbot.checkpoints c ON c.ticket_id = t.id AND c.seq = t.last_seq
WHERE {_QUIET} {_FINAL} AND coalesce(c.state ->> 'summary', '') <> ''
"""
_SUMMARIES_APPLY = f"""
WITH due AS (
    SELECT t.id FROM supportbot.tickets t
    JOIN supportbot.checkpoints c ON c.ticket_id = t.id AND c.seq = t.last_seq
    WHERE {_QUIET} {_FINAL} AND coalesce(c.state ->> 'summary', '') <> ''
    ORDER BY t.id LIMIT %(n)s FOR UPDATE OF t SKIP LOCKED
), done AS (
    UPDATE supportbot.checkpoints c SET state = jsonb_set(c.state, '{{summary}}', '""')
    FROM due, supportbot.tickets t WHERE t.id = due.id AND c.ticket_id = due.id AND c.seq = t.last_seq
    RETURNING c.ticket_id
)
SELECT count(*), array_agg(DISTINCT ticket_id) FROM done
"""
_FACTS_DUE = f"""
SELECT count(*) FROM supportbot.facts f JOIN supportbot.tickets t ON t.id = f.ticket_id
WHERE {_QUIET} {_FINAL}
"""
_FACTS_APPLY = f"""
WITH due AS (
    SELECT t.id FROM supportbot.tickets t WHERE {_QUIET} {_FINAL}
    AND EXISTS (SELECT 1 FROM supportbot.facts f WHERE f.ticket_id = t.id)
    ORDER BY t.id LIMIT %(n)s FOR UPDATE OF t SKIP LOCKED
), done AS (
    DELETE FROM supportbot.facts f USING due WHERE f.ticket_id = due.id RETURNING f.ticket_id
)
SELECT count(*), array_agg(DISTINCT ticket_id) FROM done
"""
# The audit log's times are the database's own (its rows are written with now()).
_AUDIT_DUE = "SELECT count(*) FROM supportbot.audit WHERE at < now() - make_interval(days => %(days)s)"
_AUDIT_APPLY = """
WITH done AS (DELETE FROM supportbot.audit WHERE id IN (
    SELECT id FROM supportbot.audit WHERE at < now() - make_interval(days => %(days)s)
    ORDER BY id LIMIT %(n)s) RETURNING 1)
SELECT count(*) FROM done
"""
