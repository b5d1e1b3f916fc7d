"""How driver errors become supportbot's errors, with no row data in their messages."""

from __future__ import annotations

import psycopg
from psycopg.conninfo import conninfo_to_dict

from ..errors import StoreBusy, StoreError, StoreUnavailable, SupportbotError, UnknownTicket

# Server errors that mean the session is gone: connection exceptions (class 08, also what PgBouncer
# sends when it cannot reach the server) and the server shutting down or not yet accepting (57P).
_LOST = ("08", "57P")
# Errors on a session that still works, where trying again later is the answer: a timeout, a lock
# wait, a deadlock or serialization failure, too many connections.
_RETRYABLE = ("57014", "55P03", "40", "53300")


def connection_lost(exc: psycopg.Error) -> bool:
    if not isinstance(exc, psycopg.OperationalError | psycopg.InterfaceError):
        return False
    state = exc.sqlstate or ""
    return not state or state.startswith(_LOST)  # no SQLSTATE: the driver found the connection broken


def translated(exc: psycopg.Error, db_timeout: float) -> SupportbotError:
    """The supportbot error for a driver error that left the store (its message holds no row data)."""
    if (exc.sqlstate or "").startswith(_RETRYABLE):
        return StoreBusy(
            f"the database could not finish the call ({exc.sqlstate}: {first_line(exc)}; the limit for a "
            f"statement or lock wait is {db_timeout:g} s); try again, or raise SUPPORTBOT_DB_TIMEOUT"
        )
    if connection_lost(exc):
        return StoreUnavailable(
            f"lost the connection to PostgreSQL ({first_line(exc)}); the call may not have completed. "
            "Try it again once the server is back: the pool reconnects by itself"
        )
    if isinstance(exc, psycopg.errors.DuplicatePreparedStatement | psycopg.errors.InvalidSqlStatementName):
        return StoreError(
            f"a prepared statement went missing between transactions ({exc.sqlstate}: {first_line(exc)}): "
            "a pooler in transaction mode (PgBouncer) sits in front of the database. Set "
            "SUPPORTBOT_PREPARED_STATEMENTS=off (Settings.prepared_statements=False)",
            reason="pooler",
            setting="SUPPORTBOT_PREPARED_STATEMENTS",
        )
    return StoreError(
        f"the database refused a statement ({exc.sqlstate}: {first_line(exc)}). This is a bug, or the "
        "schema was changed by hand: please report it",
        reason="refused",
        sqlstate=exc.sqlstate or "?",
    )


def connect_hint(exc: psycopg.OperationalError) -> str:
    if "unsupported startup parameter" in str(exc):
        return (
            "A pooler such as PgBouncer sits in front of the database: set "
            "SUPPORTBOT_PREPARED_STATEMENTS=off (Settings.prepared_statements=False)"
        )
    return "Check SUPPORTBOT_DATABASE_URL"


def with_limits(url: str, limits: str) -> str:
    """The URL's own ``options`` followed by the statement and lock-wait limits."""
    given = str(conninfo_to_dict(url).get("options") or "")
    return f"{given} -c statement_timeout={limits} -c lock_timeout={limits}".strip()


def first_line(exc: BaseException) -> str:
    """The error's first line: a server's DETAIL line may quote row values (customer data)."""
    if isinstance(exc, psycopg.Error) and exc.diag.message_primary:
        return exc.diag.message_primary
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]


def no_ticket(ticket_id: str) -> UnknownTicket:
    return UnknownTicket(
        f"no ticket {ticket_id!r}; tickets() lists the tickets there are", ticket_id=ticket_id
    )
