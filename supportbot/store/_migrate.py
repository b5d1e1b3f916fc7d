# Generated from _migrate_async.py by scripts/async_to_sync.py: edit that file and run the script.
"""A tiny migrator: numbered SQL files applied in order, each with its version row; then the
stored functions, one repeatable file each, run again whenever their text changes.

The engine's migrations always apply. Those of the demo business system (file names
``NNN_demo*.sql``: its schema ``demo`` and its rules) apply only where the demo is wanted: when
asked (``demo=True``: ``SupportBot.open(backend="demo")``, ``python -m supportbot demo``,
``db migrate --demo``) or where a demo migration was applied before, so a database that has the
demo keeps it current. A host application's database never gets the demo tables.

Stored functions (``sql/functions/NAME.sql``, ``demo_*`` for the demo's) are not copied into a
new migration at every change: each file holds the function's one current definition
(``CREATE OR REPLACE``), and ``schema_functions`` remembers the SHA-256 of the text last applied.
After the numbered migrations, every file whose text differs from what was applied runs again,
in the same transaction and under the same lock. A numbered migration is still the place for what
``CREATE OR REPLACE`` cannot do (a new signature or result type, dropping a function).
"""

from __future__ import annotations

import psycopg

from ._migrations import LOCK_ID, Migration, MigrationState, available, functions


def applied(conn: psycopg.Connection) -> dict[int, str]:
    exists = (conn.execute("SELECT to_regclass('supportbot.schema_migrations') IS NOT NULL")).fetchone()
    if not exists or not exists[0]:
        return {}
    rows = (
        conn.execute("SELECT version, name FROM supportbot.schema_migrations ORDER BY version")
    ).fetchall()
    return {int(version): str(name) for version, name in rows}


def status(conn: psycopg.Connection) -> list[MigrationState]:
    """Every migration this version has, and whether ``conn``'s database applied it."""
    have = applied(conn)
    return [MigrationState(m, m.version in have) for m in available()]


def migrate(conn: psycopg.Connection, *, demo: bool = False) -> list[Migration]:
    """Apply every migration not yet applied (the demo's too with ``demo``, or once the database
    has any of them); return those applied now.

    Each file runs in the same transaction as its version row, under an advisory lock, so two
    processes starting at once apply each migration exactly once.
    """
    done: list[Migration] = []
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (LOCK_ID,))
        conn.execute("CREATE SCHEMA IF NOT EXISTS supportbot")
        conn.execute(
            "CREATE TABLE IF NOT EXISTS supportbot.schema_migrations ("
            " version integer PRIMARY KEY, name text NOT NULL,"
            " applied_at timestamptz NOT NULL DEFAULT now())"
        )
        have = applied(conn)
        migrations = available()
        demo = demo or any(m.demo and m.version in have for m in migrations)
        for migration in migrations:
            if migration.version in have or (migration.demo and not demo):
                continue
            with conn.transaction():
                conn.execute(migration.path.read_text(encoding="utf-8"))
                conn.execute(
                    "INSERT INTO supportbot.schema_migrations (version, name) VALUES (%s, %s)",
                    (migration.version, migration.name),
                )
            done.append(migration)
        # A migration applied now may have replaced a function with its own (older) copy.
        _apply_functions(conn, demo=demo, every=bool(done))
    return done


def _apply_functions(conn: psycopg.Connection, *, demo: bool, every: bool) -> None:
    """Run every stored-function file whose text changed since it was last applied, or all of them
    (``every``: after migrations ran, whose own copies of a function are its history)."""
    conn.execute(
        "CREATE TABLE IF NOT EXISTS supportbot.schema_functions ("
        " name text PRIMARY KEY, checksum text NOT NULL,"
        " applied_at timestamptz NOT NULL DEFAULT now())"
    )
    rows = (conn.execute("SELECT name, checksum FROM supportbot.schema_functions")).fetchall()
    have = {str(name): str(checksum) for name, checksum in rows}
    for function in functions():
        checksum = function.checksum()
        if (function.demo and not demo) or (not every and have.get(function.name) == checksum):
            continue
        with conn.transaction():
            conn.execute(function.text())
            conn.execute(
                "INSERT INTO supportbot.schema_functions (name, checksum) VALUES (%s, %s)"
                " ON CONFLICT (name) DO UPDATE SET checksum = excluded.checksum, applied_at = now()",
                (function.name, checksum),
            )


class MigrationStatements:
    """The schema's migrations (``store.migrations``), for ``db migrate`` and ``db status``: the
    statements code outside the store runs, each on the connection it passes."""

    migrate = staticmethod(migrate)
    status = staticmethod(status)
