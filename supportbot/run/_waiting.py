"""Submitted messages and waiting for their answers (``SupportBot.submit`` / ``wait``)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from ..config import Settings
from ..errors import WaitTimeout
from ..store._channels import DONE_CHANNEL
from ..store._listen import Listener, Waiters
from ._rounds import RoundResult

# How often a waiter reads the database anyway: while it listens, only to cover a lost
# notification; without a listener, this is how soon it sees the answer.
RECHECK_LISTENING = 1.0
RECHECK_POLLING = 0.1


def listen_url(settings: Settings, database_url: str) -> str | None:
    """Where to LISTEN: the direct URL if one is set; else the database, unless it is reached
    through a pooler in transaction mode (prepared statements off), where only polling works."""
    if not settings.listen:
        return None
    if settings.listen_url:
        return settings.listen_url
    return database_url if settings.prepared_statements else None


class Answers:
    """Waits for rounds to end: one shared listener per bot, started by the first wait."""

    def __init__(self, url: str | None, connect_kwargs: dict[str, object]) -> None:
        self._url = url
        self._kwargs = connect_kwargs
        self._waiters = Waiters()
        self._listener: Listener | None = None
        self._lock = threading.Lock()

    def close(self) -> None:
        with self._lock:
            listener, self._listener = self._listener, None
        if listener is not None:
            listener.stop()

    def _listening(self) -> bool:
        if self._url is None:
            return False
        with self._lock:
            if self._listener is None:
                self._listener = Listener(
                    self._url,
                    [DONE_CHANNEL],
                    lambda _c, ticket: self._waiters.notify(ticket),
                    connect_kwargs=dict(self._kwargs),
                ).start()
                started = True
            else:
                started = False
            listener = self._listener
        if started:
            listener.connected.wait(timeout=RECHECK_LISTENING)
        return listener.connected.is_set()

    def wait(self, ticket_id: str, check: Callable[[], RoundResult | None], timeout: float) -> RoundResult:
        """Call ``check`` until it returns a result: after each notification about the ticket,
        and at least every second (every 0.1 s when polling)."""
        deadline = time.monotonic() + timeout
        listening = self._listening()
        while True:
            event = self._waiters.register(ticket_id)  # before reading: news during the read still counts
            try:
                result = check()
                if result is not None:
                    return result
                left = deadline - time.monotonic()
                if left <= 0:
                    raise timed_out(ticket_id, timeout)
                event.wait(min(left, RECHECK_LISTENING if listening else RECHECK_POLLING))
            finally:
                self._waiters.unregister(ticket_id, event)
            if not listening:
                listening = self._listening()


def timed_out(ticket_id: str, timeout: float, bot: str = "SupportBot") -> WaitTimeout:
    return WaitTimeout(
        f"no answer on ticket {ticket_id} within {timeout:g} s; the message stays queued and a worker "
        f"answers it (is one running? {bot}.work() runs one). Call wait() again to keep waiting",
        ticket_id=ticket_id,
    )
