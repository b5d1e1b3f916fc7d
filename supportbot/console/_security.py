"""Sessions, CSRF tokens and roles for the console.

Sessions live in this process's memory and the cookie carries only a random id: signing out
ends a session for good, nothing about the operator is readable from the cookie, and a restart
signs everyone out (the console is one process). A session ends after ``idle`` seconds without a
request and ``lifetime`` seconds after sign-in, whichever comes first.

Every form and every state-changing API call carries the session's CSRF token (a hidden field,
or the ``X-CSRF-Token`` header), compared in constant time; the cookie is also SameSite=Strict.
"""

from __future__ import annotations

import hmac
import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, replace

from ._users import Operator

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

    def get(self, session_id: str | None) -> tuple[Session | None, bool]:
        """(the live session, False), or (None, True) when ``session_id`` named one that ended."""
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
            session = replace(session, seen=now)
            self._by_id[session_id] = session
            return session, False

    def __len__(self) -> int:
        return len(self._by_id)

    def end(self, session_id: str) -> None:
        with self._lock:
            self._by_id.pop(session_id, None)


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
