"""One behaviour suite, two front ends: ``AsyncView`` lets a synchronous test drive an
AsyncSupportBot, so the suites written for SupportBot run against both (conftest's ``open_bot``,
parametrised by ``front``).

The async bot runs on an event loop of its own, in a thread; each coroutine method is run there
and waited for, and its result or error comes back unchanged. Threads of a test that call the bot
at once become tasks on that one loop, which is how an asyncio service would call it.
"""

from __future__ import annotations

import asyncio
import inspect
import threading
from collections.abc import Callable, Coroutine, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

from support.fakes import AsyncModel
from support.parts import async_bot_over_store, bot_over_store
from supportbot import AsyncSupportBot, Settings, SupportBot

T = TypeVar("T")

# The test modules whose behaviour tests run against both bots in this process; a test that needs
# the synchronous bot itself (its threads, a host's synchronous backend, private seams) says so
# with @pytest.mark.sync_only. The crash suite (test_processes.py) runs its processes on either
# front end (tests/worker.py, SUPPORTBOT_TEST_FRONT); the task worker has its own tests
# (test_async_bot.py), the thread worker's suite is the thread worker's.
BOTH = frozenset(
    {
        "test_engine",
        "test_approval_actions",
        "test_takeover",
        "test_audit",
        "test_pipeline",
        "test_compression_e2e",
        "test_money",
        "test_model_failures",
        "test_dead_holders",
        "test_input_hygiene",
        "test_ticket_language",
        "test_prompt_leak",
        "test_placeholders",
        "test_lifecycle",
        "test_fuzz_api",
    }
)


class Loop:
    """An event loop running in a daemon thread until ``close()``."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name="test-event-loop", daemon=True)
        self._thread.start()

    def run(self, coroutine: Coroutine[Any, Any, T]) -> T:
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result()

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(timeout=10)
        self.loop.close()


class AsyncView:
    """An AsyncSupportBot with SupportBot's synchronous calls."""

    def __init__(self, bot: AsyncSupportBot, loop: Loop) -> None:
        self.bot, self._loop = bot, loop

    def __getattr__(self, name: str) -> Any:
        attribute = getattr(self.bot, name)
        if not inspect.iscoroutinefunction(attribute):
            return attribute

        def call(*args: Any, **kwargs: Any) -> Any:
            return self._loop.run(attribute(*args, **kwargs))

        return call


def async_model(llm: object) -> object:
    """A test's model for the async bot: its own if it is asynchronous already, else awaited."""
    chat: Callable[..., object] | None = getattr(llm, "chat", None)
    return llm if inspect.iscoroutinefunction(chat) else AsyncModel(llm)


@contextmanager
def opened(front: str, url: str, *, llm: object, settings: Settings) -> Iterator[SupportBot]:
    """A demo-backed bot of the ``front`` asked for, closed after the block (fixtures of the
    behaviour suites that open their own bot)."""
    with opened_parts(front, url, llm=llm, settings=settings) as (bot, _):
        yield bot


@contextmanager
def opened_parts(
    front: str, url: str, *, llm: object, settings: Settings
) -> Iterator[tuple[SupportBot, Any]]:
    """``opened``, with the dependencies the bot was built over (``Deps``, sync or async), for a
    test that checks what the process keeps (its caches) without reaching into the bot."""
    if front == "sync":
        with bot_over_store(url, llm=llm, settings=settings) as (bot, _, deps):
            yield bot, deps
        return
    loop = Loop()
    try:
        parts = async_bot_over_store(url, llm=async_model(llm), settings=settings)
        async_bot, _, async_deps = loop.run(parts.__aenter__())
        try:
            yield AsyncView(async_bot, loop), async_deps  # type: ignore[misc]
        finally:
            loop.run(parts.__aexit__(None, None, None))
    finally:
        loop.close()


def open_view(loop: Loop, url: str, *, llm: object, settings: Settings) -> AsyncView:
    """An AsyncSupportBot on the demo business system, opened on ``loop``, seen through AsyncView."""

    async def opening() -> AsyncSupportBot:
        return await AsyncSupportBot.open(url, llm=async_model(llm), settings=settings, backend="demo")  # type: ignore[arg-type]

    return AsyncView(loop.run(opening()), loop)
