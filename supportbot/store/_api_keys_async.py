"""The SQL of the HTTP API's keys (``supportbot.api_keys``, sql/026): make, list, revoke, and find
the key a request presents. Only the secret's SHA-256 is stored."""

from __future__ import annotations

import psycopg
from psycopg.rows import class_row

from ._rows import ApiKey

_COLUMNS = "id, name, secret_sha256, customers, rate_per_minute, created_by, created_at, revoked_at"


async def add_key(
    conn: psycopg.AsyncConnection,
    *,
    key_id: str,
    name: str,
    secret_sha256: str,
    customers: list[str],
    rate_per_minute: int,
    created_by: str,
) -> ApiKey:
    row = await (
        await conn.cursor(row_factory=class_row(ApiKey)).execute(
            "INSERT INTO supportbot.api_keys"
            " (id, name, secret_sha256, customers, rate_per_minute, created_by)"
            f" VALUES (%s, %s, %s, %s, %s, %s) RETURNING {_COLUMNS}",
            (key_id, name, secret_sha256, customers, rate_per_minute, created_by),
        )
    ).fetchone()
    assert row is not None  # INSERT … RETURNING returns its row
    return row


async def keys(conn: psycopg.AsyncConnection) -> list[ApiKey]:
    return await (
        await conn.cursor(row_factory=class_row(ApiKey)).execute(
            f"SELECT {_COLUMNS} FROM supportbot.api_keys ORDER BY created_at, id"
        )
    ).fetchall()


async def key(conn: psycopg.AsyncConnection, key_id: str) -> ApiKey | None:
    return await (
        await conn.cursor(row_factory=class_row(ApiKey)).execute(
            f"SELECT {_COLUMNS} FROM supportbot.api_keys WHERE id = %s", (key_id,)
        )
    ).fetchone()


async def revoke(conn: psycopg.AsyncConnection, key_id: str) -> bool:
    """Revoke the key (a revoked key stays listed); False when there is no such key."""
    cur = await conn.execute(
        "UPDATE supportbot.api_keys SET revoked_at = coalesce(revoked_at, now()) WHERE id = %s RETURNING 1",
        (key_id,),
    )
    return await cur.fetchone() is not None


class AsyncApiKeyStatements:
    """The HTTP API's keys (``store.keys``): the statements code outside the store runs, each on the
    transaction or connection it passes."""

    add_key = staticmethod(add_key)
    key = staticmethod(key)
    keys = staticmethod(keys)
    revoke = staticmethod(revoke)
