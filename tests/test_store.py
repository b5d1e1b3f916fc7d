"""The store's one-round-trip transactions: what fails inside one leaves nothing, and the
connection goes on working (it returns to the pool afterwards). An effect is never applied twice,
and a worker that lost its lease writes nothing."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import psycopg
import pytest
from support.fakes import scalar

from supportbot.errors import LeaseLost, ReplayMismatch, UnknownTicket
from supportbot.run._deps import Effects
from supportbot.store import _history as steps_repo
from supportbot.store import _lease as lease_repo
from supportbot.store import _queue as work_queue
from supportbot.store import _tickets as repo
from supportbot.store._rows import StepRow, StepWrite
from supportbot.store._store import Store, _failed_statement

_INSERT = (
    "INSERT INTO supportbot.tickets (id, customer_email, subject, body, created_at)"
    " VALUES (%s, 'a@example.com', 's', 'b', now())"
)


def _has(conn: psycopg.Connection, ticket_id: str) -> bool:
    count: int = scalar(conn, "SELECT count(*) FROM supportbot.tickets WHERE id = %s", (ticket_id,))
    return count == 1


def test_a_statement_psycopg_reports_as_the_pipeline_abort_is_raised_as_itself() -> None:
    """Whether a pipeline reports a failed statement, or the abort of those after it (with the
    failure as its context), depends on when the result was read; callers must see the failure."""
    try:
        try:
            raise psycopg.errors.UniqueViolation("duplicate key value violates unique constraint")
        finally:
            raise psycopg.errors.PipelineAborted("pipeline aborted")
    except psycopg.Error as reported:
        assert isinstance(reported, psycopg.errors.PipelineAborted)
        assert isinstance(_failed_statement(reported), psycopg.errors.UniqueViolation)
    plain = psycopg.errors.UndefinedTable("no such table")
    assert _failed_statement(plain) is plain


@pytest.mark.parametrize("durable", [True, False])
def test_a_failed_statement_is_raised_as_itself_every_time(database_url: str, durable: bool) -> None:
    store = Store(database_url)
    try:
        with store.connection() as conn:
            for _ in range(40):  # the result is read at one of two moments, by timing
                with pytest.raises(psycopg.errors.UndefinedTable):
                    with store.transaction(conn, durable=durable) as tx:
                        tx.execute(_INSERT, ("TXP",))
                        tx.execute("SELECT * FROM supportbot.no_such_table")
            assert not _has(conn, "TXP")
    finally:
        store.close()


@pytest.mark.parametrize("durable", [True, False])
def test_a_failed_transaction_leaves_nothing_and_the_connection_usable(
    database_url: str, durable: bool
) -> None:
    store = Store(database_url)
    try:
        with store.connection() as conn:
            with pytest.raises(psycopg.errors.UndefinedTable):  # the server refuses a statement
                with store.transaction(conn, durable=durable) as tx:
                    tx.execute(_INSERT, ("TX1",))
                    tx.execute("SELECT * FROM supportbot.no_such_table")
            with pytest.raises(RuntimeError):  # the caller fails between statements
                with store.transaction(conn, durable=durable) as tx:
                    tx.execute(_INSERT, ("TX2",))
                    raise RuntimeError("a step failed")
            with store.transaction(conn, durable=durable) as tx:
                tx.execute(_INSERT, ("TX3",))
            assert (_has(conn, "TX1"), _has(conn, "TX2"), _has(conn, "TX3")) == (False, False, True)
    finally:
        store.close()


def test_an_effect_run_again_under_its_key_is_refused_and_rolled_back(database_url: str) -> None:
    """Effects are not looked up before acting (a committed effect comes with its step's record,
    so the engine never re-runs it); the key's primary key is what still stops a second one. The
    effect's record is written by the statement that records the steps of its transaction."""
    store = Store(database_url)
    try:
        with store.connection() as conn:
            with store.transaction(conn) as tx:
                tx.execute(_INSERT, ("TXE",))
                tx.execute("UPDATE supportbot.tickets SET lease_owner = 'W' WHERE id = 'TXE'")
            for attempt, business_row in enumerate(["TXE-1", "TXE-2"]):

                def act(key: str, tx: psycopg.Connection, row: str = business_row) -> dict[str, str]:
                    tx.execute(_INSERT, (row,))  # the business system's write, in the step's transaction
                    return {"key": key}

                if attempt == 0:
                    with store.transaction(conn) as tx:
                        effects = Effects(tx, "TXE", 1, "finalize")
                        assert effects.run("finish_ticket", act) == {"key": "TXE:1:finalize:finish_ticket"}
                        assert effects.ran
                        steps_repo.record_steps(tx, "TXE", "W", [], effects=effects.records)
                else:
                    with pytest.raises(ReplayMismatch, match="already recorded"):
                        with store.transaction(conn) as tx:
                            effects = Effects(tx, "TXE", 1, "finalize")
                            effects.run("finish_ticket", act)
                            steps_repo.record_steps(tx, "TXE", "W", [], effects=effects.records)
            assert (_has(conn, "TXE-1"), _has(conn, "TXE-2")) == (True, False)
            assert conn.execute(
                "SELECT key, round, step, kind, result FROM supportbot.effects WHERE ticket_id = 'TXE'"
            ).fetchall() == [
                (
                    "TXE:1:finalize:finish_ticket",
                    1,
                    "finalize",
                    "finish_ticket",
                    {"key": "TXE:1:finalize:finish_ticket"},
                )
            ]
    finally:
        store.close()


def test_records_of_a_worker_that_lost_the_lease_are_refused_and_the_lease_is_not_freed(
    database_url: str,
) -> None:
    store = Store(database_url)
    row = StepRow(
        seq=1,
        round=1,
        step="start_round",
        next_step="load_customer",
        turn_count=0,
        tool_call_count=0,
        update={},
    )
    write = StepWrite(row=row, created_at=datetime.now(UTC))
    try:
        with store.connection() as conn:
            with store.transaction(conn) as tx:
                tx.execute(_INSERT, ("TXL",))
                tx.execute(
                    "UPDATE supportbot.tickets SET lease_owner = 'B',"
                    " lease_expires = now() + interval '1 minute' WHERE id = 'TXL'"
                )  # B took the ticket over from A
            with pytest.raises(LeaseLost, match="no longer leased to A"):
                with store.transaction(conn) as tx:
                    steps_repo.record_steps(tx, "TXL", "A", [write], release=True)
            assert conn.execute(
                "SELECT lease_owner, last_seq FROM supportbot.tickets WHERE id = 'TXL'"
            ).fetchone() == ("B", 0)
            assert scalar(conn, "SELECT count(*) FROM supportbot.steps") == 0
            with store.transaction(conn) as tx:  # the owner's own records go in, and free the ticket
                cur = steps_repo.record_steps(tx, "TXL", "B", [write], release=True)
            assert lease_repo.released(cur) == 0
            assert conn.execute(
                "SELECT lease_owner, last_seq FROM supportbot.tickets WHERE id = 'TXL'"
            ).fetchone() == (None, 1)
    finally:
        store.close()


def _round_trips(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Record every wait for the server (one per round trip) on any connection."""
    waits: list[str] = []
    real = psycopg.Connection.wait

    def wait(self: psycopg.Connection, gen, *args, **kwargs):  # type: ignore[no-untyped-def]
        waits.append(getattr(gen, "__qualname__", "?"))
        return real(self, gen, *args, **kwargs)

    monkeypatch.setattr(psycopg.Connection, "wait", wait)
    return waits


@pytest.mark.parametrize("prepared", [True, False])  # False: as behind a pooler, limits per transaction
@pytest.mark.parametrize("durable", [True, False])
def test_a_transaction_opened_by_a_statement_sends_it_with_the_begin(
    database_url: str, monkeypatch: pytest.MonkeyPatch, durable: bool, prepared: bool
) -> None:
    store = Store(database_url, prepared_statements=prepared)
    ticket = "TXO'; DROP TABLE supportbot.tickets; --"  # quoted, never run
    try:
        with store.transaction() as tx:
            tx.execute(_INSERT, (ticket,))
        waits = _round_trips(monkeypatch)
        with store.transaction_with(repo.lock_turn_count_statement(ticket), durable=durable) as (tx, cur):
            assert cur is not None and repo.locked_turn_count(cur, ticket) == 0
            opened = len(waits)
            with psycopg.connect(database_url, autocommit=True) as other:  # the row is locked
                with pytest.raises(psycopg.errors.LockNotAvailable):
                    other.execute(
                        "SELECT 1 FROM supportbot.tickets WHERE id = %s FOR UPDATE NOWAIT", (ticket,)
                    )
            tx.execute("UPDATE supportbot.tickets SET turn_count = 7 WHERE id = %s", (ticket,))
            settings = tx.execute(
                "SELECT current_setting('synchronous_commit'), current_setting('lock_timeout')"
            ).fetchone()
        assert opened == 1  # BEGIN, the transaction's settings and the lock: one round trip
        assert settings == ("on" if durable else "off", "10s")  # the limits hold either way
        with store.connection() as conn:
            assert conn.execute(
                "SELECT turn_count FROM supportbot.tickets WHERE id = %s", (ticket,)
            ).fetchone() == (7,)
            assert conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE
    finally:
        store.close()


def test_a_transaction_opened_by_a_statement_rolls_back_on_any_error_and_speaks_the_engines_errors(
    database_url: str,
) -> None:
    store = Store(database_url)
    try:
        with store.transaction() as tx:
            tx.execute(_INSERT, ("TXR",))
        with pytest.raises(RuntimeError):  # the caller fails
            with store.transaction_with(repo.lock_turn_count_statement("TXR")) as (tx, _):
                tx.execute("UPDATE supportbot.tickets SET turn_count = 5 WHERE id = 'TXR'")
                raise RuntimeError("a step failed")
        with pytest.raises(LeaseLost):  # the server refuses the records of a worker without the lease
            with store.transaction_with(repo.lock_turn_count_statement("TXR")) as (tx, _):
                tx.execute("UPDATE supportbot.tickets SET turn_count = 6 WHERE id = 'TXR'")
                steps_repo.record_steps(tx, "TXR", "nobody", [], release=True)
        with pytest.raises(UnknownTicket):
            with store.transaction_with(repo.lock_turn_count_statement("TX-none")) as (tx, cur):
                repo.locked_turn_count(cur, "TX-none")  # type: ignore[arg-type]
        with store.connection() as conn:  # nothing stayed, and the connection is as good as new
            assert conn.execute("SELECT turn_count FROM supportbot.tickets WHERE id = 'TXR'").fetchone() == (
                0,
            )
            assert conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE
            with store.transaction(conn) as tx:  # inside one already: the opening gets a savepoint
                tx.execute("UPDATE supportbot.tickets SET turn_count = 1 WHERE id = 'TXR'")
                with pytest.raises(RuntimeError):
                    with store.transaction_with(repo.lock_turn_count_statement("TXR")) as (inner, cur):
                        assert inner is tx and repo.locked_turn_count(cur, "TXR") == 1  # type: ignore[arg-type]
                        inner.execute("UPDATE supportbot.tickets SET turn_count = 9 WHERE id = 'TXR'")
                        raise RuntimeError("the inner part failed")
            assert conn.execute("SELECT turn_count FROM supportbot.tickets WHERE id = 'TXR'").fetchone() == (
                1,
            )
    finally:
        store.close()


def test_claims_lease_changes_and_heartbeats_are_one_round_trip_whose_commit_alone_skips_the_disk(
    database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = Store(database_url)
    changes: list[tuple[str, Callable[[psycopg.Connection], object]]] = [
        ("claim", lambda c: work_queue.claimed(work_queue.claim_cursor(c, "w:", 5, 30))),
        ("acquire", lambda c: lease_repo.acquired(lease_repo.queue_acquire_lease(c, "TXA", "w1", 30))),
        ("renew", lambda c: lease_repo.renew_lease(c, "TXA", "w1", 60)),
        ("release", lambda c: lease_repo.released(lease_repo.queue_release_lease(c, "TXA", "w1", known=0))),
        ("heartbeat", lambda c: work_queue.heartbeat(c, "w1", threads=4, rounds=2, failures=0, running=1)),
    ]
    try:
        with store.transaction() as tx:
            tx.execute(_INSERT, ("TXA",))
            tx.execute(_INSERT, ("TXC",))
            tx.execute("UPDATE supportbot.tickets SET work_due = now() WHERE id = 'TXC'")  # to claim
        waits = _round_trips(monkeypatch)
        answers: dict[str, Any] = {}
        for name, change in changes:
            waits.clear()
            with store.statement() as conn:
                answers[name] = change(conn)
                assert len(waits) == 1, name  # no BEGIN, SET LOCAL or COMMIT: a transaction by itself
                assert conn.execute("SHOW synchronous_commit").fetchone() == (
                    "on",
                )  # the session's mode stays
            if name == "renew":
                with store.connection() as conn:  # committed
                    assert conn.execute(
                        "SELECT lease_owner, lease_expires > now() + interval '50 seconds'"
                        " FROM supportbot.tickets WHERE id = 'TXA'"
                    ).fetchone() == ("w1", True)
        claims = answers["claim"]
        assert [c.ticket_id for c in claims] == ["TXC"] and claims[0].owner.startswith("w:TXC:")
        assert answers["acquire"] == (0, 0) and answers["release"] == 0
        with store.connection() as conn:
            assert conn.execute("SELECT lease_owner FROM supportbot.tickets WHERE id = 'TXC'").fetchone() == (
                claims[0].owner,
            )
            conn.execute(
                "UPDATE supportbot.tickets SET lease_owner = NULL, lease_expires = NULL WHERE id = 'TXC'"
            )
            assert conn.execute("SELECT lease_owner FROM supportbot.tickets WHERE id = 'TXA'").fetchone() == (
                None,
            )
            assert conn.execute("SELECT rounds FROM supportbot.workers WHERE id = 'w1'").fetchone() == (2,)
        for name, change in changes:  # what each statement sets holds for its own transaction only
            with store.transaction() as tx:
                assert tx.execute("SHOW synchronous_commit").fetchone() == ("on",)
                change(tx)
                assert tx.execute("SHOW synchronous_commit").fetchone() == ("off",), name
    finally:
        store.close()
