"""LISTEN on a dedicated connection and wake whoever waits; polling covers the gaps.

A notification is a hint, never the truth: whoever wakes reads the database, and also reads it on
a timer, so a lost notification (the connection broke, the listener was still connecting) only
delays, never loses, an answer. Through PgBouncer in transaction mode LISTEN does not work (the
session that listens is handed to other clients), so ``Settings.listen_url`` names a direct
connection for it; without one, a pooled deployment polls.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable
from typing import Any

import psycopg
from psycopg import sql

log = logging.getLogger(__name__)


class Listener:
    """A daemon thread that LISTENs on ``channels`` and calls ``on_notify(channel, payload)``.

    It reconnects by itself after the connection breaks (with a growing pause, at most 5 s);
    ``connected`` is set while it listens.
    """

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
        self._stop = threading.Event()
        self.connected = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="supportbot-listen", daemon=True)

    def start(self) -> Listener:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=2)

    def _loop(self) -> None:
        pause = 0.1
        while not self._stop.is_set():
            try:
                with psycopg.connect(self._url, **self._kwargs) as conn:
                    for channel in self._channels:
                        conn.execute(sql.SQL("LISTEN {}").format(sql.Identifier(channel)))
                    self.connected.set()
                    pause = 0.1
                    while not self._stop.is_set():
                        for note in conn.notifies(timeout=0.5):
                            self._on_notify(note.channel, note.payload)
            except psycopg.Error as exc:
                self.connected.clear()
                log.warning(
                    "listening for notifications failed (%s); polling until it reconnects", type(exc).__name__
                )
                self._stop.wait(pause)
                pause = min(pause * 2, 5.0)
            finally:
                self.connected.clear()


class Waiters:
    """Threads waiting for news of a ticket; ``notify(ticket)`` wakes every one of them."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._events: dict[str, list[threading.Event]] = {}

    def register(self, ticket_id: str) -> threading.Event:
        """An event set on the ticket's next notification; register before reading the database,
        so that news arriving between the read and the wait is not missed."""
        event = threading.Event()
        with self._lock:
            self._events.setdefault(ticket_id, []).append(event)
        return event

    def unregister(self, ticket_id: str, event: threading.Event) -> None:
        with self._lock:
            waiting = self._events.get(ticket_id, [])
            if event in waiting:
                waiting.remove(event)
            if not waiting:
                self._events.pop(ticket_id, None)

    def notify(self, ticket_id: str) -> None:
        with self._lock:
            waiting = list(self._events.get(ticket_id, ()))
        for event in waiting:
            event.set()
