"""The SQL of a ticket's lease (``tickets.lease_owner``, ``lease_expires``): one worker runs a
ticket's rounds at a time.

Taking the lease, renewing it while a round runs, freeing it (which takes the ticket out of the
work queue once its work is done, and wakes whoever waits on the answer), and how long a busy
ticket stays busy. A round's last step record frees the lease itself
(``steps_repo.record_steps(release=True)``). Each function takes a connection; the statements
that take, renew or free a lease commit without waiting for the disk (``NOWAIT``), so they run as
transactions of their own, never inside a caller's durable one.
"""

from __future__ import annotations

import psycopg

from ..errors import LeaseLost
from ._channels import DONE_CHANNEL
from ._failures import no_ticket
from ._holder import HOLDER_PID, HOLDER_START, takeable
from ._rows import LeaseTaken

# The CTE that makes a statement's own commit not wait for the disk, for statements whose loss
# in a database crash costs nothing: a lost lease acquire is simply not held, a lost release
# expires after lease_seconds, a lost claim is not held, a lost heartbeat is the next one's. The
# setting holds until the commit, so a statement run alone (``Store.statement``) needs no BEGIN,
# SET LOCAL and COMMIT: one round trip instead of four. The statement must use it (``FROM
# nowait``); PostgreSQL skips a CTE nothing reads.
NOWAIT = "nowait AS (SELECT set_config('synchronous_commit', 'off', true))"


async def queue_acquire_lease(
    conn: psycopg.AsyncConnection,
    ticket_id: str,
    owner: str,
    seconds: float,
    *,
    person: bool = False,
    track: bool = True,
) -> psycopg.AsyncCursor:
    """Take the ticket if free, expired or its holder is gone (``takeable``); ``acquired`` reads the
    result (after the commit). A statement of its own (``Store.statement``): see ``NOWAIT``.
    ``track``: record this connection's server process as the holder (not behind a pooler).

    A round (``person`` False) never takes a ticket a person owns (see SupportBot.take_over); a
    person's own action does, to record it between rounds.
    """
    return await conn.execute(
        f"WITH {NOWAIT}"
        " UPDATE supportbot.tickets SET lease_owner = %(o)s,"
        " lease_expires = now() + make_interval(secs => %(s)s),"
        f" lease_pid = {HOLDER_PID}, lease_backend_start = {HOLDER_START}"
        " FROM nowait"
        f" WHERE id = %(t)s AND {takeable()} AND (human_agent IS NULL OR %(person)s)"
        # From the row, not a subquery on steps: see sql/007_ticket_last_seq.sql.
        " RETURNING last_seq, turn_count",
        {"o": owner, "s": seconds, "t": ticket_id, "person": person, "track": track},
    )


async def acquired(cur: psycopg.AsyncCursor) -> LeaseTaken | None:
    """(the ticket's latest step seq, its turn count) when the lease was taken; None if busy."""
    row = await cur.fetchone()
    return None if row is None else LeaseTaken(int(row[0]), int(row[1]))


async def renew_lease(
    conn: psycopg.AsyncConnection, ticket_id: str, owner: str, seconds: float, *, track: bool = True
) -> None:
    """A statement of its own (``Store.statement``): see ``NOWAIT``. The holder becomes this
    connection's server process, alive now."""
    # A row back means the lease was still ours.
    row = await (
        await conn.execute(
            f"WITH {NOWAIT} UPDATE supportbot.tickets SET"
            " lease_expires = now() + make_interval(secs => %(s)s),"
            f" lease_pid = {HOLDER_PID}, lease_backend_start = {HOLDER_START}"
            " FROM nowait WHERE id = %(t)s AND lease_owner = %(o)s RETURNING 1",
            {"s": seconds, "t": ticket_id, "o": owner, "track": track},
        )
    ).fetchone()
    if row is None:
        raise LeaseLost(f"ticket {ticket_id} was taken over by another worker", ticket_id=ticket_id)


async def queue_release_lease(
    conn: psycopg.AsyncConnection, ticket_id: str, owner: str, *, known: int | None = None
) -> psycopg.AsyncCursor:
    """Free the ticket; ``released`` reads (after the commit) its turn count, or None if the lease
    was no longer ours. (A round's last record frees it itself: ``record_steps(release=True)``.)
    A statement of its own (``Store.statement``), like ``queue_acquire_lease``.

    ``known``: the worker finished what it found, its state holding this many turns; the ticket
    leaves the work queue unless more were stored or it waits for a human. None (a failed round):
    it stays queued.
    """
    done = "%(k)s::int IS NOT NULL AND (status = 'waiting_approval' OR turn_count <= %(k)s)"
    return await conn.execute(
        f"WITH {NOWAIT},"
        " freed AS (UPDATE supportbot.tickets SET lease_owner = NULL, lease_expires = NULL,"
        f"  work_due = CASE WHEN {done} THEN NULL ELSE work_due END,"
        f"  work_attempts = CASE WHEN {done} THEN 0 ELSE work_attempts END,"
        f"  work_retry_at = CASE WHEN {done} THEN NULL ELSE work_retry_at END,"
        f"  work_error = CASE WHEN {done} THEN NULL ELSE work_error END"
        "  FROM nowait WHERE id = %(t)s AND lease_owner = %(o)s RETURNING turn_count)"
        " SELECT turn_count, pg_notify(%(ch)s, %(t)s) FROM freed",
        {"t": ticket_id, "o": owner, "k": known, "ch": DONE_CHANNEL},
    )


async def released(cur: psycopg.AsyncCursor) -> int | None:
    row = await cur.fetchone()
    return None if row is None else int(row[0])


async def lease_remaining(conn: psycopg.AsyncConnection, ticket_id: str) -> float:
    """Seconds until the ticket's lease ends (at least 0.1, so a retry never spins); 0.1 if it is free."""
    row = await (
        await conn.execute(
            "SELECT greatest(extract(epoch FROM lease_expires - now()), 0.1) FROM supportbot.tickets"
            " WHERE id = %s",
            (ticket_id,),
        )
    ).fetchone()
    if row is None:
        raise no_ticket(ticket_id)
    return 0.1 if row[0] is None else float(row[0])


class AsyncLeaseStatements:
    """The tickets' leases (``store.lease``): the statements code outside the store runs, each on the
    transaction or connection it passes."""

    acquired = staticmethod(acquired)
    lease_remaining = staticmethod(lease_remaining)
    queue_acquire_lease = staticmethod(queue_acquire_lease)
    queue_release_lease = staticmethod(queue_release_lease)
    released = staticmethod(released)
    renew_lease = staticmethod(renew_lease)
