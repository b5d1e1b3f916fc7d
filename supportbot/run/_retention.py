# Generated from _retention_async.py by scripts/async_to_sync.py: edit that file and run the script.
"""Retention: how long each kind of memory of a closed ticket is kept, applied by the workers.

The policy is declared in the settings (``Settings.retention_*_days``; 0 keeps a kind for ever):

* ``steps``: the step log and checkpoints of a resolved ticket quiet that long shrink to its final
  state (as ``prune(keep="final")``): ``state()`` is unchanged, ``history()`` keeps the last step.
* ``summaries``: the conversation summary in that final state is emptied (the turns, the
  ticket's transcript, stay).
* ``facts``: the pinned facts are deleted.
* ``audit``: audit rows older than that are deleted (the table refuses any other deletion).

Only resolved tickets qualify, and only when no worker holds them, no approval waits and nothing
happened since the cutoff: an open ticket, a hand-off or a pending approval is never touched. A
summary or facts go only once the step log is pruned, so their retention cannot be shorter than
the steps' (Settings checks it). Each sweep handles at most ``BATCH`` tickets per kind, every
``Settings.retention_sweep_seconds`` in every worker; sweeps running at once share the work
(every statement skips rows another holds).
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta

import psycopg

from ..store._prune import prune_closed
from ..store._store import Store
from ._values import RetentionPolicy, RetentionReport

log = logging.getLogger(__name__)
BATCH = 500


def due(store: Store, policy: RetentionPolicy, now: datetime) -> RetentionReport:
    """How much a sweep at ``now`` would remove, without removing anything."""
    with store.connection() as conn:
        return RetentionReport(
            steps=_count(conn, _STEPS_DUE, policy.steps_days, now),
            summaries=_count(conn, _SUMMARIES_DUE, policy.summaries_days, now),
            facts=_count(conn, _FACTS_DUE, policy.facts_days, now),
            audit=_count(conn, _AUDIT_DUE, policy.audit_days, now),
        )


def apply(store: Store, policy: RetentionPolicy, now: datetime) -> RetentionReport:
    """Remove what the policy no longer keeps (at most ``BATCH`` tickets per kind). The caller
    drops its cached copies of ``tickets``: their seq did not change, so nothing else tells it."""
    changed: set[str] = set()
    if policy.steps_days:
        cutoff = now - timedelta(days=policy.steps_days)
        pruned = prune_closed(store, closed_before=cutoff, final=True, statuses=("resolved",), limit=BATCH)
        changed.update(pruned.tickets)
    steps = len(changed)
    with store.transaction() as tx:
        summaries = _apply(tx, _SUMMARIES_APPLY, policy.summaries_days, now, changed)
        facts = _apply(tx, _FACTS_APPLY, policy.facts_days, now, changed)
        audit = 0
        if policy.audit_days:
            # The audit table refuses deletion unless this transaction says it sweeps (the trigger
            # in sql/functions/audit_append_only.sql checks the age too).
            tx.execute(
                "SELECT set_config('supportbot.audit_retention_days', %s, true)", (str(policy.audit_days),)
            )
            audit = _count(tx, _AUDIT_APPLY, policy.audit_days, now)
    report = RetentionReport(steps, summaries, facts, audit, tuple(sorted(changed)))
    if any((steps, summaries, facts, audit)):
        log.info("retention: %s", report)
    return report


def _count(conn: psycopg.Connection, query: str, days: int, now: datetime) -> int:
    if not days:
        return 0
    values = {"cutoff": now - timedelta(days=days), "days": days, "n": BATCH}
    row = (conn.execute(query, values)).fetchone()
    assert row is not None  # a count has its row
    return int(row[0])


def _apply(tx: psycopg.Connection, query: str, days: int, now: datetime, changed: set[str]) -> int:
    """Run an apply statement; it returns (rows, ticket ids); the ids join ``changed``."""
    if not days:
        return 0
    values = {"cutoff": now - timedelta(days=days), "n": BATCH}
    rows, ids = (tx.execute(query, values)).fetchone()  # type: ignore[misc]
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
