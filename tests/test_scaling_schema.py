"""The schema stays ready to be distributed by ticket (docs/scaling.md), read from the catalog.

A distributed PostgreSQL (Citus) places rows by a distribution column; with ``ticket_id`` in every
per-ticket primary key, all of a ticket's rows live on one node, and a foreign key that stays
inside one ticket never has to cross nodes. These tests fail when a migration breaks either rule.
"""

from __future__ import annotations

import psycopg

# Tables of schema supportbot that are not per-ticket, and why they need no ticket_id.
NOT_PER_TICKET = {
    "customer_profiles": "keyed by customer: distributed by customer_id, never joined by ticket",
    "schema_migrations": "the migrator's bookkeeping: a reference table, the same on every node",
    "schema_functions": "the migrator's checksums of the stored functions: a reference table, like"
    " schema_migrations",
    "workers": "one heartbeat row per worker process: a reference table, not per ticket",
    "console_sessions": "operators' console sign-ins, keyed by the hash of the session id: a table of"
    " the coordinator, like workers, never joined by ticket",
    "audit": "the append-only audit log outlives the tickets it names (no foreign key), keyed by its"
    " own id: a table of the coordinator, written in the same transaction only where that node holds"
    " the ticket",
    "profile_corrections": "operators' corrections of a customer's profile: keyed by customer, like"
    " customer_profiles, and distributed with it",
    "console_saved_replies": "the console's saved replies per team: no customer data, a reference table",
    "api_keys": "the HTTP API's keys per integration (digests, never secrets): configuration, a"
    " reference table like schema_migrations, read by every node that serves the API",
}
# Foreign keys allowed to reach beyond one ticket: none so far. (name: why)
CROSSING_KEYS: dict[str, str] = {}


def _tables(conn: psycopg.Connection) -> dict[str, set[str]]:
    """{table: its columns} for every table of schema supportbot."""
    found: dict[str, set[str]] = {}
    for table, column in conn.execute(
        "SELECT c.relname, a.attname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
        " JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped"
        " WHERE n.nspname = 'supportbot' AND c.relkind IN ('r', 'p')"
    ).fetchall():
        found.setdefault(table, set()).add(column)
    return found


def _ticket_column(table: str) -> str:
    return "id" if table == "tickets" else "ticket_id"


def _constraints(
    conn: psycopg.Connection, kind: str
) -> list[tuple[str, str, list[str], str | None, list[str]]]:
    """(name, table, columns, referenced table, referenced columns) of constraints of ``kind``."""
    return [
        (name, table, list(cols), ref, list(ref_cols or []))
        for name, table, cols, ref, ref_cols in conn.execute(
            "SELECT k.conname, c.relname,"
            " ARRAY(SELECT a.attname FROM unnest(k.conkey) WITH ORDINALITY u(n, i)"
            "  JOIN pg_attribute a ON a.attrelid = k.conrelid AND a.attnum = u.n ORDER BY u.i),"
            " f.relname,"
            " ARRAY(SELECT a.attname FROM unnest(k.confkey) WITH ORDINALITY u(n, i)"
            "  JOIN pg_attribute a ON a.attrelid = k.confrelid AND a.attnum = u.n ORDER BY u.i)"
            " FROM pg_constraint k JOIN pg_class c ON c.oid = k.conrelid"
            " JOIN pg_namespace n ON n.oid = c.relnamespace LEFT JOIN pg_class f ON f.oid = k.confrelid"
            " WHERE n.nspname = 'supportbot' AND k.contype = %s ORDER BY 1",
            (kind,),
        ).fetchall()
    ]


def test_every_table_is_per_ticket_or_listed_with_a_reason(database_url: str) -> None:
    with psycopg.connect(database_url) as conn:
        tables = _tables(conn)
    per_ticket = {t for t, cols in tables.items() if _ticket_column(t) in cols and t not in NOT_PER_TICKET}
    assert set(tables) == per_ticket | set(NOT_PER_TICKET), (
        "a table of schema supportbot has no ticket_id: give it one, or list it in NOT_PER_TICKET with why"
    )
    assert {"tickets", "turns", "steps", "checkpoints", "effects", "approvals"} <= per_ticket


def test_every_per_ticket_primary_key_holds_the_ticket(database_url: str) -> None:
    with psycopg.connect(database_url) as conn:
        keys = {table: cols for _, table, cols, _, _ in _constraints(conn, "p")}
        tables = _tables(conn)
    missing = {
        table: keys.get(table)
        for table in tables
        if table not in NOT_PER_TICKET and _ticket_column(table) not in (keys.get(table) or [])
    }
    assert missing == {}, "these per-ticket tables' primary keys lack ticket_id (Citus needs it there)"


def test_no_foreign_key_crosses_tickets(database_url: str) -> None:
    """A per-ticket key refers to the same ticket's rows: ticket_id maps onto the target's ticket
    column; nothing outside a ticket refers into one."""
    with psycopg.connect(database_url) as conn:
        keys = _constraints(conn, "f")
    crossing = []
    for name, table, cols, target, target_cols in keys:
        if name in CROSSING_KEYS:
            continue
        assert target is not None
        inside = (
            table not in NOT_PER_TICKET
            and target not in NOT_PER_TICKET
            and _ticket_column(table) in cols
            and target_cols[cols.index(_ticket_column(table))] == _ticket_column(target)
        )
        if not inside:
            crossing.append(name)
    assert keys, "the catalog query found no foreign keys at all"
    assert crossing == [], "these foreign keys cross tickets: keep ticket_id on both sides"
