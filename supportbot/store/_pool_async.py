"""The connection pool under Store, which speaks supportbot's errors."""

from __future__ import annotations

import math
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Any

import psycopg
from psycopg_pool import AsyncConnectionPool, PoolTimeout

from ..errors import StoreBusy, StoreError, StoreUnavailable
from ._failures import connection_lost, first_line, translated
from ._held import AsyncHeld


class AsyncRoundPool(AsyncConnectionPool):
    """A connection pool that never makes a thread (or task) wait for a second connection, and
    speaks supportbot's errors.

    A thread that already holds a connection from this pool gets that same connection again, so
    a backend called inside the engine's transaction reads through it instead of waiting for
    another (with every connection held by such threads, that wait would never end). Database
    errors leave the outermost ``connection()`` as StoreError subclasses, the driver's error
    chained: StoreUnavailable when the server cannot be reached, StoreBusy when no connection,
    lock or answer came within its timeout. Opened by its Store (``open()``).
    """

    def __init__(self, conninfo: str, *, db_timeout: float, **kwargs: Any) -> None:
        super().__init__(conninfo, open=False, **kwargs)
        self.db_timeout = db_timeout
        # Connecting may take what the pool's wait left of db_timeout (libpq's least useful value is 2 s).
        probe = {**kwargs.get("kwargs", {}), "connect_timeout": max(2, math.ceil(db_timeout - self.timeout))}
        self._probe_args: tuple[str, dict[str, Any]] = (conninfo, probe)
        self._held = AsyncHeld[psycopg.AsyncConnection[Any], AsyncExitStack]()

    @asynccontextmanager
    async def connection(self, timeout: float | None = None) -> AsyncIterator[psycopg.AsyncConnection[Any]]:
        held = self._held.conn
        if held is not None:
            yield held
            return
        keep = self._held.keep
        try:
            if keep is not None:  # inside keep(): the connection stays with this thread until it ends
                kept = await keep.enter_async_context(super().connection(timeout))
                self._held.conn = kept
                yield kept
                return
            async with super().connection(timeout) as conn:
                self._held.conn = conn
                try:
                    yield conn
                finally:
                    self._held.conn = None
        except PoolTimeout as exc:
            down = await self._probe()
            raise self._exhausted(timeout, down) from down or exc
        except psycopg.Error as exc:
            if connection_lost(exc):
                await self.drain()  # the others were most likely cut off too: reconnect, don't hand them out
            raise translated(exc, self.db_timeout) from exc

    @asynccontextmanager
    async def keep(self) -> AsyncIterator[None]:
        """Within the block, the first connection this thread takes stays with it until the block
        ends, and serves every later call; none is taken if no call needs one."""
        if self._held.keep is not None or self._held.conn is not None:
            yield
            return
        self._held.keep = AsyncExitStack()
        try:
            yield
        finally:
            kept, self._held.keep, self._held.conn = self._held.keep, None, None
            await kept.aclose()

    async def _probe(self) -> psycopg.OperationalError | None:
        """Why a new connection fails, or None when the server answers (the pool is merely full)."""
        try:
            async with await psycopg.AsyncConnection.connect(self._probe_args[0], **self._probe_args[1]):
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
