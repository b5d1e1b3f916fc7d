"""The SQL of tickets and what is added to them (``supportbot.tickets``, ``turns``,
``tool_calls``, ``facts``, ``approvals``, ``effects``): creating and reading tickets, storing
customer messages and turns, reading the append-only logs, approval decisions and effects.

Each function takes a connection; callers own transactions. A ticket's step records and
checkpoints are in ``steps_repo``, its lease in ``lease_repo``, the work queue in ``queue``.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from decimal import Decimal

import psycopg
from psycopg import sql
from psycopg.rows import class_row

from .._records import ToolCall
from .._state import Fact, Ticket, Turn
from ..errors import IdempotencyConflict, LeaseLost
from ._channels import WORK_CHANNEL
from ._failures import no_ticket
from ._holder import HOLDER_PID, HOLDER_START, takeable
from ._rows import LeaseRequest, LeaseTaken, PendingApproval, StoredMessage, TicketHead, TicketRow

# TicketRow's fields in order; steps_repo.read_state_rows reads the ticket row with them too.
TICKET_COLUMNS = "id, customer_email, subject, body, status, turn_count, created_at, updated_at, human_agent"
_TURN_COLUMNS = "role, content, round, message_id, tokens, created_at, idx, author"


# -- tickets ---------------------------------------------------------------------------------


async def create_ticket(
    conn: psycopg.AsyncConnection,
    *,
    email: str,
    subject: str,
    body: str,
    now: datetime,
    due: bool = False,
    lease: LeaseRequest | None = None,
) -> Ticket:
    """Insert a ticket row. ``due``: its first message waits for a round (the work queue); with
    ``lease`` (owner, seconds, track the holder) the caller runs that round itself, else workers
    are notified."""
    row = await (await conn.execute("SELECT nextval('supportbot.ticket_numbers')")).fetchone()
    assert row is not None  # nextval always answers
    number = row[0]
    ticket_id = f"T{number:06d}"
    owner, seconds, track = lease if lease is not None else (None, 0.0, False)
    await conn.execute(
        "INSERT INTO supportbot.tickets (id, customer_email, subject, body, created_at, work_due,"
        " lease_owner, lease_expires, lease_pid, lease_backend_start) VALUES (%(t)s, %(e)s, %(s)s, %(b)s,"
        " %(now)s, CASE WHEN %(due)s THEN %(now)s END,"
        " %(o)s, CASE WHEN %(o)s::text IS NOT NULL THEN now() + make_interval(secs => %(secs)s) END,"
        f" {HOLDER_PID}, {HOLDER_START})",
        {
            "t": ticket_id,
            "e": email,
            "s": subject,
            "b": body,
            "now": now,
            "due": due,
            "o": owner,
            "secs": seconds,
            "track": track and owner is not None,
        },
    )
    if due and lease is None:
        await conn.execute("SELECT pg_notify(%s, %s)", (WORK_CHANNEL, ticket_id))
    return Ticket(ticket_id, email, subject, body, now)


async def ticket_head(conn: psycopg.AsyncConnection, ticket_id: str) -> TicketHead:
    """(the ticket's latest step seq, its status, how many turns are stored), from its row."""
    row = await (
        await conn.execute(
            "SELECT last_seq, status, turn_count FROM supportbot.tickets WHERE id = %s", (ticket_id,)
        )
    ).fetchone()
    if row is None:
        raise no_ticket(ticket_id)
    return TicketHead(int(row[0]), str(row[1]), int(row[2]))


async def get_ticket(conn: psycopg.AsyncConnection, ticket_id: str) -> TicketRow:
    row = await (
        await conn.cursor(row_factory=class_row(TicketRow)).execute(
            f"SELECT {TICKET_COLUMNS} FROM supportbot.tickets WHERE id = %s", (ticket_id,)
        )
    ).fetchone()
    if row is None:
        raise no_ticket(ticket_id)
    return row


async def list_tickets(
    conn: psycopg.AsyncConnection, *, email: str | None = None, status: str | None = None
) -> list[TicketRow]:
    return await (
        await conn.cursor(row_factory=class_row(TicketRow)).execute(
            f"SELECT {TICKET_COLUMNS} FROM supportbot.tickets"
            " WHERE (%(email)s::text IS NULL OR customer_email = %(email)s)"
            " AND (%(status)s::text IS NULL OR status = %(status)s) ORDER BY created_at, id",
            {"email": email, "status": status},
        )
    ).fetchall()


async def human_agent(conn: psycopg.AsyncConnection, ticket_id: str) -> str | None:
    """The person who owns the ticket (None while the bot does)."""
    row = await (
        await conn.execute("SELECT human_agent FROM supportbot.tickets WHERE id = %s", (ticket_id,))
    ).fetchone()
    if row is None:
        raise no_ticket(ticket_id)
    return None if row[0] is None else str(row[0])


async def set_human_agent(
    conn: psycopg.AsyncConnection, ticket_id: str, owner: str, agent: str | None
) -> None:
    """Name (or clear) the ticket's owning person; fenced by the lease like a step record."""
    row = await (
        await conn.execute(
            "UPDATE supportbot.tickets SET human_agent = %s WHERE id = %s AND lease_owner = %s RETURNING 1",
            (agent, ticket_id, owner),
        )
    ).fetchone()
    if row is None:
        raise LeaseLost(f"ticket {ticket_id} was taken over by another worker", ticket_id=ticket_id)


# -- turns -----------------------------------------------------------------------------------


_LOCK_TURN_COUNT = sql.SQL("SELECT turn_count FROM supportbot.tickets WHERE id = {} FOR UPDATE")
_LOCK_TURN_COUNT_BY_ID = _LOCK_TURN_COUNT.format(sql.Placeholder()).as_string()  # prepared once


async def lock_turn_count(conn: psycopg.AsyncConnection, ticket_id: str) -> int:
    """Lock the ticket row (serializing turn appends) and return how many turns it has."""
    return await locked_turn_count(await conn.execute(_LOCK_TURN_COUNT_BY_ID, (ticket_id,)), ticket_id)


def lock_turn_count_statement(ticket_id: str) -> sql.Composed:
    """``lock_turn_count``'s statement with the id in its text: it can go with a BEGIN
    (``Store.transaction_with``); ``locked_turn_count`` reads its answer."""
    return _LOCK_TURN_COUNT.format(sql.Literal(ticket_id))


async def locked_turn_count(cur: psycopg.AsyncCursor, ticket_id: str) -> int:
    row = await cur.fetchone()
    if row is None:
        raise no_ticket(ticket_id)
    return int(row[0])


async def append_customer_message(
    conn: psycopg.AsyncConnection,
    ticket_id: str,
    content: str,
    *,
    message_id: str | None,
    now: datetime,
    tokens: int | None = None,
    lease: LeaseRequest | None = None,
) -> StoredMessage:
    """Store a customer message at the next position.

    One statement: the ticket row's update allocates the position under its row lock, so
    concurrent senders get distinct, gap-free positions. A repeated message_id stores nothing;
    one sent concurrently fails the statement with a unique violation (Store.append_message reads
    the winner's turn in a new transaction).
    With ``lease`` (owner, seconds, track the holder) the same update takes the ticket if it is free
    or its holder is gone (``lease_repo.takeable``), saving the
    round its own lease statement; ``taken`` is then (latest seq, turn count), as ``acquired``
    reads it, else None.
    """
    if message_id is not None and (repeated := await stored_message(conn, ticket_id, message_id, content)):
        return StoredMessage(repeated, False, None)
    owner, seconds, track = lease if lease is not None else (None, 0.0, False)
    free = f"(%(o)s::text IS NOT NULL AND {takeable()} AND human_agent IS NULL)"
    row = await (
        await conn.execute(
            # The message puts the ticket in the work queue (sql/014_work_queue.sql); without a
            # lease (submit) the workers are told, at the commit.
            "WITH slot AS (UPDATE supportbot.tickets SET turn_count = turn_count + 1, updated_at = now(),"
            "  work_attempts = CASE WHEN work_due IS NULL THEN 0 ELSE work_attempts END,"
            "  work_due = coalesce(work_due, %(now)s),"
            f"  lease_owner = CASE WHEN {free} THEN %(o)s ELSE lease_owner END,"
            f"  lease_expires = CASE WHEN {free} THEN now() + make_interval(secs => %(s)s) ELSE "
            "lease_expires END,"
            f"  lease_pid = CASE WHEN {free} THEN {HOLDER_PID} ELSE lease_pid END,"
            f"  lease_backend_start = CASE WHEN {free} THEN {HOLDER_START} ELSE lease_backend_start END"
            "  WHERE id = %(t)s RETURNING turn_count - 1 AS idx, turn_count, last_seq,"
            "   coalesce(lease_owner = %(o)s::text, false) AS leased),"
            " turn AS (INSERT INTO supportbot.turns"
            "  (ticket_id, idx, round, role, content, message_id, tokens, created_at)"
            "  SELECT %(t)s, slot.idx,"
            # the round after the latest step's: read off the primary key's end, whatever the ticket's length
            "   coalesce((SELECT round FROM supportbot.steps WHERE ticket_id = %(t)s ORDER BY seq DESC "
            "LIMIT 1), 0) + 1,"
            f"   'customer', %(c)s, %(m)s, %(n)s, %(now)s FROM slot RETURNING {_TURN_COLUMNS})"
            " SELECT turn.*, slot.leased, slot.last_seq, slot.turn_count,"
            "  CASE WHEN %(o)s::text IS NULL THEN pg_notify(%(ch)s, %(t)s) END FROM turn, slot",
            {
                "t": ticket_id,
                "c": content,
                "m": message_id,
                "n": tokens,
                "now": now,
                "o": owner,
                "s": seconds,
                "track": track,
                "ch": WORK_CHANNEL,
            },
        )
    ).fetchone()
    if row is None:
        raise no_ticket(ticket_id)
    *turn, leased, last_seq, turn_count, _ = row
    return StoredMessage(Turn(*turn), True, LeaseTaken(int(last_seq), int(turn_count)) if leased else None)


async def stored_message(
    conn: psycopg.AsyncConnection, ticket_id: str, message_id: str, content: str
) -> Turn | None:
    """The turn already stored under ``message_id`` (a retry of the same message), or None."""
    found = await find_message(conn, ticket_id, message_id)
    return None if found is None else await _same_message(conn, ticket_id, found, message_id, content)


async def _same_message(
    conn: psycopg.AsyncConnection, ticket_id: str, idx: int, message_id: str, content: str
) -> Turn:
    """The turn stored under ``message_id``, if it holds ``content``: a retry of the same message.

    The id names one message: the same id with other words is a caller's bug (a reused counter, a
    key derived from the wrong field) that storing nothing would hide, losing the new words.
    """
    turn = await _turn_at(conn, ticket_id, idx)
    if turn.content != content:
        raise IdempotencyConflict(
            f"message_id {message_id!r} of ticket {ticket_id} was already used for a different message "
            f"(turn #{idx}); nothing was stored. Send this message with a new message_id, or resend "
            "the first message's exact text to get its result",
            ticket_id=ticket_id,
        )
    return turn


async def _turn_at(conn: psycopg.AsyncConnection, ticket_id: str, idx: int) -> Turn:
    (turn,) = await load_turns(conn, ticket_id, idx, idx + 1)
    return turn


async def find_message(conn: psycopg.AsyncConnection, ticket_id: str, message_id: str) -> int | None:
    row = await (
        await conn.execute(
            "SELECT idx FROM supportbot.turns WHERE ticket_id = %s AND message_id = %s",
            (ticket_id, message_id),
        )
    ).fetchone()
    return None if row is None else int(row[0])


async def insert_turns(conn: psycopg.AsyncConnection, ticket_id: str, turns: Sequence[Turn]) -> None:
    """Insert turns whose idx is assigned; the caller holds the ticket row lock."""
    if not turns:
        return
    async with conn.cursor() as cur:
        await cur.executemany(
            "INSERT INTO supportbot.turns"
            " (ticket_id, idx, round, role, content, message_id, tokens, created_at, author)"
            " VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)",
            [
                (ticket_id, t.idx, t.round, t.role, t.content, t.message_id, t.tokens, t.created_at, t.author)
                for t in turns
            ],
        )
    await conn.execute(
        "UPDATE supportbot.tickets SET turn_count = %s, updated_at = now() WHERE id = %s",
        (max(t.idx for t in turns if t.idx is not None) + 1, ticket_id),
    )


async def load_turns(
    conn: psycopg.AsyncConnection, ticket_id: str, start: int, stop: int | None = None
) -> list[Turn]:
    return await (
        await conn.cursor(row_factory=class_row(Turn)).execute(
            f"SELECT {_TURN_COLUMNS} FROM supportbot.turns WHERE ticket_id = %s AND idx >= %s"
            " AND (%s::int IS NULL OR idx < %s) ORDER BY idx",
            (ticket_id, start, stop, stop),
        )
    ).fetchall()


# -- tool calls and facts: append-only logs like turns ----------------------------------------


async def load_tool_calls(
    conn: psycopg.AsyncConnection, ticket_id: str, start: int, stop: int | None = None
) -> list[ToolCall]:
    return await (
        await conn.cursor(row_factory=class_row(ToolCall)).execute(
            "SELECT name, args, result, error, duration_ms, round, step, idx FROM supportbot.tool_calls"
            " WHERE ticket_id = %s AND idx >= %s AND (%s::int IS NULL OR idx < %s) ORDER BY idx",
            (ticket_id, start, stop, stop),
        )
    ).fetchall()


async def load_facts(
    conn: psycopg.AsyncConnection, ticket_id: str, start: int, stop: int | None = None
) -> list[Fact]:
    return await (
        await conn.cursor(row_factory=class_row(Fact)).execute(
            "SELECT kind, value, key, turn, subject, role, supersedes FROM supportbot.facts"
            " WHERE ticket_id = %s AND idx >= %s"
            " AND (%s::int IS NULL OR idx < %s) ORDER BY idx",
            (ticket_id, start, stop, stop),
        )
    ).fetchall()


# -- approvals -------------------------------------------------------------------------------


async def decide_approval(
    conn: psycopg.AsyncConnection,
    ticket_id: str,
    round_: int,
    *,
    approved: bool,
    approver: str,
    note: str,
    now: datetime,
    amount: Decimal | None = None,
) -> bool:
    """Record a human decision (``amount``: approved less than asked); False when the request was
    already decided (first click wins)."""
    row = await (
        await conn.execute(
            "UPDATE supportbot.approvals SET approved = %s, approver = %s, note = %s, decided_at = %s,"
            " amount = %s WHERE ticket_id = %s AND round = %s AND decided_at IS NULL RETURNING 1",
            (approved, approver, note, now, amount, ticket_id, round_),
        )
    ).fetchone()
    return row is not None


async def pending_approvals(conn: psycopg.AsyncConnection) -> list[PendingApproval]:
    return await (
        await conn.cursor(row_factory=class_row(PendingApproval)).execute(
            # A request that a tool of its round returned refers to that tool call, with the entries
            # that differ from its result (see codec).
            "SELECT a.ticket_id, a.round, t.customer_email, t.subject, CASE WHEN c.idx IS NULL THEN a.request"
            "  ELSE jsonb_build_object('refund_request',"
            "   c.result || coalesce(a.request -> 'refund_request' -> '$patch', '{}')) END AS request,"
            " a.requested_at"
            " FROM supportbot.approvals a JOIN supportbot.tickets t ON t.id = a.ticket_id"
            " LEFT JOIN supportbot.tool_calls c ON c.ticket_id = a.ticket_id"
            "  AND c.idx = (a.request -> 'refund_request' ->> '$tool')::integer"
            " WHERE a.decided_at IS NULL ORDER BY a.requested_at, a.ticket_id"
        )
    ).fetchall()


class AsyncTicketStatements:
    """Tickets, their turns and refund approvals (``store.tickets``): the statements code outside the
    store runs, each on the transaction or connection it passes."""

    create_ticket = staticmethod(create_ticket)
    decide_approval = staticmethod(decide_approval)
    get_ticket = staticmethod(get_ticket)
    human_agent = staticmethod(human_agent)
    insert_turns = staticmethod(insert_turns)
    list_tickets = staticmethod(list_tickets)
    lock_turn_count = staticmethod(lock_turn_count)
    lock_turn_count_statement = staticmethod(lock_turn_count_statement)
    locked_turn_count = staticmethod(locked_turn_count)
    pending_approvals = staticmethod(pending_approvals)
    set_human_agent = staticmethod(set_human_agent)
    ticket_head = staticmethod(ticket_head)
