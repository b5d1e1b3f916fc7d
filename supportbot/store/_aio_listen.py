"""LISTEN for an asyncio bot: the task twin of ``_listen.Listener`` and ``_listen.Waiters``.

Written by hand, not generated: a thread that blocks on ``notifies(timeout=…)`` and a task that
awaits them differ in how they wait and stop, not in what they do. The same rule holds: a
notification is a hint; whoever wakes reads the database, and reads it on a timer anyway.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable
from contextlib import suppress
from typing import Any

import psycopg
from psycopg import sql

log = logging.getLogger(__name__)


class AsyncListener:
    """A task that LISTENs on ``channels`` and calls ``on_notify(channel, payload)``; reconnects by
    itself after the connection breaks (with a growing pause, at most 5 s). ``connected`` is set
    while it listens."""

    def __init__(
        self,
        url: str,
        channels: Iterable[str],
        on_notify: Callable[[str, str], None],
        *,
        connect_kwargs: dict[str, Any] | None = None,
    ) -> None:
        self._url = url
        self._channels = tuple(channels)
        self._on_notify = on_notify
        self._kwargs = {"connect_timeout": 5, **(connect_kwargs or {}), "autocommit": True}
        self.connected = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    def start(self) -> AsyncListener:
        self._task = asyncio.get_running_loop().create_task(self._loop(), name="supportbot-listen")
        return self

    async def stop(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with suppress(asyncio.CancelledError):
                await task

    async def _loop(self) -> None:
        pause = 0.1
        while True:
            try:
                async with await psycopg.AsyncConnection.connect(self._url, **self._kwargs) as conn:
                    for channel in self._channels:
                        await conn.execute(sql.SQL("LISTEN {}").format(sql.Identifier(channel)))
                    self.connected.set()
                    pause = 0.1
                    async for note in conn.notifies():
                        self._on_notify(note.channel, note.payload)
            except psycopg.Error as exc:
                log.warning(
                    "listening for notifications failed (%s); polling until it reconnects", type(exc).__name__
                )
                self.connected.clear()
                await asyncio.sleep(pause)
                pause = min(pause * 2, 5.0)
            finally:
                self.connected.clear()


class AsyncWaiters:
    """Tasks waiting for news of a ticket; ``notify(ticket)`` wakes every one of them."""

    def __init__(self) -> None:
        self._events: dict[str, list[asyncio.Event]] = {}

    def register(self, ticket_id: str) -> asyncio.Event:
        """An event set on the ticket's next notification; register before reading the database,
        so that news arriving between the read and the wait is not missed."""
        event = asyncio.Event()
        self._events.setdefault(ticket_id, []).append(event)
        return event

    def unregister(self, ticket_id: str, event: asyncio.Event) -> None:
        waiting = self._events.get(ticket_id, [])
        if event in waiting:
            waiting.remove(event)
        if not waiting:
            self._events.pop(ticket_id, None)

    def notify(self, ticket_id: str) -> None:
        for event in list(self._events.get(ticket_id, ())):
            event.set()
