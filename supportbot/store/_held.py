"""Which pooled connection the running thread (or asyncio task) already holds.

A round's calls share one connection (``RoundPool.keep``), and a backend called inside the
engine's transaction reads through it: threads remember theirs in a thread-local, tasks in a
context variable (each task runs in its own copy of the context).
"""

from __future__ import annotations

import threading
from contextvars import ContextVar
from typing import Any, Generic, TypeVar

C = TypeVar("C")
K = TypeVar("K")


class Held(Generic[C, K]):
    """The connection and the keep() block of the calling thread."""

    def __init__(self) -> None:
        self._local = threading.local()

    @property
    def conn(self) -> C | None:
        return getattr(self._local, "conn", None)

    @conn.setter
    def conn(self, value: C | None) -> None:
        self._local.conn = value

    @property
    def keep(self) -> K | None:
        return getattr(self._local, "keep", None)

    @keep.setter
    def keep(self, value: K | None) -> None:
        self._local.keep = value


class AsyncHeld(Generic[C, K]):
    """The connection and the keep() block of the calling asyncio task.

    A task started inside a keep() block would inherit its connection and use it at the same time
    as its parent: the bot starts none there.
    """

    def __init__(self) -> None:
        self._conn: ContextVar[Any] = ContextVar(f"held_conn_{id(self)}", default=None)
        self._keep: ContextVar[Any] = ContextVar(f"held_keep_{id(self)}", default=None)

    @property
    def conn(self) -> C | None:
        value: C | None = self._conn.get()
        return value

    @conn.setter
    def conn(self, value: C | None) -> None:
        self._conn.set(value)

    @property
    def keep(self) -> K | None:
        value: K | None = self._keep.get()
        return value

    @keep.setter
    def keep(self, value: K | None) -> None:
        self._keep.set(value)
