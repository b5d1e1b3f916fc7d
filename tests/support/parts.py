"""A bot over a store and dependencies the test built and keeps.

``SupportBot(store, deps)`` is how ``open()`` makes a bot; a test that must read the pool, run a
statement in the store's transaction, swap the business system or count what the process keeps in
memory builds the parts here and holds them, instead of reaching into the bot afterwards.
"""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from datetime import UTC, datetime
from typing import Any, NamedTuple

from supportbot import AsyncSupportBot, Settings, SupportBot
from supportbot._front._open import store_and_deps
from supportbot._front._open_async import store_and_deps as async_store_and_deps
from supportbot.run._deps import Deps
from supportbot.run._deps_async import Deps as AsyncDeps
from supportbot.run._engine import Engine
from supportbot.store._store import Store
from supportbot.store._store_async import AsyncStore


class Parts(NamedTuple):
    bot: SupportBot
    store: Store
    deps: Deps

    def engine(self) -> Engine:
        """Another engine over the same store and dependencies (a second worker's)."""
        return Engine(self.store, self.deps)


class AsyncParts(NamedTuple):
    bot: AsyncSupportBot
    store: AsyncStore
    deps: AsyncDeps


def _utcnow() -> datetime:
    return datetime.now(UTC)


@contextmanager
def bot_over_store(
    database_url: str,
    *,
    llm: Any = None,
    small_llm: Any = None,
    settings: Settings | None = None,
    backend: Any = "demo",
    business: Callable[[Any], Any] | None = None,
) -> Iterator[Parts]:
    """A SupportBot over its parts, closed at the block's end. ``business(pool)`` replaces the
    business system with one over the store's pool (a backend that fails on purpose)."""
    store, deps = store_and_deps(
        database_url,
        llm=llm,
        small_llm=small_llm,
        backend=backend,
        settings=settings or Settings.from_env(),
        clock=_utcnow,
    )
    if business is not None:
        deps = dataclasses.replace(deps, backend=business(store.pool))
    with SupportBot(store, deps) as bot:
        yield Parts(bot, store, deps)


@asynccontextmanager
async def async_bot_over_store(
    database_url: str,
    *,
    llm: Any = None,
    settings: Settings | None = None,
    business: Callable[[Any], Any] | None = None,
) -> AsyncIterator[AsyncParts]:
    """``bot_over_store`` for AsyncSupportBot."""
    store, deps = await async_store_and_deps(
        database_url,
        llm=llm,
        small_llm=None,
        backend="demo",
        settings=settings or Settings.from_env(),
        clock=_utcnow,
    )
    if business is not None:
        deps = dataclasses.replace(deps, backend=business(store.pool))
    async with AsyncSupportBot(store, deps) as bot:
        yield AsyncParts(bot, store, deps)
