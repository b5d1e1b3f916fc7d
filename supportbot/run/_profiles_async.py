"""The customer-profile cache: rebuild only when the profile's inputs change."""

from __future__ import annotations

import hashlib
import json
import math
import threading
import time
from collections.abc import Callable, Sequence
from datetime import date, datetime

from pydantic import TypeAdapter

from .._records import Customer, CustomerRecords, PastTicket, Subscription
from ..backend.base_async import AsyncBackend
from ..memory._profile import RULES_VERSION, Profile, ProfileCorrection, build_profile, fingerprint
from ..store._recent import RECENT_CUSTOMERS, LastWritten
from ..store._store_async import AsyncStore

_PROFILE: TypeAdapter[Profile] = TypeAdapter(Profile)
# A profile's inputs as the backend returned them, the day it was built for and operators'
# corrections.
_Inputs = tuple[
    Customer, tuple[Subscription, ...], tuple[PastTicket, ...], date, tuple[ProfileCorrection, ...]
]


class _Corrections:
    """Operators' profile corrections as this process last read them.

    A profile is asked for every round and corrections are rare: rather than a read per round,
    every customer's latest correction position is read at most every ``refresh`` seconds (one
    small statement), and a customer's corrections again only when their position moved. A
    correction recorded by this process shows in its next profile (``stale``); one recorded by
    another process within ``refresh`` seconds.
    """

    def __init__(self, store: AsyncStore, *, refresh: float = 2.0) -> None:
        self._store, self._refresh = store, refresh
        self._lock = threading.Lock()
        self._read_at = -math.inf
        self._positions: dict[str, int] = {}
        self._read: dict[str, tuple[int, tuple[ProfileCorrection, ...]]] = {}

    def stale(self) -> None:
        with self._lock:
            self._read_at = -math.inf

    async def of(self, customer_id: str) -> tuple[ProfileCorrection, ...]:
        now = time.monotonic()
        with self._lock:
            fresh = now - self._read_at < self._refresh
        if not fresh:
            async with self._store.connection() as conn:
                positions = await self._store.profiles.correction_positions(conn)
            with self._lock:
                self._positions, self._read_at = positions, now
        position = self._positions.get(customer_id)
        if position is None:
            return ()
        known = self._read.get(customer_id)
        if known is not None and known[0] == position:
            return known[1]
        async with self._store.connection() as conn:
            rows = await self._store.profiles.profile_corrections(conn, customer_id)
        found = tuple(ProfileCorrection(entry, key, value) for entry, key, value in rows)  # type: ignore[arg-type]
        with self._lock:
            self._read[customer_id] = (position, found)
        return found


def _digest(corrections: Sequence[ProfileCorrection]) -> str:
    if not corrections:
        return ""  # the key of a profile nobody corrected is the one it always had
    payload = json.dumps([[c.entry, c.key, c.value] for c in corrections], ensure_ascii=False)
    return ":" + hashlib.sha256(payload.encode()).hexdigest()[:16]


class Profiles:
    """Profiles from the backend's records, cached in supportbot.customer_profiles by fingerprint.

    The fingerprint covers the customer record, subscriptions and resolved tickets, so an upgrade
    without any ticket refreshes the profile too; the text cap, the rules version and whether
    personal data is masked (``mask``, from ``Settings.mask_pii``) are part of the key as well.
    """

    def __init__(
        self,
        store: AsyncStore,
        backend: AsyncBackend,
        *,
        clock: Callable[[], datetime],
        max_chars: int = 100,
        mask: bool = True,
    ) -> None:
        self._store, self._backend, self._clock, self.max_chars = store, backend, clock, max_chars
        self.mask = mask
        self._lock = threading.Lock()
        self.builds = 0  # how many times a profile was actually built (tests count them)
        # The builder is deterministic, so a profile made from inputs with the same key is the
        # same profile: this process need not read it back from the table again. The inputs
        # themselves are kept too: records equal to the last ones need no fingerprint (hashing
        # their JSON cost about as much as reading them, every round).
        self._memo: LastWritten[str, tuple[_Inputs, str, Profile]] = LastWritten(RECENT_CUSTOMERS)
        self._corrections = _Corrections(store)

    async def for_customer(
        self, customer: Customer, *, excluding: str | None = None, records: CustomerRecords | None = None
    ) -> Profile:
        """The profile; ``excluding`` a ticket leaves that ticket out (a ticket's own rounds are
        in its conversation, and must not count as one more past occurrence of its issue).
        ``records``: the customer's records, already read (else they are read here)."""
        if records is not None:
            subscriptions: Sequence[Subscription] = records.subscriptions
            resolved: Sequence[PastTicket] = records.resolved_tickets
        else:
            subscriptions = await self._backend.list_subscriptions(customer.id)
            resolved = await self._backend.list_resolved_tickets(customer.id)
        tickets = [t for t in resolved if t.id != excluding]
        today = self._clock().date()
        corrections = await self.corrections(customer.id)
        inputs = (customer, tuple(subscriptions), tuple(tickets), today, corrections)
        memo = self._memo.get(customer.id)
        if memo is not None and memo[0] == inputs:
            return memo[2]
        # build_profile ignores tickets resolved after `today`, so the day belongs in the key.
        key = (
            f"{fingerprint(customer, subscriptions, tickets)}:{RULES_VERSION}:{self.max_chars}:{today}"
            f":{'masked' if self.mask else 'raw'}{_digest(corrections)}"
        )
        if memo is not None and memo[1] == key:
            return self._remember(customer.id, inputs, key, memo[2])
        async with self._store.connection() as conn:
            stored = await self._store.profiles.stored_profile(conn, customer.id)
            if stored is not None and stored.fingerprint == key:
                return self._remember(customer.id, inputs, key, _PROFILE.validate_python(stored.profile))
            profile = build_profile(
                customer,
                subscriptions,
                tickets,
                today=today,
                max_chars=self.max_chars,
                mask=self.mask,
                corrections=corrections,
            )
            with self._lock:
                self.builds += 1
            await self._store.profiles.save_profile(
                conn, customer.id, key, _PROFILE.dump_python(profile, mode="json"), profile.text
            )
        return self._remember(customer.id, inputs, key, profile)

    async def corrections(self, customer_id: str) -> tuple[ProfileCorrection, ...]:
        """Operators' corrections of the customer's profile, oldest first."""
        return await self._corrections.of(customer_id)

    def corrected(self) -> None:
        """A correction was just recorded: this process's next profile reads them again."""
        self._corrections.stale()

    def _remember(self, customer_id: str, inputs: _Inputs, key: str, profile: Profile) -> Profile:
        self._memo[customer_id] = (inputs, key, profile)
        return profile

    def remembered(self) -> int:
        """How many customers' profiles this process keeps (at most RECENT_CUSTOMERS)."""
        return len(self._memo)

    def clear(self) -> None:
        """Drop this process's copies (after a customer is forgotten or the data is reset)."""
        self._memo.clear()
        self._corrections = _Corrections(self._store)
