"""The one place that owns connections and transactions, and rebuilds states from storage."""

from __future__ import annotations

import dataclasses
import math
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager, suppress
from datetime import datetime
from typing import Any, TypeVar

import psycopg
from psycopg import sql
from psycopg.pq import TransactionStatus

from .._records import ToolCall
from .._state import ROUND_START, Fact, SupportState, Turn, new_round, reduce
from ..errors import (
    LeaseLost,
    ReplayMismatch,
    StepPruned,
    StoreUnavailable,
    SupportbotError,
    UnknownStep,
)
from . import _history_async as steps_repo
from . import _prune_async, _retention_async
from . import _tickets_async as repo
from ._api_keys_async import AsyncApiKeyStatements
from ._audit_async import AsyncAuditStatements
from ._codec import decode_state, decode_update
from ._failures import connect_hint, first_line, translated, with_limits
from ._history_async import AsyncHistoryStatements
from ._lease_async import AsyncLeaseStatements
from ._lifecycle_async import AsyncLifecycleStatements
from ._metrics_async import AsyncMetricsStatements
from ._migrate_async import AsyncMigrationStatements, migrate
from ._pool_async import AsyncRoundPool
from ._profiles_async import AsyncProfileStatements
from ._queue_async import AsyncQueueStatements
from ._recent import RECENT_TICKETS, LastWritten
from ._rows import LeaseRequest, Loaded, StoredMessage

# sync> from ._console import ConsoleStatements
from ._sla_async import AsyncSlaStatements
from ._tickets_async import AsyncTicketStatements

T = TypeVar("T")


class AsyncStore:
    """Connections, transactions and the caches of append-only rows; safe to share between threads
    (the asynchronous store: between the tasks of one event loop). Opened by ``open()`` (the
    synchronous store opens in its constructor).

    ``pool_timeout``: seconds to wait for a free connection before StoreBusy. ``db_timeout``:
    seconds a connection attempt, a statement or a lock wait may take (0: no statement or lock
    limit). ``prepared_statements=False`` for a pooler in transaction mode (PgBouncer).

    It is the one gate to the database: code outside ``store/`` runs every statement through it,
    by the tables the statements touch (``store.tickets``, ``store.queue``, ...), on a transaction
    or connection it took from ``transaction()``, ``statement()`` or ``connection()``, so that a
    round's statements share its transaction.
    """

    tickets = AsyncTicketStatements
    history = AsyncHistoryStatements
    queue = AsyncQueueStatements
    lease = AsyncLeaseStatements
    audit = AsyncAuditStatements
    sla = AsyncSlaStatements
    profiles = AsyncProfileStatements
    lifecycle = AsyncLifecycleStatements
    metrics = AsyncMetricsStatements
    keys = AsyncApiKeyStatements
    migrations = AsyncMigrationStatements
    # sync> console = ConsoleStatements  # the console is synchronous only
    # These take the store itself (each runs its own transactions), so they are its methods.
    prune_closed = _prune_async.prune_closed
    retention_due = _retention_async.due
    retention_remove = _retention_async.remove

    def __init__(
        self,
        url: str,
        *,
        max_size: int = 4,
        pool_timeout: float = 5.0,
        db_timeout: float = 10.0,
        prepared_statements: bool = True,
        demo: bool = False,
    ) -> None:
        kwargs: dict[str, Any] = {"autocommit": True}
        if db_timeout > 0:
            kwargs["connect_timeout"] = max(2, math.ceil(db_timeout))  # libpq's least useful value is 2
        if not prepared_statements:
            kwargs["prepare_threshold"] = None
        limits = f"{round(db_timeout * 1000)}ms" if db_timeout > 0 else None
        # Statements and lock waits are bounded. Connected directly, each pooled connection starts
        # with the limits, for its whole session. Behind a pooler (no prepared statements) sessions
        # pass from client to client, so each transaction sets them again, with SET LOCAL, which
        # ends with the transaction: one more statement each.
        self._limits = limits if not prepared_statements else None
        pool_kwargs = migrate_kwargs = kwargs
        if limits is not None and prepared_statements:
            pool_kwargs = {**kwargs, "options": with_limits(url, limits)}
            # A migration may wait and take long: unbounded, but with the same startup option, so
            # a server that refuses it (a pooler) says so here, before the pool meets it.
            migrate_kwargs = {**kwargs, "options": with_limits(url, "0")}
        self._migrate = (url, migrate_kwargs, demo, db_timeout)
        self.url, self.connect_kwargs = url, kwargs  # for connections of their own (LISTEN)
        # A lease names its holder's server process only on direct connections: behind a pooler in
        # transaction mode (no prepared statements) server connections outlive their clients.
        self.tracks_holders = prepared_statements
        self.pool = AsyncRoundPool(
            url,
            min_size=1,
            max_size=max_size,
            timeout=pool_timeout,
            db_timeout=db_timeout,
            kwargs=pool_kwargs,
        )
        self._lock = threading.Lock()
        # Turns and tool calls never change once written, so a copy read once stays valid:
        # loading a 500-round ticket reads only what was added since the last load. Kept for
        # the tickets written last (store/_recent.py): a long-running worker must not keep them all.
        self._turns: LastWritten[str, tuple[Turn, ...]] = LastWritten(RECENT_TICKETS)
        self._tools: LastWritten[str, tuple[ToolCall, ...]] = LastWritten(RECENT_TICKETS)
        self._facts: LastWritten[str, tuple[Fact, ...]] = LastWritten(RECENT_TICKETS)
        # sync> self.open()

    async def open(self) -> None:
        """Bring the schema up to date, then open the pool.

        The migration runs on a connection of its own: once, when a process starts, before the
        store serves anything.
        """
        url, migrate_kwargs, demo, db_timeout = self._migrate
        try:
            async with await psycopg.AsyncConnection.connect(url, **migrate_kwargs) as conn:
                await migrate(conn, demo=demo)
        except psycopg.OperationalError as exc:
            raise StoreUnavailable(
                f"cannot connect to PostgreSQL: {first_line(exc)}. {connect_hint(exc)}",
                reason="connect",
            ) from exc
        except psycopg.Error as exc:
            raise translated(exc, db_timeout) from exc
        await self.pool.open()

    def remembered(self) -> dict[str, int]:
        """How many tickets' turns, tool calls and facts this process keeps (each at most RECENT_TICKETS)."""
        return {"turns": len(self._turns), "tool_calls": len(self._tools), "facts": len(self._facts)}

    async def close(self) -> None:
        await self.pool.close()

    @asynccontextmanager
    async def connection(self) -> AsyncIterator[psycopg.AsyncConnection]:
        """A pooled connection (the one this thread already holds, if it holds one)."""
        async with self.pool.connection() as conn:
            yield conn

    def keep_connection(self) -> AbstractAsyncContextManager[None]:
        """Calls in the block share the first connection one of them takes (RoundPool.keep)."""
        return self.pool.keep()

    @asynccontextmanager
    async def transaction(
        self, conn: psycopg.AsyncConnection | None = None, *, durable: bool = True
    ) -> AsyncIterator[psycopg.AsyncConnection]:
        """Open a transaction; ``durable=False`` commits without waiting for the WAL flush.

        A non-durable commit survives a crash of this process (the server has it); only a crash
        of the server itself within a fraction of a second can lose it. The engine uses it for
        steps whose loss only means running that step again; turns, decisions and side effects
        always commit durably.

        Statements go one at a time, not in a pipeline. A pipeline would save round trips, but
        psycopg polls the socket once per pipelined statement, and each poll gives the
        interpreter lock away: under hundreds of worker threads, winning it back costs far more
        than a round trip to the database (docs/scaling.md, Stateless workers, has the count).
        """
        if conn is None:
            async with self.pool.connection() as own, self.transaction(own, durable=durable) as tx:
                yield tx
            return
        try:
            async with psycopg.AsyncTransaction(conn):
                await self._set_local(conn, durable)
                yield conn
        except psycopg.Error as reported:
            failed = _failed_statement(reported)
            if (engine_error := _engine_error(failed)) is not None:
                raise engine_error from failed
            if failed is not reported:
                # The statement's own error, as a transaction without a pipeline raises it.
                raise failed from None
            raise

    @asynccontextmanager
    async def statement(self, *, durable: bool = False) -> AsyncIterator[psycopg.AsyncConnection]:
        """A connection for one statement that is a transaction by itself, without BEGIN and
        COMMIT (nor the SET LOCAL of a commit that need not wait for the disk): two or three round
        trips fewer than ``transaction()``. Connected directly, the session's
        limits bound it. Behind a pooler, which passes sessions from client to client, the
        limits are set per transaction, so the statement gets one after all (``durable``: one
        whose commit waits for the disk).

        Connected directly it commits durably unless it says otherwise itself
        (``lease_repo.NOWAIT``: a ``set_config('synchronous_commit', 'off', true)`` holds until its
        commit)."""
        if self._limits is None:
            async with self.connection() as conn:
                yield conn
        else:
            async with self.transaction(durable=durable) as tx:
                yield tx

    @asynccontextmanager
    async def transaction_with(
        self, opening: sql.Composed | None, *, durable: bool = True
    ) -> AsyncIterator[tuple[psycopg.AsyncConnection, psycopg.AsyncCursor[Any] | None]]:
        """``transaction()`` whose first statement, ``opening``, is sent with its BEGIN in one
        round trip; yields the transaction and that statement's cursor (None without one).

        A reply locks its ticket row this way: one round trip fewer while it holds a pooled
        connection, which hundreds of worker threads take turns with. Only statements without
        parameters can share a round trip, so ``opening`` carries its values in its text, quoted
        by ``psycopg.sql``. On a connection already in a transaction (this thread's, held by a
        caller) it runs as the first statement of a savepoint instead.
        """
        if opening is None:
            async with self.transaction(durable=durable) as tx:
                yield tx, None
            return
        async with self.pool.connection() as conn:
            if conn.info.transaction_status != TransactionStatus.IDLE:
                async with self.transaction(conn, durable=durable) as tx:
                    yield tx, await tx.execute(opening)
                return
            local = self._local(durable)
            statements = [sql.SQL("BEGIN"), *([local] if local is not None else []), opening]
            try:
                cur = await conn.execute(sql.SQL("; ").join(statements), prepare=False)
                for _ in statements[:-1]:
                    cur.nextset()
                yield conn, cur
                await conn.commit()
            except BaseException as exc:
                await _roll_back(conn)
                if isinstance(exc, psycopg.Error) and (engine_error := _engine_error(exc)) is not None:
                    raise engine_error from exc
                raise

    async def _set_local(self, conn: psycopg.AsyncConnection, durable: bool) -> None:
        local = self._local(durable)
        if local is not None:
            await conn.execute(local)

    def _local(self, durable: bool) -> sql.SQL | sql.Composed | None:
        """The statement that sets the transaction's timeouts (behind a pooler) and commit mode,
        or None when the session's settings are right as they are."""
        if self._limits is None:
            return None if durable else sql.SQL("SET LOCAL synchronous_commit = off")
        return sql.SQL(
            "SELECT set_config('statement_timeout', {t}, true), set_config('lock_timeout', {t}, true),"
            " set_config('synchronous_commit', {c}, true)"
        ).format(t=sql.Literal(self._limits), c=sql.Literal("on" if durable else "off"))

    # -- reading back ----------------------------------------------------------------------

    # ``conn`` None: a connection is taken only if the cache lacks rows.
    async def turns(
        self, conn: psycopg.AsyncConnection | None, ticket_id: str, count: int
    ) -> tuple[Turn, ...]:
        return await self._prefix(self._turns, repo.load_turns, conn, ticket_id, count)

    async def tool_calls(
        self, conn: psycopg.AsyncConnection | None, ticket_id: str, count: int
    ) -> tuple[ToolCall, ...]:
        return await self._prefix(self._tools, repo.load_tool_calls, conn, ticket_id, count)

    async def facts(
        self, conn: psycopg.AsyncConnection | None, ticket_id: str, count: int
    ) -> tuple[Fact, ...]:
        return await self._prefix(self._facts, repo.load_facts, conn, ticket_id, count)

    async def _prefix(
        self,
        cache: LastWritten[str, tuple[T, ...]],
        load: Callable[..., Awaitable[list[T]]],
        conn: psycopg.AsyncConnection | None,
        ticket_id: str,
        count: int,
    ) -> tuple[T, ...]:
        """The first ``count`` rows of an append-only log, reading only what the cache lacks."""
        with self._lock:
            cached = cache.get(ticket_id) or ()
        if len(cached) < count:
            if conn is None:
                async with self.connection() as own:
                    cached = cached + tuple(await load(own, ticket_id, len(cached), count))
            else:
                cached = cached + tuple(await load(conn, ticket_id, len(cached), count))
            with self._lock:
                cache[ticket_id] = cached
        return cached[:count]

    async def append_message(
        self,
        ticket_id: str,
        content: str,
        *,
        message_id: str | None,
        now: datetime,
        tokens: int,
        lease: tuple[str, float] | None,
    ) -> StoredMessage:
        """Store a customer message (``repo.append_customer_message``) and remember its turn.

        On its own (not in a caller's transaction), so its wait for the ticket row's lock (held by
        a round that records a step while a slow host call is under way, or by a stuck process) is
        bounded by ``db_timeout`` like every other statement: StoreBusy then, and nothing was stored.
        """
        async with self.pool.connection() as conn:
            try:
                # Without a message id to look up first, the message is one statement, durable.
                opened = self.statement(durable=True) if message_id is None else self.transaction(conn)
                async with opened as tx:  # statement() takes this thread's connection, conn
                    stored = await repo.append_customer_message(
                        tx,
                        ticket_id,
                        content,
                        message_id=message_id,
                        now=now,
                        tokens=tokens,
                        lease=None if lease is None else LeaseRequest(*lease, self.tracks_holders),
                    )
            except psycopg.errors.UniqueViolation:
                if message_id is None:
                    raise
                async with self.transaction(conn) as tx:  # a concurrent send of the same id won: its turn
                    repeated = await repo.stored_message(tx, ticket_id, message_id, content)
                if repeated is None:
                    raise
                stored = StoredMessage(repeated, False, None)
        self.remember_turn(ticket_id, stored.turn)
        return stored

    def remember_turn(self, ticket_id: str, turn: Turn) -> None:
        """Add a turn this process just stored, so the round that answers it need not read it back."""
        self.remember_turns(ticket_id, (turn,))

    def remember_turns(self, ticket_id: str, turns: Sequence[Turn]) -> None:
        """Add stored turns (in order) that continue the cached ones; the others are read when needed."""
        with self._lock:
            cached = self._turns.get(ticket_id) or ()
            added = list(cached)
            for turn in turns:
                if turn.idx == len(added):
                    added.append(turn)
            if len(added) > len(cached):
                self._turns[ticket_id] = tuple(added)

    def forget_cached(self, ticket_id: str) -> None:
        with self._lock:
            self._turns.pop(ticket_id)
            self._tools.pop(ticket_id)
            self._facts.pop(ticket_id)

    async def load(self, conn: psycopg.AsyncConnection, ticket_id: str, *, at: int | None = None) -> Loaded:
        """Rebuild the state after step ``at`` (default: the latest step)."""
        # Steps from the checkpointed step's own row on: it gives the counters; its update is in the
        # checkpoint.
        row, base, records = await steps_repo.read_state_rows(conn, ticket_id, at)
        last = records[-1] if records else None
        if at is not None and (last.seq if last else 0) != at:
            raise await self._missing(conn, ticket_id, at)
        # Stored values may refer to tool results (see codec), so the tool log comes first.
        if last is None:
            return Loaded.unstarted(row)
        tool_log = await self.tool_calls(conn, ticket_id, last.tool_call_count)
        if base is None:
            state = SupportState(ticket=row.ticket())
        else:
            state = decode_state(base[1], ticket=row.ticket(), tool_log=tool_log)
        for step in records:
            if base is None or step.seq > base[0]:
                if step.step == ROUND_START:
                    state = new_round(state)
                state = reduce(state, decode_update(step.update, tools=tool_log))
        state = dataclasses.replace(
            state,
            turns=await self.turns(conn, ticket_id, last.turn_count),
            tool_log=tool_log,
            facts=await self.facts(conn, ticket_id, last.fact_count),
        )
        return Loaded(state=state, seq=last.seq, next_step=last.next_step, status=row.status)

    @staticmethod
    async def _missing(conn: psycopg.AsyncConnection, ticket_id: str, at: int) -> UnknownStep:
        mark = await steps_repo.pruned_before(conn, ticket_id)
        if mark is not None and 0 < at < mark[0]:
            return StepPruned(
                f"step {at} of ticket {ticket_id} was pruned on {mark[1]:%Y-%m-%d}; steps from {mark[0]} on "
                "can still be rebuilt (`history` lists them)",
                ticket_id=ticket_id,
                at=at,
                pruned_on=f"{mark[1]:%Y-%m-%d}",
                kept_from=mark[0],
            )
        return UnknownStep(
            f"ticket {ticket_id} has no step {at}; `history` lists its steps", ticket_id=ticket_id, at=at
        )


async def _roll_back(conn: psycopg.AsyncConnection) -> None:
    """End a transaction begun by hand after an error; a connection that broke is the pool's."""
    if conn.info.transaction_status in (TransactionStatus.INTRANS, TransactionStatus.INERROR):
        with suppress(psycopg.Error):
            await conn.rollback()


def _failed_statement(exc: psycopg.Error) -> psycopg.Error:
    """The error of the statement that failed, where psycopg reports the pipeline's abort instead.

    Whether a failed statement's result is read while the pipeline still sends, or only in its
    final fetch, depends on timing; in the first case the fetch raises PipelineAborted for the
    statements after it, with the statement's own error as its context.
    """
    while isinstance(exc, psycopg.errors.PipelineAborted) and isinstance(exc.__context__, psycopg.Error):
        exc = exc.__context__
    return exc


def _engine_error(exc: psycopg.Error) -> SupportbotError | None:
    """The engine's error for a database error that means one, else None."""
    if (
        exc.sqlstate == "SBL01"
        or (isinstance(exc, psycopg.errors.UniqueViolation) and exc.diag.constraint_name == "steps_pkey")
        or (
            # The ticket was deleted under us (forget_customer(force=True)) after our lease check.
            isinstance(exc, psycopg.errors.ForeignKeyViolation)
            and (exc.diag.constraint_name or "").endswith("ticket_id_fkey")
        )
    ):
        return LeaseLost(f"another worker took the ticket over: {exc.diag.message_primary}")
    if isinstance(exc, psycopg.errors.UniqueViolation) and exc.diag.constraint_name == "effects_pkey":
        return ReplayMismatch(
            f"a side effect ran again that was already recorded ({exc.diag.message_detail}); it was "
            "rolled back. This is a bug: please report it with the ticket's `history`"
        )
    return None
