"""Waiting for the answer to a submitted message in an asyncio bot (``AsyncSupportBot.wait``): the
task twin of ``_waiting.Answers``, with the same rechecks."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from contextlib import suppress

from ..store._aio_listen import AsyncListener, AsyncWaiters
from ..store._channels import DONE_CHANNEL
from ._rounds import RoundResult
from ._waiting import RECHECK_LISTENING, RECHECK_POLLING, timed_out


class AsyncAnswers:
    """Waits for rounds to end: one shared listener task per bot, started by the first wait."""

    def __init__(self, url: str | None, connect_kwargs: dict[str, object]) -> None:
        self._url = url
        self._kwargs = connect_kwargs
        self._waiters = AsyncWaiters()
        self._listener: AsyncListener | None = None

    async def close(self) -> None:
        listener, self._listener = self._listener, None
        if listener is not None:
            await listener.stop()

    async def _listening(self) -> bool:
        if self._url is None:
            return False
        if self._listener is None:
            self._listener = AsyncListener(
                self._url,
                [DONE_CHANNEL],
                lambda _c, ticket: self._waiters.notify(ticket),
                connect_kwargs=dict(self._kwargs),
            ).start()
            with suppress(TimeoutError):
                await asyncio.wait_for(self._listener.connected.wait(), RECHECK_LISTENING)
        return self._listener.connected.is_set()

    async def wait(
        self, ticket_id: str, check: Callable[[], Awaitable[RoundResult | None]], timeout: float
    ) -> RoundResult:
        """Await ``check`` until it returns a result: after each notification about the ticket,
        and at least every second (every 0.1 s when polling)."""
        deadline = time.monotonic() + timeout
        listening = await self._listening()
        while True:
            event = self._waiters.register(ticket_id)  # before reading: news during the read still counts
            try:
                result = await check()
                if result is not None:
                    return result
                left = deadline - time.monotonic()
                if left <= 0:
                    raise timed_out(ticket_id, timeout, bot="AsyncSupportBot")
                with suppress(TimeoutError):
                    await asyncio.wait_for(
                        event.wait(), min(left, RECHECK_LISTENING if listening else RECHECK_POLLING)
                    )
            finally:
                self._waiters.unregister(ticket_id, event)
            if not listening:
                listening = await self._listening()
