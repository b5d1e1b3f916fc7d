"""A connection of its own, for a command that runs a few statements and ends (migrating, the HTTP
API's keys), outside any bot's pool; it speaks supportbot's errors."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import psycopg

from ..errors import StoreError
from ._failures import connect_hint, first_line
from ._handles import Tx


@contextmanager
def connected(url: str, *, autocommit: bool = False, failed: str, reason: str) -> Iterator[Tx]:
    """A connection to ``url``, closed (committed unless the block raised) at the block's end.

    A server that cannot be reached is ``StoreError`` with reason ``connect``; any other driver
    error is ``StoreError`` saying ``failed`` (what did not happen) with ``reason``.
    """
    try:
        with psycopg.connect(url, autocommit=autocommit) as conn:
            yield conn
    except psycopg.OperationalError as exc:
        says = f"cannot connect to PostgreSQL: {first_line(exc)}. {connect_hint(exc)}"
        raise StoreError(says, reason="connect") from exc
    except psycopg.Error as exc:
        raise StoreError(f"{failed}: {first_line(exc)}", reason=reason) from exc
