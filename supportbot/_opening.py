"""How a bot is opened: which database, which business system, which models; and the migrations.

:meth:`SupportBot.open <supportbot.SupportBot.open>` is a thin entry point over
:func:`store_and_deps`. :func:`migrate` and :func:`migration_status` touch only the schema: they
need no business system and open no pool, so a deployment can migrate once before its workers start.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from datetime import datetime
from typing import Literal, TypeVar

import psycopg

from .backend.base import Backend
from .config import Settings
from .errors import ConfigError, StoreError
from .llm._factory import models_from_settings
from .llm.base import LLM
from .run._deps import Deps
from .run._profiles import Profiles
from .store._migrate import Migration
from .store._migrate import migrate as apply_migrations
from .store._migrate import status as migrations_applied
from .store._store import Store

T = TypeVar("T")


def store_and_deps(
    database_url: str | None,
    *,
    llm: LLM | None,
    small_llm: LLM | None,
    backend: Backend | str | None,
    settings: Settings,
    clock: Callable[[], datetime],
) -> tuple[Store, Deps]:
    """The store (connected, and migrated by connecting) and the dependencies a SupportBot runs on."""
    chosen = _choose_backend(backend, settings)
    store = Store(
        _database_url(database_url, settings),
        max_size=settings.pool_max_size,
        pool_timeout=settings.pool_timeout,
        db_timeout=settings.db_timeout,
        prepared_statements=settings.prepared_statements,
        demo=chosen == "demo",
    )
    if llm is None:
        llm, default_small = models_from_settings(settings)
        small_llm = small_llm or default_small
    # The demo business system lives in the bot's database: it needs the store's pool.
    if chosen == "demo":
        from .backend.demo import DemoBackend  # loaded only when asked for: the core never needs it

        business: Backend = DemoBackend(store.pool, clock=clock)
    else:
        business = chosen
    profiles = Profiles(store, business, clock=clock, mask=settings.mask_pii)
    deps = Deps(
        llm=llm,
        small_llm=small_llm or llm,
        backend=business,
        settings=settings,
        clock=clock,
        profiles=profiles,
    )
    return store, deps


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
    return _with_connection(database_url, settings, lambda conn: apply_migrations(conn, demo=demo))


def migration_status(
    database_url: str | None = None, *, settings: Settings | None = None
) -> list[tuple[Migration, bool]]:
    """Every migration this version has, and whether the database applied it; changes nothing."""
    return _with_connection(database_url, settings, migrations_applied)


def _with_connection(
    database_url: str | None, settings: Settings | None, use: Callable[[psycopg.Connection], T]
) -> T:
    url = _database_url(database_url, settings or Settings.from_env())
    try:
        with psycopg.connect(url) as conn:
            return use(conn)
    except psycopg.OperationalError as exc:
        raise StoreError(
            f"cannot connect to PostgreSQL: {exc}. Check SUPPORTBOT_DATABASE_URL", reason="connect"
        ) from exc
    except psycopg.Error as exc:
        raise StoreError(
            f"migrating the database failed: {exc}; nothing of that migration was applied", reason="migrate"
        ) from exc


def _choose_backend(given: Backend | str | None, settings: Settings) -> Backend | Literal["demo"]:
    """The business system open() was given, else the one SUPPORTBOT_BACKEND names."""
    chosen = given if given is not None else settings.backend
    if chosen is None:
        raise ConfigError(
            "SupportBot.open() needs a business system: backend=<your supportbot.Backend>, "
            "backend='demo' for the demo business system, or SUPPORTBOT_BACKEND=demo|package.module:factory",
            reason="backend_missing",
            setting="SUPPORTBOT_BACKEND",
        )
    if not isinstance(chosen, str):
        return chosen
    if chosen == "demo":
        return "demo"
    module_name, _, attribute = chosen.partition(":")
    try:
        factory = getattr(importlib.import_module(module_name), attribute)
        made = factory(settings)
    except Exception as exc:
        raise ConfigError(
            f"backend {chosen!r} could not be made ({type(exc).__name__}); it must name "
            "package.module:factory where factory(settings) returns a supportbot.Backend",
            reason="backend",
            setting="SUPPORTBOT_BACKEND",
            value=chosen,
        ) from exc
    if not isinstance(made, Backend):
        raise ConfigError(
            f"backend {chosen!r} returned {type(made).__name__}, not a supportbot.Backend",
            reason="backend",
            setting="SUPPORTBOT_BACKEND",
            value=chosen,
        )
    return made


def _database_url(database_url: str | None, settings: Settings) -> str:
    """The URL given, else ``SUPPORTBOT_DATABASE_URL``, else the embedded PostgreSQL's (starting it)."""
    url = database_url or settings.database_url
    if url is None:
        from .store._embedded import embedded_url

        url = embedded_url(settings.data_dir)
    return url


def resolve_database_url(database_url: str | None, settings: Settings) -> str:
    """The database a command acts on: the URL given, else ``SUPPORTBOT_DATABASE_URL``, else the
    embedded PostgreSQL's (starting it)."""
    return _database_url(database_url, settings)
