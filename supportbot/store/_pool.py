"""The connection pool under Store, and how driver errors become supportbot's errors."""

from __future__ import annotations

import math
import threading
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from typing import Any

import psycopg
from psycopg.conninfo import conninfo_to_dict
from psycopg_pool import ConnectionPool, PoolTimeout

from ..errors import StoreBusy, StoreError, StoreUnavailable, SupportbotError


class RoundPool(ConnectionPool):
    """A connection pool that never makes a thread wait for a second connection, and speaks
    supportbot's errors.

    A thread that already holds a connection from this pool gets that same connection again, so
    a backend called inside the engine's transaction reads through it instead of waiting for
    another (with every connection held by such threads, that wait would never end). Database
    errors leave the outermost ``connection()`` as StoreError subclasses, the driver's error
    chained: StoreUnavailable when the server cannot be reached, StoreBusy when no connection,
    lock or answer came within its timeout.
    """

    def __init__(self, conninfo: str, *, db_timeout: float, **kwargs: Any) -> None:
        super().__init__(conninfo, open=True, **kwargs)
        self.db_timeout = db_timeout
        # Connecting may take what the pool's wait left of db_timeout (libpq's least useful value is 2 s).
        probe = {**kwargs.get("kwargs", {}), "connect_timeout": max(2, math.ceil(db_timeout - self.timeout))}
        self._probe_args: tuple[str, dict[str, Any]] = (conninfo, probe)
        self._held = threading.local()

    @contextmanager
    def connection(self, timeout: float | None = None) -> Iterator[psycopg.Connection[Any]]:
        held: psycopg.Connection[Any] | None = getattr(self._held, "conn", None)
        if held is not None:
            yield held
            return
        keep: ExitStack | None = getattr(self._held, "keep", None)
        try:
            if keep is not None:  # inside keep(): the connection stays with this thread until it ends
                self._held.conn = keep.enter_context(super().connection(timeout))
                yield self._held.conn
                return
            with super().connection(timeout) as conn:
                self._held.conn = conn
                try:
                    yield conn
                finally:
                    self._held.conn = None
        except PoolTimeout as exc:
            down = self._probe()
            raise self._exhausted(timeout, down) from down or exc
        except psycopg.Error as exc:
            if connection_lost(exc):
                self.drain()  # the others were most likely cut off too: reconnect, don't hand them out
            raise translated(exc, self.db_timeout) from exc

    @contextmanager
    def keep(self) -> Iterator[None]:
        """Within the block, the first connection this thread takes stays with it until the block
        ends, and serves every later call; none is taken if no call needs one."""
        if getattr(self._held, "keep", None) is not None or getattr(self._held, "conn", None) is not None:
            yield
            return
        self._held.keep = ExitStack()
        try:
            yield
        finally:
            kept, self._held.keep, self._held.conn = self._held.keep, None, None
            kept.close()

    def _probe(self) -> psycopg.OperationalError | None:
        """Why a new connection fails, or None when the server answers (the pool is merely full)."""
        try:
            with psycopg.connect(self._probe_args[0], **self._probe_args[1]):
                return None
        except psycopg.OperationalError as exc:
            return exc

    def _exhausted(self, timeout: float | None, down: psycopg.OperationalError | None) -> StoreError:
        if down is not None:
            return StoreUnavailable(
                f"cannot connect to PostgreSQL: {first_line(down)}. The pool reconnects by itself once "
                "the server is back; try again then"
            )
        return StoreBusy(
            f"no database connection came free within {timeout or self.timeout:g} s: all {self.max_size} "
            "were in use. Try again, run fewer calls at once, or raise SUPPORTBOT_POOL_MAX_SIZE "
            "(or SUPPORTBOT_POOL_TIMEOUT)"
        )


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
