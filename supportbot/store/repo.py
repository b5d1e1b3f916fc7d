"""Repository functions over the engine tables. Each takes a connection; callers own transactions."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import psycopg
from psycopg.rows import class_row
from psycopg.types.json import Jsonb
from pydantic_core import to_json, to_jsonable_python

from ..errors import IdempotencyConflict, LeaseLost, UnknownTicket
from ..records import ToolCall
from ..state import Fact, Ticket, TicketStatus, Turn


@dataclass(frozen=True, slots=True)
class StepRecord:
    seq: int
    round: int
    step: str
    next_step: str | None
    created_at: datetime


@dataclass(frozen=True, slots=True)
class StepRow:
    seq: int
    round: int
    step: str
    next_step: str | None
    turn_count: int
    tool_call_count: int
    update: dict[str, Any]
    fact_count: int = 0


@dataclass(frozen=True, slots=True)
class StepWrite:
    """One step record and everything it adds, ready to be written with others in one call."""

    row: StepRow
    created_at: datetime
    turns: Sequence[Turn] = ()  # new turns, idx assigned
    tool_calls: Sequence[ToolCall] = ()  # new tool calls, idx assigned
    facts_start: int = 0
    facts: Sequence[Fact] = ()  # new facts, stored from position facts_start
    checkpoint: dict[str, Any] | None = None
    status: str | None = None  # the ticket's new status, if it changed
    approval: dict[str, Any] | None = None  # an approval request for this round


def record_steps(
    conn: psycopg.Connection,
    ticket_id: str,
    owner: str,
    writes: Sequence[StepWrite],
    *,
    release: bool = False,
    known: int | None = None,
) -> psycopg.Cursor:
    """Write step records in one statement, fenced by the lease (sql/014_work_queue.sql, whose
    function is the live one: see sql/schema.sql).

    With ``release`` the same statement frees the lease; ``released`` reads the returned cursor
    (after the commit, in a pipeline) for the ticket's turn count. ``known``: the turns the
    releasing round knows of; the ticket leaves the work queue unless more were stored.
    """
    batch: dict[str, Any] = {
        "turns": [],
        "tool_calls": [],
        "facts": [],
        "steps": [],
        "checkpoints": [],
        "approvals": [],
        "release": release,
        "known": known,
    }
    # Shallow field dicts, not dataclasses.asdict: that deep-copies every update and result first.
    for w in writes:
        batch["turns"] += [_fields(t) for t in w.turns]
        batch["tool_calls"] += [_fields(c) for c in w.tool_calls]
        batch["facts"] += [{**_fields(f), "idx": w.facts_start + i} for i, f in enumerate(w.facts)]
        batch["steps"].append({**_fields(w.row), "created_at": w.created_at})
        if w.checkpoint is not None:
            batch["checkpoints"].append({"seq": w.row.seq, "state": w.checkpoint})
        if w.status is not None:
            batch["status"] = w.status
        if w.approval is not None:
            batch["approvals"].append({"round": w.row.round, "request": w.approval})
    # One pass to UTF-8 JSON; json.dumps would \u-escape Chinese text, doubling it on the wire.
    return conn.execute(
        "SELECT supportbot.record_steps(%s, %s, %s::text::jsonb)", (ticket_id, owner, to_json(batch).decode())
    )


def _fields(obj: Any) -> dict[str, Any]:
    return {name: getattr(obj, name) for name in _field_names(type(obj))}


def _field_names(cls: type) -> tuple[str, ...]:
    names = _FIELD_NAMES.get(cls)
    if names is None:  # once per record class (a race only computes it twice)
        names = _FIELD_NAMES[cls] = tuple(f.name for f in dataclasses.fields(cls))
    return names


_FIELD_NAMES: dict[type, tuple[str, ...]] = {}


@dataclass(frozen=True, slots=True)
class TicketRow:
    id: str
    customer_email: str
    subject: str
    body: str
    status: TicketStatus
    turn_count: int
    created_at: datetime
    updated_at: datetime
    human_agent: str | None = None  # the person who owns the ticket; None while the bot does

    def ticket(self) -> Ticket:
        return Ticket(self.id, self.customer_email, self.subject, self.body, self.created_at)


@dataclass(frozen=True, slots=True)
class PendingApproval:
    ticket_id: str
    round: int
    customer_email: str
    subject: str
    request: dict[str, Any]
    requested_at: datetime


# NOTIFY channels: a ticket needs a worker; a worker's part of a ticket's round ended (payload: ticket id).
WORK_CHANNEL = "supportbot_work"
DONE_CHANNEL = "supportbot_done"

_TICKET_COLUMNS = "id, customer_email, subject, body, status, turn_count, created_at, updated_at, human_agent"
_TURN_COLUMNS = "role, content, round, message_id, tokens, created_at, idx, author"


# -- tickets ---------------------------------------------------------------------------------


def no_ticket(ticket_id: str) -> UnknownTicket:
    return UnknownTicket(
        f"no ticket {ticket_id!r}; tickets() lists the tickets there are", ticket_id=ticket_id
    )


def create_ticket(
    conn: psycopg.Connection,
    *,
    email: str,
    subject: str,
    body: str,
    now: datetime,
    due: bool = False,
    lease: tuple[str, float] | None = None,
) -> Ticket:
    """Insert a ticket row. ``due``: its first message waits for a round (the work queue); with
    ``lease`` (owner, seconds) the caller runs that round itself, else workers are notified."""
    number = conn.execute("SELECT nextval('supportbot.ticket_numbers')").fetchone()[0]  # type: ignore[index]
    ticket_id = f"T{number:06d}"
    owner, seconds = lease if lease is not None else (None, 0.0)
    conn.execute(
        "INSERT INTO supportbot.tickets (id, customer_email, subject, body, created_at, work_due,"
        " lease_owner, lease_expires) VALUES (%(t)s, %(e)s, %(s)s, %(b)s, %(now)s,"
        " CASE WHEN %(due)s THEN %(now)s END,"
        " %(o)s, CASE WHEN %(o)s::text IS NOT NULL THEN now() + make_interval(secs => %(secs)s) END)",
        {
            "t": ticket_id,
            "e": email,
            "s": subject,
            "b": body,
            "now": now,
            "due": due,
            "o": owner,
            "secs": seconds,
        },
    )
    if due and lease is None:
        conn.execute("SELECT pg_notify(%s, %s)", (WORK_CHANNEL, ticket_id))
    return Ticket(ticket_id, email, subject, body, now)


def ticket_position(conn: psycopg.Connection, ticket_id: str) -> tuple[int, str]:
    """(the ticket's latest step seq, its status), from its row."""
    row = conn.execute(
        "SELECT last_seq, status FROM supportbot.tickets WHERE id = %s", (ticket_id,)
    ).fetchone()
    if row is None:
        raise no_ticket(ticket_id)
    return int(row[0]), str(row[1])


def ticket_head(conn: psycopg.Connection, ticket_id: str) -> tuple[int, str, int]:
    """(the ticket's latest step seq, its status, how many turns are stored), from its row."""
    row = conn.execute(
        "SELECT last_seq, status, turn_count FROM supportbot.tickets WHERE id = %s", (ticket_id,)
    ).fetchone()
    if row is None:
        raise no_ticket(ticket_id)
    return int(row[0]), str(row[1]), int(row[2])


def lease_remaining(conn: psycopg.Connection, ticket_id: str) -> float:
    """Seconds until the ticket's lease ends (at least 0.1, so a retry never spins); 0.1 if it is free."""
    row = conn.execute(
        "SELECT greatest(extract(epoch FROM lease_expires - now()), 0.1) FROM supportbot.tickets"
        " WHERE id = %s",
        (ticket_id,),
    ).fetchone()
    if row is None:
        raise no_ticket(ticket_id)
    return 0.1 if row[0] is None else float(row[0])


def get_ticket(conn: psycopg.Connection, ticket_id: str) -> TicketRow:
    row = (
        conn.cursor(row_factory=class_row(TicketRow))
        .execute(f"SELECT {_TICKET_COLUMNS} FROM supportbot.tickets WHERE id = %s", (ticket_id,))
        .fetchone()
    )
    if row is None:
        raise no_ticket(ticket_id)
    return row


def list_tickets(
    conn: psycopg.Connection, *, email: str | None = None, status: str | None = None
) -> list[TicketRow]:
    return (
        conn.cursor(row_factory=class_row(TicketRow))
        .execute(
            f"SELECT {_TICKET_COLUMNS} FROM supportbot.tickets"
            " WHERE (%(email)s::text IS NULL OR customer_email = %(email)s)"
            " AND (%(status)s::text IS NULL OR status = %(status)s) ORDER BY created_at, id",
            {"email": email, "status": status},
        )
        .fetchall()
    )


def human_agent(conn: psycopg.Connection, ticket_id: str) -> str | None:
    """The person who owns the ticket (None while the bot does)."""
    row = conn.execute("SELECT human_agent FROM supportbot.tickets WHERE id = %s", (ticket_id,)).fetchone()
    if row is None:
        raise no_ticket(ticket_id)
    return None if row[0] is None else str(row[0])


def ticket_round(conn: psycopg.Connection, ticket_id: str) -> int:
    """The round of the ticket's latest step (0 before any)."""
    row = conn.execute(
        "SELECT round FROM supportbot.steps WHERE ticket_id = %s ORDER BY seq DESC LIMIT 1", (ticket_id,)
    ).fetchone()
    return 0 if row is None else int(row[0])


def set_human_agent(conn: psycopg.Connection, ticket_id: str, owner: str, agent: str | None) -> None:
    """Name (or clear) the ticket's owning person; fenced by the lease like a step record."""
    row = conn.execute(
        "UPDATE supportbot.tickets SET human_agent = %s WHERE id = %s AND lease_owner = %s RETURNING 1",
        (agent, ticket_id, owner),
    ).fetchone()
    if row is None:
        raise LeaseLost(f"ticket {ticket_id} was taken over by another worker", ticket_id=ticket_id)


def make_durable(conn: psycopg.Connection) -> None:
    """Make the open transaction wait for the WAL flush at commit, whatever it started with."""
    conn.execute("SET LOCAL synchronous_commit = on")


# -- leases: one worker runs a ticket's rounds at a time ------------------------------------


def queue_acquire_lease(
    conn: psycopg.Connection, ticket_id: str, owner: str, seconds: float, *, person: bool = False
) -> psycopg.Cursor:
    """Take the ticket if free or abandoned; ``acquired`` reads the result (in a pipeline, after
    the commit: the whole transaction is one round trip).

    A round (``person`` False) never takes a ticket a person owns (see SupportBot.take_over); a
    person's own action does, to record it between rounds.
    """
    return conn.execute(
        "UPDATE supportbot.tickets SET lease_owner = %s, lease_expires = now() + make_interval(secs => %s)"
        " WHERE id = %s AND (lease_owner IS NULL OR lease_expires < now()) AND (human_agent IS NULL OR %s)"
        # From the row, not a subquery on steps: see sql/007_ticket_last_seq.sql.
        " RETURNING last_seq, turn_count",
        (owner, seconds, ticket_id, person),
    )


def acquired(cur: psycopg.Cursor) -> tuple[int, int] | None:
    """(the ticket's latest step seq, its turn count) when the lease was taken; None if busy."""
    row = cur.fetchone()
    return None if row is None else (int(row[0]), int(row[1]))


def mark_due(conn: psycopg.Connection, ticket_id: str) -> None:
    """Put the ticket in the work queue (a decision was recorded; its round must be finished)."""
    conn.execute(
        "UPDATE supportbot.tickets SET work_due = coalesce(work_due, now()) WHERE id = %s", (ticket_id,)
    )


def renew_lease(conn: psycopg.Connection, ticket_id: str, owner: str, seconds: float) -> None:
    # RETURNING, not rowcount: in a pipeline the row count is known only once results are fetched.
    row = conn.execute(
        "UPDATE supportbot.tickets SET lease_expires = now() + make_interval(secs => %s)"
        " WHERE id = %s AND lease_owner = %s RETURNING 1",
        (seconds, ticket_id, owner),
    ).fetchone()
    if row is None:
        raise LeaseLost(f"ticket {ticket_id} was taken over by another worker", ticket_id=ticket_id)


def queue_release_lease(
    conn: psycopg.Connection, ticket_id: str, owner: str, *, known: int | None = None
) -> psycopg.Cursor:
    """Free the ticket; ``released`` reads (after the commit) its turn count, or None if the lease
    was no longer ours. (A round's last record frees it itself: ``record_steps(release=True)``.)

    ``known``: the worker finished what it found, its state holding this many turns; the ticket
    leaves the work queue unless more were stored or it waits for a human. None (a failed round):
    it stays queued.
    """
    done = "%(k)s::int IS NOT NULL AND (status = 'waiting_approval' OR turn_count <= %(k)s)"
    return conn.execute(
        "WITH freed AS (UPDATE supportbot.tickets SET lease_owner = NULL, lease_expires = NULL,"
        f"  work_due = CASE WHEN {done} THEN NULL ELSE work_due END,"
        f"  work_attempts = CASE WHEN {done} THEN 0 ELSE work_attempts END,"
        f"  work_retry_at = CASE WHEN {done} THEN NULL ELSE work_retry_at END,"
        f"  work_error = CASE WHEN {done} THEN NULL ELSE work_error END"
        "  WHERE id = %(t)s AND lease_owner = %(o)s RETURNING turn_count)"
        " SELECT turn_count, pg_notify(%(ch)s, %(t)s) FROM freed",
        {"t": ticket_id, "o": owner, "k": known, "ch": DONE_CHANNEL},
    )


def released(cur: psycopg.Cursor) -> int | None:
    row = cur.fetchone()
    return None if row is None else int(row[0])


# -- turns -----------------------------------------------------------------------------------


def lock_turn_count(conn: psycopg.Connection, ticket_id: str) -> int:
    """Lock the ticket row (serializing turn appends) and return how many turns it has."""
    return locked_turn_count(queue_lock_turn_count(conn, ticket_id), ticket_id)


def queue_lock_turn_count(conn: psycopg.Connection, ticket_id: str) -> psycopg.Cursor:
    return conn.execute("SELECT turn_count FROM supportbot.tickets WHERE id = %s FOR UPDATE", (ticket_id,))


def locked_turn_count(cur: psycopg.Cursor, ticket_id: str) -> int:
    row = cur.fetchone()
    if row is None:
        raise no_ticket(ticket_id)
    return int(row[0])


def append_customer_message(
    conn: psycopg.Connection,
    ticket_id: str,
    content: str,
    *,
    message_id: str | None,
    now: datetime,
    tokens: int | None = None,
    lease: tuple[str, float] | None = None,
) -> tuple[Turn, bool, tuple[int, int] | None]:
    """Store a customer message at the next position: (the stored turn, stored_now, taken).

    One statement: the ticket row's update allocates the position under its row lock, so
    concurrent senders get distinct, gap-free positions. A repeated message_id stores nothing;
    one sent concurrently fails the statement with a unique violation (Store.append_message reads
    the winner's turn in a new transaction).
    With ``lease`` (owner, seconds) the same update takes the ticket if it is free, saving the
    round its own lease statement; ``taken`` is then (latest seq, turn count), as ``acquired``
    reads it, else None.
    """
    if message_id is not None and (repeated := stored_message(conn, ticket_id, message_id, content)):
        return repeated, False, None
    owner, seconds = lease if lease is not None else (None, 0.0)
    free = (
        "(%(o)s::text IS NOT NULL AND (lease_owner IS NULL OR lease_expires < now()) AND human_agent IS NULL)"
    )
    row = conn.execute(
        # The message puts the ticket in the work queue (sql/014_work_queue.sql); without a
        # lease (submit) the workers are told, at the commit.
        "WITH slot AS (UPDATE supportbot.tickets SET turn_count = turn_count + 1, updated_at = now(),"
        "  work_attempts = CASE WHEN work_due IS NULL THEN 0 ELSE work_attempts END,"
        "  work_due = coalesce(work_due, %(now)s),"
        f"  lease_owner = CASE WHEN {free} THEN %(o)s ELSE lease_owner END,"
        f"  lease_expires = CASE WHEN {free} THEN now() + make_interval(secs => %(s)s) ELSE "
        "lease_expires END"
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
            "ch": WORK_CHANNEL,
        },
    ).fetchone()
    if row is None:
        raise no_ticket(ticket_id)
    *turn, leased, last_seq, turn_count, _ = row
    return Turn(*turn), True, (int(last_seq), int(turn_count)) if leased else None


def stored_message(conn: psycopg.Connection, ticket_id: str, message_id: str, content: str) -> Turn | None:
    """The turn already stored under ``message_id`` (a retry of the same message), or None."""
    found = find_message(conn, ticket_id, message_id)
    return None if found is None else _same_message(conn, ticket_id, found, message_id, content)


def _same_message(conn: psycopg.Connection, ticket_id: str, idx: int, message_id: str, content: str) -> Turn:
    """The turn stored under ``message_id``, if it holds ``content``: a retry of the same message.

    The id names one message: the same id with other words is a caller's bug (a reused counter, a
    key derived from the wrong field) that storing nothing would hide, losing the new words.
    """
    turn = _turn_at(conn, ticket_id, idx)
    if turn.content != content:
        raise IdempotencyConflict(
            f"message_id {message_id!r} of ticket {ticket_id} was already used for a different message "
            f"(turn #{idx}); nothing was stored. Send this message with a new message_id, or resend "
            "the first message's exact text to get its result",
            ticket_id=ticket_id,
        )
    return turn


def _turn_at(conn: psycopg.Connection, ticket_id: str, idx: int) -> Turn:
    (turn,) = load_turns(conn, ticket_id, idx, idx + 1)
    return turn


def find_message(conn: psycopg.Connection, ticket_id: str, message_id: str) -> int | None:
    row = conn.execute(
        "SELECT idx FROM supportbot.turns WHERE ticket_id = %s AND message_id = %s", (ticket_id, message_id)
    ).fetchone()
    return None if row is None else int(row[0])


def insert_turns(conn: psycopg.Connection, ticket_id: str, turns: Sequence[Turn]) -> None:
    """Insert turns whose idx is assigned; the caller holds the ticket row lock."""
    if not turns:
        return
    with conn.cursor() as cur:
        cur.executemany(
            "INSERT INTO supportbot.turns"
            " (ticket_id, idx, round, role, content, message_id, tokens, created_at, author)"
            " VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)",
            [
                (ticket_id, t.idx, t.round, t.role, t.content, t.message_id, t.tokens, t.created_at, t.author)
                for t in turns
            ],
        )
    conn.execute(
        "UPDATE supportbot.tickets SET turn_count = %s, updated_at = now() WHERE id = %s",
        (max(t.idx for t in turns if t.idx is not None) + 1, ticket_id),
    )


def load_turns(conn: psycopg.Connection, ticket_id: str, start: int, stop: int | None = None) -> list[Turn]:
    return (
        conn.cursor(row_factory=class_row(Turn))
        .execute(
            f"SELECT {_TURN_COLUMNS} FROM supportbot.turns WHERE ticket_id = %s AND idx >= %s"
            " AND (%s::int IS NULL OR idx < %s) ORDER BY idx",
            (ticket_id, start, stop, stop),
        )
        .fetchall()
    )


# -- tool calls and facts: append-only logs like turns ----------------------------------------


def load_tool_calls(
    conn: psycopg.Connection, ticket_id: str, start: int, stop: int | None = None
) -> list[ToolCall]:
    return (
        conn.cursor(row_factory=class_row(ToolCall))
        .execute(
            "SELECT name, args, result, error, duration_ms, round, step, idx FROM supportbot.tool_calls"
            " WHERE ticket_id = %s AND idx >= %s AND (%s::int IS NULL OR idx < %s) ORDER BY idx",
            (ticket_id, start, stop, stop),
        )
        .fetchall()
    )


def load_facts(conn: psycopg.Connection, ticket_id: str, start: int, stop: int | None = None) -> list[Fact]:
    return (
        conn.cursor(row_factory=class_row(Fact))
        .execute(
            "SELECT kind, value, key, turn, subject, role, supersedes FROM supportbot.facts"
            " WHERE ticket_id = %s AND idx >= %s"
            " AND (%s::int IS NULL OR idx < %s) ORDER BY idx",
            (ticket_id, start, stop, stop),
        )
        .fetchall()
    )


# -- steps and checkpoints ---------------------------------------------------------------------

_CHECKPOINT_SEQ = (
    "SELECT max(seq) FROM supportbot.checkpoints WHERE ticket_id = %(t)s"
    " AND (%(at)s::int IS NULL OR seq <= %(at)s)"
)


def read_state_rows(
    conn: psycopg.Connection, ticket_id: str, at: int | None = None
) -> tuple[TicketRow, tuple[int, dict[str, Any]] | None, list[StepRow]]:
    """What a state at step ``at`` (default: the latest) is rebuilt from, in one round trip: the
    ticket row, its latest checkpoint up to ``at``, and the step rows from that checkpoint's on."""
    params = {"t": ticket_id, "at": at}
    with conn.pipeline():
        ticket = conn.cursor(row_factory=class_row(TicketRow)).execute(
            f"SELECT {_TICKET_COLUMNS} FROM supportbot.tickets WHERE id = %(t)s", params
        )
        checkpoint = conn.cursor().execute(
            "SELECT seq, state FROM supportbot.checkpoints WHERE ticket_id = %(t)s AND seq = "
            f"({_CHECKPOINT_SEQ})",
            params,
        )
        steps = conn.cursor(row_factory=class_row(StepRow)).execute(
            "SELECT seq, round, step, next_step, turn_count, tool_call_count, update, fact_count FROM "
            "supportbot.steps"
            f" WHERE ticket_id = %(t)s AND seq >= coalesce(({_CHECKPOINT_SEQ}), 1)"
            " AND (%(at)s::int IS NULL OR seq <= %(at)s) ORDER BY seq",
            params,
        )
    row = ticket.fetchone()
    if row is None:
        raise no_ticket(ticket_id)
    base = checkpoint.fetchone()
    return row, None if base is None else (int(base[0]), base[1]), steps.fetchall()


def pruned_before(conn: psycopg.Connection, ticket_id: str) -> tuple[int, datetime] | None:
    """(the first step prune kept, when it last ran) for a pruned ticket; None if never pruned."""
    row = conn.execute(
        "SELECT max(kept_from), max(pruned_at) FROM supportbot.prunes WHERE ticket_id = %s", (ticket_id,)
    ).fetchone()
    return None if row is None or row[0] is None else (int(row[0]), row[1])


def history(conn: psycopg.Connection, ticket_id: str) -> list[StepRecord]:
    return (
        conn.cursor(row_factory=class_row(StepRecord))
        .execute(
            "SELECT seq, round, step, next_step, created_at FROM supportbot.steps WHERE ticket_id = %s "
            "ORDER BY seq",
            (ticket_id,),
        )
        .fetchall()
    )


def round_of_message(conn: psycopg.Connection, ticket_id: str, idx: int) -> int | None:
    """The round that took up the customer turn at ``idx``, if one has.

    A round's start record says how far it took turns up; so does its checkpoint (``handled_upto``
    is in the state), which is what is left of the round where prune removed the start record.
    """
    row = conn.execute(
        "SELECT round FROM ("
        " SELECT seq, round FROM supportbot.steps WHERE ticket_id = %(t)s AND step = 'start_round'"
        "  AND (update ->> 'handled_upto')::int > %(i)s"
        " UNION ALL SELECT k.seq, s.round FROM supportbot.checkpoints k JOIN supportbot.steps s USING "
        "(ticket_id, seq)"
        "  WHERE k.ticket_id = %(t)s AND (k.state ->> 'handled_upto')::int > %(i)s"
        ") taken ORDER BY seq LIMIT 1",
        {"t": ticket_id, "i": idx},
    ).fetchone()
    return None if row is None else int(row[0])


def last_seq_of_round(conn: psycopg.Connection, ticket_id: str, round_: int) -> int | None:
    row = conn.execute(
        "SELECT max(seq) FROM supportbot.steps WHERE ticket_id = %s AND round = %s", (ticket_id, round_)
    ).fetchone()
    return None if row is None or row[0] is None else int(row[0])


# -- approvals -------------------------------------------------------------------------------


def decide_approval(
    conn: psycopg.Connection,
    ticket_id: str,
    round_: int,
    *,
    approved: bool,
    approver: str,
    note: str,
    now: datetime,
) -> bool:
    """Record a human decision; False when the request was already decided (first click wins)."""
    row = conn.execute(
        "UPDATE supportbot.approvals SET approved = %s, approver = %s, note = %s, decided_at = %s"
        " WHERE ticket_id = %s AND round = %s AND decided_at IS NULL RETURNING 1",
        (approved, approver, note, now, ticket_id, round_),
    ).fetchone()
    return row is not None


def pending_approvals(conn: psycopg.Connection) -> list[PendingApproval]:
    return (
        conn.cursor(row_factory=class_row(PendingApproval))
        .execute(
            # A request that a tool of its round returned refers to that tool call (see codec).
            "SELECT a.ticket_id, a.round, t.customer_email, t.subject, CASE WHEN c.idx IS NULL THEN a.request"
            "  ELSE jsonb_build_object('refund_request', c.result) END AS request, a.requested_at"
            " FROM supportbot.approvals a JOIN supportbot.tickets t ON t.id = a.ticket_id"
            " LEFT JOIN supportbot.tool_calls c ON c.ticket_id = a.ticket_id"
            "  AND c.idx = (a.request -> 'refund_request' ->> '$tool')::integer"
            " WHERE a.decided_at IS NULL ORDER BY a.requested_at, a.ticket_id"
        )
        .fetchall()
    )


# -- effects ---------------------------------------------------------------------------------


def record_effect(
    conn: psycopg.Connection, *, key: str, ticket_id: str, round_: int, step: str, kind: str, result: Any
) -> None:
    conn.execute(
        "INSERT INTO supportbot.effects (key, ticket_id, round, step, kind, result) VALUES (%s, %s, %s, %s,"
        " %s, %s)",
        (key, ticket_id, round_, step, kind, Jsonb(to_jsonable_python(result))),
    )


# -- forks -----------------------------------------------------------------------------------


def copy_history(
    conn: psycopg.Connection,
    source: str,
    target: str,
    *,
    seq: int,
    turn_count: int,
    tool_call_count: int,
    fact_count: int,
    status: str,
    human_agent: str | None = None,
) -> None:
    """Give ``target`` the turns, tool calls, steps and checkpoints ``source`` had after step ``seq``."""
    conn.execute(
        "INSERT INTO supportbot.turns"
        " (ticket_id, idx, round, role, content, message_id, tokens, created_at, author)"
        " SELECT %s, idx, round, role, content, message_id, tokens, created_at, author FROM supportbot.turns"
        " WHERE ticket_id = %s AND idx < %s",
        (target, source, turn_count),
    )
    conn.execute(
        "INSERT INTO supportbot.tool_calls (ticket_id, idx, round, step, name, args, result, error, "
        "duration_ms)"
        " SELECT %s, idx, round, step, name, args, result, error, duration_ms FROM supportbot.tool_calls"
        " WHERE ticket_id = %s AND idx < %s",
        (target, source, tool_call_count),
    )
    conn.execute(
        "INSERT INTO supportbot.facts (ticket_id, idx, kind, value, key, turn, subject, role, supersedes)"
        " SELECT %s, idx, kind, value, key, turn, subject, role, supersedes FROM supportbot.facts"
        " WHERE ticket_id = %s AND idx < %s",
        (target, source, fact_count),
    )
    conn.execute(
        "INSERT INTO supportbot.steps (ticket_id, seq, round, step, next_step, turn_count,"
        " tool_call_count, update, fact_count, created_at)"
        " SELECT %s, seq, round, step, next_step, turn_count, tool_call_count, update,"
        " fact_count, created_at FROM supportbot.steps WHERE ticket_id = %s AND seq <= %s",
        (target, source, seq),
    )
    conn.execute(
        "INSERT INTO supportbot.checkpoints (ticket_id, seq, state)"
        " SELECT %s, seq, state FROM supportbot.checkpoints WHERE ticket_id = %s AND seq <= %s",
        (target, source, seq),
    )
    conn.execute(
        "UPDATE supportbot.tickets SET turn_count = %s, status = %s, last_seq = %s, human_agent = %s"
        " WHERE id = %s",
        (turn_count, status, seq, human_agent, target),
    )
