"""The store's one-round-trip transactions: what fails inside one leaves nothing, and the
connection goes on working (it returns to the pool afterwards). An effect is never applied twice,
and a worker that lost its lease writes nothing."""

from __future__ import annotations

from datetime import UTC, datetime

import psycopg
import pytest

from supportbot.deps import Effects
from supportbot.errors import LeaseLost, ReplayMismatch
from supportbot.store import lease_repo, steps_repo
from supportbot.store.store import Store, _failed_statement

_INSERT = (
    "INSERT INTO supportbot.tickets (id, customer_email, subject, body, created_at)"
    " VALUES (%s, 'a@example.com', 's', 'b', now())"
)


def _has(conn: psycopg.Connection, ticket_id: str) -> bool:
    return (
        conn.execute("SELECT count(*) FROM supportbot.tickets WHERE id = %s", (ticket_id,)).fetchone()[0] == 1
    )  # type: ignore[index]


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
    row = steps_repo.StepRow(
        seq=1,
        round=1,
        step="start_round",
        next_step="load_customer",
        turn_count=0,
        tool_call_count=0,
        update={},
    )
    write = steps_repo.StepWrite(row=row, created_at=datetime.now(UTC))
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
            assert conn.execute("SELECT count(*) FROM supportbot.steps").fetchone()[0] == 0  # type: ignore[index]
            with store.transaction(conn) as tx:  # the owner's own records go in, and free the ticket
                cur = steps_repo.record_steps(tx, "TXL", "B", [write], release=True)
            assert lease_repo.released(cur) == 0
            assert conn.execute(
                "SELECT lease_owner, last_seq FROM supportbot.tickets WHERE id = 'TXL'"
            ).fetchone() == (None, 1)
    finally:
        store.close()
