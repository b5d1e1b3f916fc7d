"""A map that keeps only its most recently written entries: the bound on what one process caches
per ticket and per customer.

A worker serves tickets for weeks; a cache that kept every ticket it ever saw would grow until
the process ran out of memory. Only the tickets in flight, and those whose customer writes again
soon, are worth keeping: an evicted entry is read back from the database when it is needed.
"""

from __future__ import annotations

from typing import Generic, TypeVar

__all__ = ["RECENT_CUSTOMERS", "RECENT_TICKETS", "LastWritten"]

K = TypeVar("K")
V = TypeVar("V")

# Far more than a worker has in flight (its threads and the claims ahead of them), so a ticket's
# state and logs stay cached from one round to its next while its customer is still writing.
RECENT_TICKETS = 4096
RECENT_CUSTOMERS = 4096


class LastWritten(Generic[K, V]):
    """Up to ``size`` entries; adding one more drops the one written longest ago. Safe across
    threads without a lock of its own: each step is one operation on a dict, which the
    interpreter lock makes atomic, where a lock would be taken at every step of every round by
    hundreds of worker threads."""

    def __init__(self, size: int) -> None:
        if size < 1:
            raise ValueError(f"a LastWritten map holds at least one entry, not {size}")
        self._size = size
        self._items: dict[K, V] = {}

    def get(self, key: K) -> V | None:
        return self._items.get(key)

    def __setitem__(self, key: K, value: V) -> None:
        items = self._items
        items.pop(key, None)  # written again: it moves to the end of the order
        items[key] = value
        while len(items) > self._size:
            try:
                del items[next(iter(items))]  # the first key: written longest ago
            except (KeyError, RuntimeError):  # another thread changed the map meanwhile
                break  # the next write trims it

    def pop(self, key: K) -> V | None:
        return self._items.pop(key, None)

    def clear(self) -> None:
        self._items.clear()

    def __len__(self) -> int:
        return len(self._items)
