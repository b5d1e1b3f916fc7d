# Generated from _queue_async.py by scripts/async_to_sync.py: edit that file and run the script.
"""The work queue over the tickets table (sql/014_work_queue.sql): mark due, claim, fail, list, count,
and the NOTIFY channels that wake workers and waiters.

A ticket is queued while ``work_due`` is set. Workers claim the oldest due tickets whose lease is
free or expired and whose retry time has come, taking the lease in the same statement; rows
another worker is claiming at that moment are skipped (``SKIP LOCKED``), not waited for.
"""

from __future__ import annotations

import dataclasses
import os
import socket
from datetime import datetime
from typing import Any

import psycopg
from psycopg.rows import class_row

from .._state import Turn
from ._channels import DONE_CHANNEL
from ._holder import HOLDER_PID, HOLDER_START, takeable
from ._lease import NOWAIT
from ._rows import Claim, FailureCount, QueueEntry, QueueStats, TicketRow
from ._tickets import TICKET_COLUMNS

# Tickets a worker may take: not one a person has taken over (SupportBot.take_over); its customer
# messages wait for that person, and for the bot again after the hand-back.
AVAILABLE_TO_BOT = "t.human_agent IS NULL"

_CLAIMABLE = (
    f"t.work_due IS NOT NULL AND {takeable('t')} AND (t.work_retry_at IS NULL OR t.work_retry_at <= now())"
)


# Enough for the messages of a round; a ticket with more waiting reads the rest when its round starts.
_WAITING = 16
# The ticket row's columns, as the claim returns them after the lease's.
_TICKET = ", ".join(f"t.{name}" for name in TICKET_COLUMNS.split(", "))
_TICKET_WIDTH = len(TICKET_COLUMNS.split(", "))


def mark_due(conn: psycopg.Connection, ticket_id: str) -> None:
    """Put the ticket in the work queue (a decision was recorded; its round must be finished)."""
    conn.execute(
        "UPDATE supportbot.tickets SET work_due = coalesce(work_due, now()) WHERE id = %s", (ticket_id,)
    )


def claim_cursor(
    conn: psycopg.Connection, prefix: str, limit: int, lease_seconds: float, *, track: bool = True
) -> psycopg.Cursor[Any]:
    """Lease up to ``limit`` due tickets, the longest-waiting first; ``claimed`` reads them (after
    the commit). One statement, so it can run as a transaction of its own (``Store.statement``);
    a lost claim is merely not held (``lease_repo.NOWAIT``).

    Each lease owner ends in a fresh random part, so a thread of this process that outlived its
    lease can never write under a later claim of the same ticket.
    """
    return conn.execute(
        f"WITH {NOWAIT}, picked AS (SELECT t.id FROM supportbot.tickets t"
        f" WHERE {_CLAIMABLE} AND {AVAILABLE_TO_BOT}"
        "  ORDER BY t.work_due, t.id LIMIT %(n)s FOR UPDATE SKIP LOCKED)"
        " UPDATE supportbot.tickets t SET"
        "  lease_owner = %(p)s || t.id || ':' || substr(md5(random()::text), 1, 8),"
        "  lease_expires = now() + make_interval(secs => %(s)s),"
        f"  lease_pid = {HOLDER_PID}, lease_backend_start = {HOLDER_START}"
        " FROM picked, nowait WHERE t.id = picked.id"
        " RETURNING t.id AS ticket_id, t.lease_owner AS owner, t.last_seq, t.turn_count, t.work_due AS due,"
        f" {_TICKET},"
        "  (SELECT coalesce(jsonb_agg(to_jsonb(w) ORDER BY w.idx), '[]') FROM"
        "   (SELECT * FROM supportbot.turns u WHERE u.ticket_id = t.id AND u.idx >= coalesce("
        "     (SELECT s.turn_count FROM supportbot.steps s WHERE s.ticket_id = t.id AND s.seq = t.last_seq),"
        "    0)"
        "    ORDER BY u.idx LIMIT %(w)s) w) AS waiting",
        {"p": prefix, "n": limit, "s": lease_seconds, "w": _WAITING, "track": track},
    )


def claimed(cur: psycopg.Cursor[Any]) -> list[Claim]:
    claims = []
    for row in cur.fetchall():
        ticket_id, owner, last_seq, turn_count, due = row[:5]
        ticket = TicketRow(*row[5 : 5 + _TICKET_WIDTH])
        waiting = tuple(_turn(w) for w in row[5 + _TICKET_WIDTH])
        claims.append(Claim(ticket_id, owner, last_seq, turn_count, due, ticket, waiting))
    return claims


def _turn(row: dict[str, Any]) -> Turn:
    fields = {name: row[name] for name in _TURN_FIELDS}
    return Turn(**{**fields, "created_at": datetime.fromisoformat(row["created_at"])})


_TURN_FIELDS = tuple(f.name for f in dataclasses.fields(Turn))


def record_failure(
    conn: psycopg.Connection,
    ticket_id: str,
    error: str,
    *,
    max_attempts: int,
    backoff: float,
) -> FailureCount:
    """Count a failed round: (attempts so far, whether the ticket went to a human now).

    Before the last attempt the ticket waits ``backoff`` × 2^(attempts-1) seconds (at most 10
    minutes) and is tried again; after it, it leaves the queue as ``escalated`` with the reason.
    """
    last = "t.work_attempts + 1 >= %(max)s"
    row = (
        conn.execute(
            "UPDATE supportbot.tickets t SET work_attempts = t.work_attempts + 1, work_error = %(e)s,"
            f" work_retry_at = CASE WHEN {last} THEN NULL"
            "  ELSE now() + make_interval(secs => least(%(b)s * 2 ^ t.work_attempts, 600)) END,"
            f" work_due = CASE WHEN {last} THEN NULL ELSE t.work_due END,"
            f" status = CASE WHEN {last} THEN 'escalated' ELSE t.status END,"
            f" updated_at = CASE WHEN {last} THEN now() ELSE t.updated_at END"
            " WHERE t.id = %(t)s AND t.work_due IS NOT NULL"
            f" RETURNING t.work_attempts, t.work_due IS NULL AS gave_up,"
            "  CASE WHEN t.work_due IS NULL THEN pg_notify(%(ch)s, t.id) END",
            {"t": ticket_id, "e": error[:500], "max": max_attempts, "b": backoff, "ch": DONE_CHANNEL},
        )
    ).fetchone()
    if row is None:  # deleted, or finished by someone else meanwhile
        return FailureCount(0, False)
    return FailureCount(int(row[0]), bool(row[1]))


def wait_for_model(conn: psycopg.Connection, ticket_id: str, error: str, *, retry_in: float) -> bool:
    """Keep a ticket whose round met a model outage queued, not counting an attempt: it is tried
    again in ``retry_in`` seconds, and ``error`` says why it waits. False when it left the queue."""
    row = (
        conn.execute(
            "UPDATE supportbot.tickets SET work_error = %(e)s,"
            " work_retry_at = now() + make_interval(secs => %(r)s)"
            " WHERE id = %(t)s AND work_due IS NOT NULL RETURNING id",
            {"t": ticket_id, "e": error[:500], "r": retry_in},
        )
    ).fetchone()
    return row is not None


def release_all(conn: psycopg.Connection, owners: list[str]) -> int:
    """Free the tickets leased to ``owners`` (a worker stopping before its rounds ended)."""
    rows = (
        conn.execute(
            "UPDATE supportbot.tickets SET lease_owner = NULL, lease_expires = NULL"
            " WHERE lease_owner = ANY(%s) RETURNING id",
            (owners,),
        )
    ).fetchall()
    return len(rows)


def entries(conn: psycopg.Connection, *, limit: int = 100) -> list[QueueEntry]:
    """Queued tickets, the longest-waiting first, then those handed to a human after failing."""
    return (
        conn.cursor(row_factory=class_row(QueueEntry)).execute(
            "(SELECT id AS ticket_id, status, work_due AS due, extract(epoch FROM now() - work_due)::float8"
            "  AS waited, coalesce(lease_expires >= now(), false) AS running, work_attempts AS attempts,"
            "  work_retry_at AS retry_at, work_error AS error"
            " FROM supportbot.tickets WHERE work_due IS NOT NULL ORDER BY work_due, id LIMIT %(n)s)"
            " UNION ALL"
            " (SELECT id, status, NULL, 0, false, work_attempts, NULL, work_error FROM supportbot.tickets"
            "  WHERE work_due IS NULL AND work_error IS NOT NULL ORDER BY updated_at DESC, id LIMIT %(n)s)",
            {"n": limit},
        )
    ).fetchall()


def stats(conn: psycopg.Connection, *, alive_within: float) -> QueueStats:
    """Queue counts from the tickets table; worker counters from recent heartbeats."""
    row = (
        conn.execute(
            "SELECT count(*), count(*) FILTER (WHERE lease_expires >= now()),"
            " count(*) FILTER (WHERE work_retry_at > now()),"
            " coalesce(extract(epoch FROM now() - min(work_due))::float8, 0),"
            " (SELECT count(*) FROM supportbot.tickets WHERE work_due IS NULL AND work_error IS NOT NULL),"
            " (SELECT count(*) FROM supportbot.workers w"
            "   WHERE w.heartbeat > now() - make_interval(secs => %(a)s)),"
            " (SELECT coalesce(sum(w.rounds), 0) FROM supportbot.workers w"
            "   WHERE w.heartbeat > now() - make_interval(secs => %(a)s)),"
            " (SELECT coalesce(sum(w.failures), 0) FROM supportbot.workers w"
            "   WHERE w.heartbeat > now() - make_interval(secs => %(a)s))"
            " FROM supportbot.tickets WHERE work_due IS NOT NULL AND human_agent IS NULL",
            {"a": alive_within},
        )
    ).fetchone()
    assert row is not None
    queued, running, retrying, oldest, handed_off, workers, rounds, failures = row
    return QueueStats(
        queued=int(queued),
        running=int(running),
        retrying=int(retrying),
        handed_off=int(handed_off),
        oldest_wait=float(oldest),
        workers=int(workers),
        rounds=int(rounds),
        failures=int(failures),
    )


def heartbeat(
    conn: psycopg.Connection, worker_id: str, *, threads: int, rounds: int, failures: int, running: int
) -> None:
    """A statement of its own (``Store.statement``): see ``lease_repo.NOWAIT``."""
    conn.execute(
        f"WITH {NOWAIT} INSERT INTO supportbot.workers (id, host, pid, threads, rounds, failures, running)"
        " SELECT %(id)s, %(h)s, %(p)s, %(n)s, %(r)s, %(f)s, %(u)s FROM nowait ON CONFLICT (id) DO UPDATE SET"
        " heartbeat = now(), rounds = excluded.rounds, failures = excluded.failures,"
        " running = excluded.running",
        {
            "id": worker_id,
            "h": socket.gethostname(),
            "p": os.getpid(),
            "n": threads,
            "r": rounds,
            "f": failures,
            "u": running,
        },
    )


def handed_off(conn: psycopg.Connection, ticket_id: str) -> bool:
    """Whether the ticket left the queue for a human after its last attempt failed."""
    row = (
        conn.execute(
            "SELECT work_due IS NULL AND work_error IS NOT NULL FROM supportbot.tickets WHERE id = %s",
            (ticket_id,),
        )
    ).fetchone()
    return bool(row and row[0])


def sign_off(conn: psycopg.Connection, worker_id: str) -> None:
    conn.execute("DELETE FROM supportbot.workers WHERE id = %s", (worker_id,))


def live_workers(conn: psycopg.Connection, *, alive_within: float) -> int:
    """Worker processes whose heartbeat is at most ``alive_within`` seconds old."""
    row = (
        conn.execute(
            "SELECT count(*) FROM supportbot.workers WHERE heartbeat > now() - make_interval(secs => %s)",
            (alive_within,),
        )
    ).fetchone()
    return int(row[0]) if row else 0


class QueueStatements:
    """The work queue and the workers (``store.queue``): the statements code outside the store runs, each
    on the transaction or connection it passes."""

    claim_cursor = staticmethod(claim_cursor)
    claimed = staticmethod(claimed)
    entries = staticmethod(entries)
    handed_off = staticmethod(handed_off)
    heartbeat = staticmethod(heartbeat)
    live_workers = staticmethod(live_workers)
    mark_due = staticmethod(mark_due)
    record_failure = staticmethod(record_failure)
    release_all = staticmethod(release_all)
    sign_off = staticmethod(sign_off)
    stats = staticmethod(stats)
    wait_for_model = staticmethod(wait_for_model)
