"""The one place that owns connections and transactions, and rebuilds states from storage."""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TypeVar

import psycopg
from psycopg.pq import TransactionStatus
from psycopg_pool import ConnectionPool

from ..errors import LeaseLost, ReplayMismatch, StepPruned, StoreError, SupportbotError, UnknownStep
from ..records import ToolCall
from ..state import ROUND_START, Fact, SupportState, Turn, new_round, reduce
from . import repo
from .codec import decode_fields, decode_state
from .migrate import migrate

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Loaded:
    """A state as of step ``seq`` and where the loop goes from there."""

    state: SupportState
    seq: int  # 0 when no step was recorded yet
    next_step: str | None
    status: str


class Store:
    def __init__(self, url: str, *, max_size: int = 4) -> None:
        try:
            with psycopg.connect(url) as conn:
                migrate(conn)
        except psycopg.OperationalError as exc:
            raise StoreError(
                f"cannot connect to PostgreSQL: {exc}. Check SUPPORTBOT_DATABASE_URL", reason="connect"
            ) from exc
        self.pool = ConnectionPool(url, min_size=1, max_size=max_size, open=True, kwargs={"autocommit": True})
        self._lock = threading.Lock()
        # Turns and tool calls never change once written, so a copy read once stays valid:
        # loading a 500-round ticket reads only what was added since the last load.
        self._turns: dict[str, tuple[Turn, ...]] = {}
        self._tools: dict[str, tuple[ToolCall, ...]] = {}
        self._facts: dict[str, tuple[Fact, ...]] = {}

    def close(self) -> None:
        self.pool.close()

    @contextmanager
    def connection(self) -> Iterator[psycopg.Connection]:
        with self.pool.connection() as conn:
            yield conn

    @contextmanager
    def transaction(
        self, conn: psycopg.Connection | None = None, *, durable: bool = True
    ) -> Iterator[psycopg.Connection]:
        """Open a pipelined transaction; ``durable=False`` commits without waiting for the WAL flush.

        Statements are pipelined, so a step's writes and its commit cost one round trip. A
        non-durable commit survives a crash of this process (the server has it); only a crash of
        the server itself within a fraction of a second can lose it. The engine uses it for steps
        whose loss only means running that step again; turns, decisions and side effects always
        commit durably.
        """
        if conn is None:
            with self.pool.connection() as own, self.transaction(own, durable=durable) as tx:
                yield tx
            return
        try:
            try:
                # One pipeline around a plain Transaction: BEGIN, the statements and COMMIT go out
                # together and cost one round trip at the pipeline's exit (conn.transaction() in a
                # pipeline nests two more pipelines, whose exits sync before and after COMMIT).
                with conn.pipeline(), psycopg.Transaction(conn):
                    if not durable:
                        conn.execute("SET LOCAL synchronous_commit = off")
                    yield conn
            except BaseException:
                # A statement that failed in the pipeline leaves the transaction aborted, not ended.
                if conn.pgconn.transaction_status in (TransactionStatus.INTRANS, TransactionStatus.INERROR):
                    conn.rollback()
                raise
        except psycopg.Error as reported:
            failed = _failed_statement(reported)
            if (engine_error := _engine_error(failed)) is not None:
                raise engine_error from failed
            if failed is not reported:
                raise failed from None  # the statement's own error, as a transaction without a pipeline raises
            raise

    # -- reading back ----------------------------------------------------------------------

    def turns(self, conn: psycopg.Connection, ticket_id: str, count: int) -> tuple[Turn, ...]:
        return self._prefix(self._turns, repo.load_turns, conn, ticket_id, count)

    def tool_calls(self, conn: psycopg.Connection, ticket_id: str, count: int) -> tuple[ToolCall, ...]:
        return self._prefix(self._tools, repo.load_tool_calls, conn, ticket_id, count)

    def facts(self, conn: psycopg.Connection, ticket_id: str, count: int) -> tuple[Fact, ...]:
        return self._prefix(self._facts, repo.load_facts, conn, ticket_id, count)

    def _prefix(
        self,
        cache: dict[str, tuple[T, ...]],
        load: Callable[..., list[T]],
        conn: psycopg.Connection,
        ticket_id: str,
        count: int,
    ) -> tuple[T, ...]:
        """The first ``count`` rows of an append-only log, reading only what the cache lacks."""
        with self._lock:
            cached = cache.get(ticket_id, ())
        if len(cached) < count:
            cached = cached + tuple(load(conn, ticket_id, len(cached), count))
            with self._lock:
                cache[ticket_id] = cached
        return cached[:count]

    def remember_turn(self, ticket_id: str, turn: Turn) -> None:
        """Add a turn this process just stored, so the round that answers it need not read it back."""
        with self._lock:
            cached = self._turns.get(ticket_id, ())
            if turn.idx == len(cached):
                self._turns[ticket_id] = (*cached, turn)

    def forget_cached(self, ticket_id: str) -> None:
        with self._lock:
            self._turns.pop(ticket_id, None)
            self._tools.pop(ticket_id, None)
            self._facts.pop(ticket_id, None)

    def load(self, conn: psycopg.Connection, ticket_id: str, *, at: int | None = None) -> Loaded:
        """Rebuild the state after step ``at`` (default: the latest step)."""
        # Steps from the checkpointed step's own row on: it gives the counters; its update is in the checkpoint.
        row, base, records = repo.read_state_rows(conn, ticket_id, at)
        last = records[-1] if records else None
        if at is not None and (last.seq if last else 0) != at:
            raise self._missing(conn, ticket_id, at)
        # Stored values may refer to tool results (see codec), so the tool log comes first.
        tool_log = self.tool_calls(conn, ticket_id, last.tool_call_count if last else 0)
        if base is None:
            state = SupportState(ticket=row.ticket())
        else:
            state = decode_state(base[1], ticket=row.ticket(), tool_log=tool_log)
        for step in records:
            if base is None or step.seq > base[0]:
                if step.step == ROUND_START:
                    state = new_round(state)
                state = reduce(state, decode_fields(step.update, tools=tool_log))
        if last is None:
            return Loaded(state=state, seq=0, next_step=None, status=row.status)
        state = dataclasses.replace(
            state,
            turns=self.turns(conn, ticket_id, last.turn_count),
            tool_log=tool_log,
            facts=self.facts(conn, ticket_id, last.fact_count),
        )
        return Loaded(state=state, seq=last.seq, next_step=last.next_step, status=row.status)

    @staticmethod
    def _missing(conn: psycopg.Connection, ticket_id: str, at: int) -> UnknownStep:
        mark = repo.pruned_before(conn, ticket_id)
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
