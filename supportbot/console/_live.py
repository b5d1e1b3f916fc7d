"""The live inbox: open inbox pages learn within a second that what they show may have changed.

One listener per console process LISTENs on ``supportbot_inbox`` (sql/021_console_live.sql) and
counts notifications; each open page's event stream (``GET /inbox/events``) watches the count,
reads the inbox again when it moves, and sends an event only when the page's rows differ. A
notification is a hint: streams also read the inbox every ``poll_seconds`` (every second while the
listener is not connected, as through PgBouncer in transaction mode without a direct URL), so a
lost notification delays an update, never loses it.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence

from starlette.concurrency import run_in_threadpool

from ..errors import SupportbotError
from ..store._listen import Listener
from ._service import InboxItem

log = logging.getLogger("supportbot.console")
INBOX_CHANNEL = "supportbot_inbox"
IDLE_POLL_SECONDS = 10.0  # read the inbox at least this often even when no notification came
SESSION_CHECK_SECONDS = 30.0
KEEPALIVE_SECONDS = 15.0  # a comment line, so proxies do not close a quiet stream
STREAM_SECONDS = 600.0  # then the browser reconnects (EventSource does by itself): no stream lives forever
TICK_SECONDS = 0.2


def mark(items: Sequence[InboxItem]) -> str:
    """A short fingerprint of what an inbox page shows: equal marks, equal rows."""
    shown = [
        (i.kind, i.ticket_id, i.claimed_by, i.owner, i.assignee, i.team, i.waiting_since.isoformat())
        + ((i.clock.kind, i.clock.breached) if i.clock else ())  # a breach shows without a reload
        for i in items
    ]
    return hashlib.sha256(json.dumps(shown).encode()).hexdigest()[:16]


async def inbox_stream(
    feed: InboxFeed,
    read: Callable[[], list[InboxItem]],
    signed_in: Callable[[], bool],
    disconnected: Callable[[], Awaitable[bool]],
    shown: str,
    *,
    session_check: float = SESSION_CHECK_SECONDS,
) -> AsyncIterator[str]:
    """Server-Sent Events for one open inbox page that shows ``shown`` (its mark): an ``inbox``
    event with the new count whenever its rows change, ``signed-out`` when the session ended.
    ``read`` and ``signed_in`` touch the database and run in the thread pool."""
    yield "retry: 2000\n\n"
    seen, read_at, checked_at = -1, 0.0, time.monotonic()
    started = sent_at = time.monotonic()
    while time.monotonic() - started < STREAM_SECONDS and not await disconnected():
        now = time.monotonic()
        if now - checked_at >= session_check:
            checked_at = now
            if not await run_in_threadpool(signed_in):
                yield "event: signed-out\ndata: {}\n\n"
                return
        version = feed.version
        if version != seen or now - read_at >= feed.poll_seconds(IDLE_POLL_SECONDS):
            seen, read_at = version, now
            try:
                items = await run_in_threadpool(read)
            except SupportbotError as exc:  # the database is away: end; the browser reconnects later
                log.warning("the inbox stream ended: %s", type(exc).__name__)
                return
            if mark(items) != shown:
                shown = mark(items)
                yield f"event: inbox\ndata: {json.dumps({'count': len(items), 'mark': shown})}\n\n"
                sent_at = now
        if now - sent_at >= KEEPALIVE_SECONDS:
            yield ": still here\n\n"
            sent_at = now
        await asyncio.sleep(TICK_SECONDS)


class InboxFeed:
    """A counter of inbox notifications, fed by a listener thread started on first use."""

    def __init__(self, listen_url: str | None, connect_kwargs: dict[str, object] | None = None) -> None:
        self._url = listen_url
        self._kwargs = dict(connect_kwargs or {})
        self._lock = threading.Lock()
        self._listener: Listener | None = None
        self._version = 0
        self._closed = False

    @property
    def version(self) -> int:
        self._start()
        return self._version

    @property
    def listening(self) -> bool:
        return self._listener is not None and self._listener.connected.is_set()

    def poll_seconds(self, idle: float) -> float:
        """How long a stream may go without reading the inbox: ``idle`` while notifications
        arrive, one second while they cannot."""
        return idle if self.listening else 1.0

    def _start(self) -> None:
        if self._listener is not None or self._url is None or self._closed:
            return
        with self._lock:
            if self._listener is None and not self._closed:
                self._listener = Listener(
                    self._url, [INBOX_CHANNEL], self._notified, connect_kwargs=self._kwargs
                ).start()

    def _notified(self, _channel: str, _payload: str) -> None:
        with self._lock:
            self._version += 1

    def close(self) -> None:
        with self._lock:
            listener, self._listener, self._closed = self._listener, None, True
        if listener is not None:
            listener.stop()
