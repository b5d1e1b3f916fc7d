"""The database handles that leave the store.

A round's transaction is threaded through the engine, the bot and the business system's calls, so
a host's writes commit or roll back with the step that made them; a record's cursor is read after
the commit. Code outside ``store/`` holds these handles and passes them back into store functions
(or to the business system, whose protocol takes psycopg's connection); it never runs a statement
on them. Named here so that only ``store/`` imports psycopg.
"""

from __future__ import annotations

from typing import Any, TypeAlias

import psycopg

Tx: TypeAlias = psycopg.Connection[Any]
AsyncTx: TypeAlias = psycopg.AsyncConnection[Any]
Cursor: TypeAlias = psycopg.Cursor[Any]
AsyncCursor: TypeAlias = psycopg.AsyncCursor[Any]
