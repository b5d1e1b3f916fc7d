# Generated from _open_async.py by scripts/async_to_sync.py: edit that file and run the script.
"""How a bot is opened: its store, business system and models (``store_and_deps``), written once
for both bots. The schema-only calls (``migrate``) and the choice of database are in ``_opening``."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from datetime import datetime
from typing import Literal

from ..backend.base import Backend
from ..config import Settings
from ..errors import ConfigError
from ..llm._factory import models_from_settings
from ..llm.base import LLM
from ..memory._tokens import count_tokens
from ..run._deps import Deps
from ..run._profiles import Profiles
from ..store._store import Store
from ._opening import resolve_database_url


def store_and_deps(
    database_url: str | None,
    *,
    llm: LLM | None,
    small_llm: LLM | None,
    backend: Backend | str | None,
    settings: Settings,
    clock: Callable[[], datetime],
) -> tuple[Store, Deps]:
    """The store (connected and migrated) and the dependencies a bot runs on."""
    chosen = _choose_backend(backend, settings)
    # The tokenizer parses its ~100k ranks once per process (about a quarter of a second): here,
    # before anything is opened, so a broken tokenizer setting fails open() and the first round
    # does not hold its event loop (every other ticket's round and request) while it loads.
    count_tokens("")
    store = Store(
        resolve_database_url(database_url, settings),
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
        from ..backend.demo import DemoBackend  # loaded only when asked for: the core never needs it

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
