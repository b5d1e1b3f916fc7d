"""Which database a bot opens, and the migrations.

What a bot opens with it (business system, models) is ``_open.store_and_deps``, written once for
both bots in ``_open_async.py``. :func:`migrate` and :func:`migration_status` touch only the
schema: they need no business system and open no pool, so a deployment can migrate once before
its workers start.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from ..config import Settings
from ..store._connect import connected
from ..store._handles import Tx
from ..store._migrations import Migration, MigrationState
from ..store._store import Store

T = TypeVar("T")


def migrate(
    database_url: str | None = None, *, demo: bool = False, settings: Settings | None = None
) -> list[Migration]:
    """Apply the migrations the database lacks; returns those applied now (none when up to date).

    ``demo``: also create the demo business system's tables (a database that has them keeps them
    current either way).

    ``SupportBot.open()`` migrates too. Call this where a deployment migrates once, before its
    workers start, or to migrate without a business system at hand. The URL is resolved as in
    ``open()``: the argument, else ``SUPPORTBOT_DATABASE_URL``, else the embedded PostgreSQL.
    """
    return _with_connection(database_url, settings, lambda conn: Store.migrations.migrate(conn, demo=demo))


def migration_status(
    database_url: str | None = None, *, settings: Settings | None = None
) -> list[MigrationState]:
    """Every migration this version has, and whether the database applied it; changes nothing."""
    return _with_connection(database_url, settings, Store.migrations.status)


def _with_connection(database_url: str | None, settings: Settings | None, use: Callable[[Tx], T]) -> T:
    url = resolve_database_url(database_url, settings or Settings.from_env())
    failed = "migrating the database failed; nothing of that migration was applied"
    with connected(url, failed=failed, reason="migrate") as conn:
        return use(conn)


def resolve_database_url(database_url: str | None, settings: Settings) -> str:
    """The database a bot or command acts on: the URL given, else ``SUPPORTBOT_DATABASE_URL``, else
    the embedded PostgreSQL's (starting it)."""
    url = database_url or settings.database_url
    if url is None:
        from ..store._embedded import embedded_url

        url = embedded_url(settings.data_dir)
    return url
