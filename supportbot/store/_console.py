"""The operator console's own rows: review claims and private notes (sql/013_console.sql), and
its search over tickets (sql/022_console_search.sql).

Only the console uses these; the engine never reads them, so a note can never reach the model or
the customer. Each function takes a connection; the caller owns the transaction.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import NamedTuple

import psycopg
from psycopg import sql
from psycopg.rows import class_row

from ._rows import TicketRow
from ._tickets import TICKET_COLUMNS


@dataclass(frozen=True, slots=True)
class Claim:
    ticket_id: str
    round: int
    reviewer: str
    claimed_at: datetime
    expires_at: datetime


class ClaimOutcome(NamedTuple):
    won: bool  # the claim is now the reviewer's ...
    claim: Claim  # ... or another reviewer's live claim


@dataclass(frozen=True, slots=True)
class Note:
    ticket_id: str
    idx: int
    author: str
    body: str
    created_at: datetime


_CLAIM_COLUMNS = "ticket_id, round, reviewer, claimed_at, expires_at"


def claim(
    conn: psycopg.Connection, ticket_id: str, round_: int, reviewer: str, *, seconds: int
) -> ClaimOutcome:
    """Claim the ticket's approval for ``reviewer``: (True, the claim) if it is now theirs, else
    (False, the other reviewer's live claim).

    The row is taken over only when it has lapsed, is for another round, or is the same
    reviewer's (who extends it); ON CONFLICT locks the row, so of two reviewers claiming at once
    exactly one wins.
    """
    row = (
        conn.cursor(row_factory=class_row(Claim))
        .execute(
            "INSERT INTO supportbot.console_claims AS c (ticket_id, round, reviewer, claimed_at, expires_at)"
            " VALUES (%(t)s, %(r)s, %(who)s, now(), now() + make_interval(secs => %(s)s))"
            " ON CONFLICT (ticket_id) DO UPDATE SET round = excluded.round, reviewer = excluded.reviewer,"
            "  claimed_at = CASE WHEN c.reviewer = excluded.reviewer AND c.round = excluded.round"
            "   AND c.expires_at > now() THEN c.claimed_at ELSE excluded.claimed_at END,"
            "  expires_at = excluded.expires_at"
            " WHERE c.expires_at <= now() OR c.round <> excluded.round OR c.reviewer = excluded.reviewer"
            f" RETURNING {_CLAIM_COLUMNS}",
            {"t": ticket_id, "r": round_, "who": reviewer, "s": seconds},
        )
        .fetchone()
    )
    if row is not None:
        return ClaimOutcome(True, row)
    held = current_claim(conn, ticket_id, round_)
    if held is None:  # it lapsed between the two statements: try once more
        return claim(conn, ticket_id, round_, reviewer, seconds=seconds)
    return ClaimOutcome(False, held)


def current_claim(conn: psycopg.Connection, ticket_id: str, round_: int) -> Claim | None:
    """The live (unexpired) claim on the ticket's approval of ``round_``, if any."""
    return (
        conn.cursor(row_factory=class_row(Claim))
        .execute(
            f"SELECT {_CLAIM_COLUMNS} FROM supportbot.console_claims"
            " WHERE ticket_id = %s AND round = %s AND expires_at > now()",
            (ticket_id, round_),
        )
        .fetchone()
    )


def live_claims(conn: psycopg.Connection) -> dict[str, Claim]:
    """Every live claim by ticket id (the inbox shows who is reviewing what)."""
    rows = (
        conn.cursor(row_factory=class_row(Claim))
        .execute(f"SELECT {_CLAIM_COLUMNS} FROM supportbot.console_claims WHERE expires_at > now()")
        .fetchall()
    )
    return {row.ticket_id: row for row in rows}


def release(conn: psycopg.Connection, ticket_id: str, reviewer: str) -> bool:
    """Drop ``reviewer``'s claim on the ticket; False if they held none."""
    row = conn.execute(
        "DELETE FROM supportbot.console_claims WHERE ticket_id = %s AND reviewer = %s RETURNING 1",
        (ticket_id, reviewer),
    ).fetchone()
    return row is not None


def add_note(conn: psycopg.Connection, ticket_id: str, author: str, body: str) -> Note:
    # The ticket row lock numbers notes one at a time, like turns.
    conn.execute("SELECT 1 FROM supportbot.tickets WHERE id = %s FOR UPDATE", (ticket_id,))
    row = (
        conn.cursor(row_factory=class_row(Note))
        .execute(
            "INSERT INTO supportbot.console_notes (ticket_id, idx, author, body)"
            " SELECT %(t)s, coalesce(max(idx) + 1, 0), %(a)s, %(b)s FROM supportbot.console_notes"
            " WHERE ticket_id = %(t)s RETURNING ticket_id, idx, author, body, created_at",
            {"t": ticket_id, "a": author, "b": body},
        )
        .fetchone()
    )
    assert row is not None
    return row


def notes(conn: psycopg.Connection, ticket_id: str) -> list[Note]:
    return (
        conn.cursor(row_factory=class_row(Note))
        .execute(
            "SELECT ticket_id, idx, author, body, created_at FROM supportbot.console_notes"
            " WHERE ticket_id = %s ORDER BY idx",
            (ticket_id,),
        )
        .fetchall()
    )


# -- sessions (sql/020_console_sessions.sql) ------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SessionRow:
    operator: str
    role: str
    credential: str
    started_at: datetime
    seen_at: datetime


def session_insert(
    conn: psycopg.Connection, id_hash: bytes, operator: str, role: str, credential: str, now: datetime
) -> None:
    conn.execute(
        "INSERT INTO supportbot.console_sessions (id_hash, operator, role, credential, started_at, seen_at)"
        " VALUES (%s, %s, %s, %s, %s, %s)",
        (id_hash, operator, role, credential, now, now),
    )


def session_get(conn: psycopg.Connection, id_hash: bytes) -> SessionRow | None:
    return (
        conn.cursor(row_factory=class_row(SessionRow))
        .execute(
            "SELECT operator, role, credential, started_at, seen_at FROM supportbot.console_sessions"
            " WHERE id_hash = %s",
            (id_hash,),
        )
        .fetchone()
    )


def session_touch(conn: psycopg.Connection, id_hash: bytes, now: datetime) -> None:
    conn.execute("UPDATE supportbot.console_sessions SET seen_at = %s WHERE id_hash = %s", (now, id_hash))


def session_delete(conn: psycopg.Connection, id_hash: bytes) -> None:
    conn.execute("DELETE FROM supportbot.console_sessions WHERE id_hash = %s", (id_hash,))


def sessions_delete_operator(conn: psycopg.Connection, operator: str) -> int:
    """End every session of ``operator`` (a changed password or role); how many ended."""
    return conn.execute("DELETE FROM supportbot.console_sessions WHERE operator = %s", (operator,)).rowcount


def sessions_sweep(conn: psycopg.Connection, *, seen_before: datetime, started_before: datetime) -> int:
    """Delete the sessions that ended: idle since ``seen_before`` or begun before ``started_before``."""
    return conn.execute(
        "DELETE FROM supportbot.console_sessions WHERE seen_at < %s OR started_at < %s",
        (seen_before, started_before),
    ).rowcount


def sessions_count(conn: psycopg.Connection) -> int:
    row = conn.execute("SELECT count(*) FROM supportbot.console_sessions").fetchone()
    return int(row[0]) if row else 0


def end_operator_sessions(url: str, operator: str) -> int:
    """End every console session of ``operator`` in the database at ``url`` (the CLI, after it
    changed their password or role); 0 when the console never ran there."""
    from ..errors import StoreUnavailable

    try:
        with psycopg.connect(url) as conn:
            row = conn.execute("SELECT to_regclass('supportbot.console_sessions')").fetchone()
            return sessions_delete_operator(conn, operator) if row and row[0] else 0
    except psycopg.Error as exc:
        raise StoreUnavailable(
            f"the operator was saved, but their console sessions could not be ended ({type(exc).__name__}):"
            " check SUPPORTBOT_DATABASE_URL and run the command again"
        ) from exc


# -- assignments -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Assignment:
    ticket_id: str
    operator: str | None
    team: str | None
    assigned_by: str
    assigned_at: datetime


_ASSIGNMENT_COLUMNS = "ticket_id, operator, team, assigned_by, assigned_at"


def assignments(conn: psycopg.Connection) -> dict[str, Assignment]:
    """Every assignment, by ticket (a few per open ticket: the inbox reads them all)."""
    rows = (
        conn.cursor(row_factory=class_row(Assignment))
        .execute(f"SELECT {_ASSIGNMENT_COLUMNS} FROM supportbot.console_assignments")
        .fetchall()
    )
    return {a.ticket_id: a for a in rows}


def assignment(conn: psycopg.Connection, ticket_id: str, *, lock: bool = False) -> Assignment | None:
    return (
        conn.cursor(row_factory=class_row(Assignment))
        .execute(
            f"SELECT {_ASSIGNMENT_COLUMNS} FROM supportbot.console_assignments WHERE ticket_id = %s"
            + (" FOR UPDATE" if lock else ""),
            (ticket_id,),
        )
        .fetchone()
    )


def assign(
    conn: psycopg.Connection, ticket_id: str, *, operator: str | None, team: str | None, by: str
) -> Assignment:
    """Assign the ticket (replacing any earlier assignment); the caller audits the hand-over."""
    row = (
        conn.cursor(row_factory=class_row(Assignment))
        .execute(
            "INSERT INTO supportbot.console_assignments (ticket_id, operator, team, assigned_by)"
            " VALUES (%(t)s, %(o)s, %(g)s, %(b)s) ON CONFLICT (ticket_id) DO UPDATE SET"
            " operator = EXCLUDED.operator, team = EXCLUDED.team, assigned_by = EXCLUDED.assigned_by,"
            f" assigned_at = now() RETURNING {_ASSIGNMENT_COLUMNS}",
            {"t": ticket_id, "o": operator, "g": team, "b": by},
        )
        .fetchone()
    )
    assert row is not None
    return row


# -- saved replies ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SavedReply:
    team: str  # "" for everyone
    name: str
    body: str
    created_by: str
    created_at: datetime


def saved_replies(conn: psycopg.Connection, teams: list[str]) -> list[SavedReply]:
    """The saved replies of ``teams`` and everyone's, by team then name."""
    return (
        conn.cursor(row_factory=class_row(SavedReply))
        .execute(
            "SELECT team, name, body, created_by, created_at FROM supportbot.console_saved_replies"
            " WHERE team = '' OR team = ANY(%s) ORDER BY team, name",
            (teams,),
        )
        .fetchall()
    )


def save_reply(conn: psycopg.Connection, team: str, name: str, body: str, by: str) -> None:
    """Add the saved reply, or replace the one of that team and name."""
    conn.execute(
        "INSERT INTO supportbot.console_saved_replies (team, name, body, created_by) VALUES (%s, %s, %s, %s)"
        " ON CONFLICT (team, name) DO UPDATE SET body = EXCLUDED.body, created_by = EXCLUDED.created_by,"
        " created_at = now()",
        (team, name, body, by),
    )


def delete_reply(conn: psycopg.Connection, team: str, name: str) -> bool:
    cur = conn.execute(
        "DELETE FROM supportbot.console_saved_replies WHERE team = %s AND name = %s", (team, name)
    )
    return cur.rowcount > 0


# -- search ------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Found:
    """A ticket a search found, and the first turn holding the searched text ("" when the id
    or subject matched, or no text was searched)."""

    ticket: TicketRow
    excerpt: str


def search(
    conn: psycopg.Connection,
    *,
    text: str = "",
    customer: str = "",
    status: str | None = None,
    since: datetime | None = None,
    until: datetime | None = None,
    limit: int,
    offset: int = 0,
) -> list[Found]:
    """Tickets, open and closed, whose id, subject or any turn holds ``text`` (case-insensitive,
    any language), by customer address fragment, status and creation time (``since`` included,
    ``until`` not), the latest changed first. Only the clauses asked for are sent, so the planner
    sees real values (the trigram index of sql/022 serves the text)."""
    where: list[sql.Composable] = []
    values: dict[str, object] = {"n": limit, "o": offset, "p": _contains(text)}
    if text:
        where.append(
            sql.SQL(
                "(t.id ILIKE %(p)s OR t.subject ILIKE %(p)s OR t.id IN"
                " (SELECT ticket_id FROM supportbot.turns WHERE content ILIKE %(p)s))"
            )
        )
    if customer:
        where.append(sql.SQL("lower(t.customer_email) LIKE %(c)s"))
        values["c"] = _contains(customer.lower())
    if status is not None:
        where.append(sql.SQL("t.status = %(s)s"))
        values["s"] = status
    if since is not None:
        where.append(sql.SQL("t.created_at >= %(since)s"))
        values["since"] = since
    if until is not None:
        where.append(sql.SQL("t.created_at < %(until)s"))
        values["until"] = until
    columns = sql.SQL(", ").join(sql.SQL("t.") + sql.Identifier(c.strip()) for c in TICKET_COLUMNS.split(","))
    excerpt = (
        sql.SQL(
            "(SELECT content FROM supportbot.turns u WHERE u.ticket_id = t.id AND u.content ILIKE %(p)s"
            " ORDER BY u.idx LIMIT 1)"
        )
        if text
        else sql.SQL("NULL::text")
    )
    query = sql.SQL(
        "SELECT {columns}, {excerpt} FROM supportbot.tickets t {where}"
        " ORDER BY t.updated_at DESC, t.id DESC LIMIT %(n)s OFFSET %(o)s"
    ).format(
        columns=columns,
        excerpt=excerpt,
        where=sql.SQL("WHERE ") + sql.SQL(" AND ").join(where) if where else sql.SQL(""),
    )
    rows = conn.execute(query, values).fetchall()
    return [Found(TicketRow(*row[:-1]), row[-1] or "") for row in rows]


def _contains(fragment: str) -> str:
    """A LIKE pattern matching ``fragment`` anywhere, its own % and _ taken literally."""
    escaped = fragment.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


class ConsoleStatements:
    """The console's claims, assignments, notes, saved replies and sessions (``store.console``): the
    statements code outside the store runs, each on the transaction or connection it passes."""

    add_note = staticmethod(add_note)
    assign = staticmethod(assign)
    assignment = staticmethod(assignment)
    assignments = staticmethod(assignments)
    claim = staticmethod(claim)
    current_claim = staticmethod(current_claim)
    delete_reply = staticmethod(delete_reply)
    end_operator_sessions = staticmethod(end_operator_sessions)  # on a connection of its own, to ``url``
    live_claims = staticmethod(live_claims)
    notes = staticmethod(notes)
    release = staticmethod(release)
    save_reply = staticmethod(save_reply)
    saved_replies = staticmethod(saved_replies)
    search = staticmethod(search)
    session_delete = staticmethod(session_delete)
    session_get = staticmethod(session_get)
    session_insert = staticmethod(session_insert)
    session_touch = staticmethod(session_touch)
    sessions_count = staticmethod(sessions_count)
    sessions_delete_operator = staticmethod(sessions_delete_operator)
    sessions_sweep = staticmethod(sessions_sweep)
