"""The store's one-round-trip transactions: what fails inside one leaves nothing, and the
connection goes on working (it returns to the pool afterwards)."""

from __future__ import annotations

import psycopg
import pytest

from supportbot.store.store import Store

_INSERT = ("INSERT INTO supportbot.tickets (id, customer_email, subject, body, created_at)"
           " VALUES (%s, 'a@example.com', 's', 'b', now())")


def _has(conn: psycopg.Connection, ticket_id: str) -> bool:
    return conn.execute("SELECT count(*) FROM supportbot.tickets WHERE id = %s", (ticket_id,)).fetchone()[0] == 1  # type: ignore[index]


@pytest.mark.parametrize("durable", [True, False])
def test_a_failed_transaction_leaves_nothing_and_the_connection_usable(database_url: str, durable: bool) -> None:
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
