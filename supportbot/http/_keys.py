"""API keys of the HTTP API: their form, their digest, whom they may act for, and how often.

A key reads ``sbk_<id>_<secret>``: the id finds its row (``supportbot.api_keys``), the secret is
checked against the stored SHA-256 in constant time. The secret is 256 random bits, so a plain
digest is enough (a slow hash protects guessable passwords, not random keys). Nothing but the id is
ever logged or shown again after the key is made.
"""

from __future__ import annotations

import hashlib
import hmac
import math
import re
import secrets
import time
from dataclasses import dataclass

from .._front import _validate as validate
from ..errors import InvalidInput

PREFIX = "sbk_"
_KEY = re.compile(r"^sbk_([a-z0-9]{8,32})_([A-Za-z0-9_-]{20,200})$")
_DOMAIN = re.compile(r"^@[a-z0-9.-]+\.[a-z]{2,}$")


@dataclass(frozen=True, slots=True)
class NewKey:
    """A key as made: ``key`` is shown once and stored nowhere, ``secret_sha256`` is stored."""

    id: str
    key: str
    secret_sha256: str

    def __repr__(self) -> str:
        return f"NewKey(id={self.id!r})"


def make_key() -> NewKey:
    key_id = secrets.token_hex(6)  # 12 lowercase hex characters
    secret = secrets.token_urlsafe(32)
    return NewKey(key_id, f"{PREFIX}{key_id}_{secret}", digest(secret))


def digest(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def parse(presented: str) -> tuple[str, str] | None:
    """(id, secret) of a key in its form, else None."""
    found = _KEY.match(presented.strip())
    return (found[1], found[2]) if found else None


def matches(secret: str, secret_sha256: str) -> bool:
    return hmac.compare_digest(digest(secret), secret_sha256)


def customers_entries(given: str) -> list[str]:
    """The ``--customers`` list: addresses (read as the bot reads them), ``@domain`` entries or
    ``*``; InvalidInput naming an entry that is none of them."""
    entries = [e.strip().lower() for e in given.split(",") if e.strip()]
    if not entries:
        raise InvalidInput("--customers: name at least one customer: an address, @domain or *")
    for entry in entries:
        if entry != "*" and not _DOMAIN.match(entry):
            validate.email(entry, "--customers")
    return entries


def allows(customers: list[str], email: str) -> bool:
    """Whether a key with these ``customers`` may act for ``email``."""
    email = email.strip().lower()
    domain = "@" + email.rpartition("@")[2]
    return any(entry in ("*", email, domain) for entry in customers)


class RateLimits:
    """Requests per minute per key, as token buckets in this process: a burst of up to a minute's
    worth, refilled evenly. Several processes each keep their own (a key's rate is then per process)."""

    def __init__(self) -> None:
        self._buckets: dict[str, tuple[float, float]] = {}  # key id -> (tokens, when)

    def take(self, key_id: str, per_minute: int) -> float:
        """Take one request: 0 when allowed, else the seconds until one is."""
        now = time.monotonic()
        tokens, then = self._buckets.get(key_id, (float(per_minute), now))
        tokens = min(float(per_minute), tokens + (now - then) * per_minute / 60)
        if tokens >= 1:
            self._buckets[key_id] = (tokens - 1, now)
            return 0.0
        self._buckets[key_id] = (tokens, now)
        return math.ceil((1 - tokens) * 60 / per_minute * 10) / 10
