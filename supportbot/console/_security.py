"""Sessions, CSRF tokens and roles for the console.

The cookie carries only a random id: nothing about the operator is readable from it. The console
keeps sessions in PostgreSQL (``StoredSessions``, sql/020_console_sessions.sql): only the id's
SHA-256 is stored, so a restart signs nobody out and two console processes on one database serve
the same operators; signing out, a changed password or a changed role ends a session for good.
``Sessions`` keeps them in one process's memory (tests, and an app built without a store). A
session ends after ``idle`` seconds without a request and ``lifetime`` seconds after sign-in,
whichever comes first.

Every form and every state-changing API call carries the session's CSRF token (a hidden field,
or the ``X-CSRF-Token`` header), compared in constant time; the cookie is also SameSite=Strict.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import cast

from ..store._store import Store
from ._users import Operator, Role, Users

COOKIE = "supportbot_console"
CSRF_FIELD = "csrf_token"
CSRF_HEADER = "x-csrf-token"
MAX_SESSIONS = 10_000


@dataclass(frozen=True, slots=True)
class Session:
    id: str
    csrf: str
    operator: Operator | None
    started: float
    seen: float


class NeedSignIn(Exception):
    """No session, or it ended (``expired``): sign in (again)."""

    def __init__(self, *, expired: bool) -> None:
        super().__init__("sign in")
        self.expired = expired


class Forbidden(Exception):
    """The operator's role does not allow this."""


class BadCsrf(Exception):
    """The form or call came without this session's CSRF token."""


class Sessions:
    def __init__(
        self,
        *,
        idle: float = 30 * 60,
        lifetime: float = 12 * 3600,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.idle, self.lifetime, self._clock = idle, lifetime, clock
        self._by_id: dict[str, Session] = {}
        self._lock = threading.Lock()

    def new(self, operator: Operator | None = None) -> Session:
        now = self._clock()
        session = Session(secrets.token_urlsafe(32), secrets.token_urlsafe(32), operator, now, now)
        with self._lock:
            if len(self._by_id) >= MAX_SESSIONS:  # every visit to /login makes one: keep memory bounded
                self._drop_stale(now)
            self._by_id[session.id] = session
        return session

    def _drop_stale(self, now: float) -> None:
        for key, old in list(self._by_id.items()):
            if now - old.seen > self.idle or now - old.started > self.lifetime:
                del self._by_id[key]
        anonymous = sorted((s.seen, k) for k, s in self._by_id.items() if s.operator is None)
        for _, key in anonymous[: max(0, len(self._by_id) - MAX_SESSIONS // 2)]:
            del self._by_id[key]

    def get(self, session_id: str | None, *, touch: bool = True) -> tuple[Session | None, bool]:
        """(the live session, False), or (None, True) when ``session_id`` named one that ended.
        ``touch=False`` reads without counting as activity (a live page checking it is still
        signed in must not keep an unattended session alive)."""
        if not session_id:
            return None, False
        now = self._clock()
        with self._lock:
            session = self._by_id.get(session_id)
            if session is None:
                return None, False
            if now - session.seen > self.idle or now - session.started > self.lifetime:
                del self._by_id[session_id]
                return None, session.operator is not None
            if touch:
                session = replace(session, seen=now)
                self._by_id[session_id] = session
            return session, False

    def __len__(self) -> int:
        return len(self._by_id)

    def end(self, session_id: str) -> None:
        with self._lock:
            self._by_id.pop(session_id, None)


class StoredSessions:
    """Sessions in PostgreSQL, shared by every console process on the database.

    A session before sign-in (the sign-in form's) is not stored: its CSRF token is derived from its
    id, so any process can check it. A signed-in session is a row keyed by the id's SHA-256; it
    names the operator, their role and ``Users.credential`` at sign-in, and ends when the users
    file says otherwise. ``seen_at`` is written at most every ``touch_every`` seconds: a request
    is a read, not a write.
    """

    def __init__(
        self,
        store: Store,
        users: Users,
        *,
        idle: float = 30 * 60,
        lifetime: float = 12 * 3600,
        clock: Callable[[], float] = time.time,
        touch_every: float = 30.0,
    ) -> None:
        self.store, self.users = store, users
        self.idle, self.lifetime, self._clock, self.touch_every = idle, lifetime, clock, touch_every

    def new(self, operator: Operator | None = None) -> Session:
        session_id, now = secrets.token_urlsafe(32), self._clock()
        if operator is not None:
            credential = self.users.credential(operator.name) or ""
            with self.store.transaction() as conn:
                # Ended sessions go as people sign in: the table stays as small as the live ones.
                self.store.console.sessions_sweep(
                    conn, seen_before=_at(now - self.idle), started_before=_at(now - self.lifetime)
                )
                self.store.console.session_insert(
                    conn, _digest(session_id), operator.name, operator.role, credential, _at(now)
                )
        return Session(session_id, _csrf(session_id), operator, now, now)

    def get(self, session_id: str | None, *, touch: bool = True) -> tuple[Session | None, bool]:
        """(the live session, False); (None, True) when ``session_id`` named a signed-in session
        that ended. An id never signed in is a session before sign-in. ``touch=False``: a read
        that is not activity (Sessions.get)."""
        if not session_id:
            return None, False
        now = self._clock()
        key = _digest(session_id)
        with self.store.connection() as conn:
            row = self.store.console.session_get(conn, key)
            if row is None:
                return Session(session_id, _csrf(session_id), None, now, now), False
            started, seen = row.started_at.timestamp(), row.seen_at.timestamp()
            ended = now - seen > self.idle or now - started > self.lifetime
            if ended or self.users.credential(row.operator) != row.credential:
                self.store.console.session_delete(conn, key)
                return None, True
            if touch and now - seen >= self.touch_every:
                self.store.console.session_touch(conn, key, _at(now))
        operator = Operator(row.operator, cast(Role, row.role))  # the credential holds the role
        return Session(session_id, _csrf(session_id), operator, started, now if touch else seen), False

    def end(self, session_id: str) -> None:
        with self.store.connection() as conn:
            self.store.console.session_delete(conn, _digest(session_id))

    def end_operator(self, name: str) -> int:
        """End every session of operator ``name``; how many ended."""
        with self.store.connection() as conn:
            return self.store.console.sessions_delete_operator(conn, name)

    def __len__(self) -> int:
        with self.store.connection() as conn:
            return self.store.console.sessions_count(conn)


def _digest(session_id: str) -> bytes:
    return hashlib.sha256(session_id.encode()).digest()


def _csrf(session_id: str) -> str:
    # Keyed by the id, which only the cookie holds: the token in a page tells nothing of the id.
    return hmac.new(session_id.encode(), b"supportbot-console-csrf", hashlib.sha256).hexdigest()


def _at(epoch: float) -> datetime:
    return datetime.fromtimestamp(epoch, UTC)


def check_csrf(session: Session | None, token: str | None) -> None:
    if session is None or not token or not hmac.compare_digest(session.csrf, token):
        raise BadCsrf()


def signed_in(session: Session | None, expired: bool) -> Operator:
    if session is None or session.operator is None:
        raise NeedSignIn(expired=expired)
    return session.operator


def approver(operator: Operator) -> Operator:
    if not operator.approver:
        raise Forbidden()
    return operator


def is_loopback(host: str) -> bool:
    return host in ("127.0.0.1", "::1", "localhost") or host.startswith("127.")
