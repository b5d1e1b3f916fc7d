"""The audit log: who did what to which ticket, when and from where (sql/012_human_and_audit.sql).

Rows are written by the API in the transaction of the action they record, so an action and its
row commit together or not at all. The table is append-only; the one change it allows is
:func:`redact_customer`, which forgetting a customer runs: the rows keep who acted, what, when,
on which ticket id and from where, and lose the customer's address, any free text (``note``) and
the business system's ids of their invoice and refund.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, get_args

import psycopg
from psycopg.rows import class_row
from psycopg.types.json import Jsonb

from ._rows import AuditAction, AuditEntry

"""What an audit row records (the table's check constraint lists the same)."""
AUDIT_ACTIONS: tuple[AuditAction, ...] = get_args(AuditAction)
# What forgetting a customer erases from detail (sql/012_human_and_audit.sql's trigger allows just this).
REDACTED_KEYS = ("note", "invoice", "refund")
SOURCE_CHARS = 200  # an address, a host name or a short label such as "cli"


async def record(
    conn: psycopg.AsyncConnection,
    *,
    actor: str,
    action: AuditAction,
    source: str,
    ticket_id: str | None = None,
    customer_email: str | None = None,
    detail: dict[str, Any] | None = None,
) -> None:
    await conn.execute(
        "INSERT INTO supportbot.audit (actor, action, ticket_id, customer_email, source, detail)"
        " VALUES (%s, %s, %s, %s, %s, %s)",
        (actor, action, ticket_id, customer_email, source, Jsonb(detail or {})),
    )


async def entries(
    conn: psycopg.AsyncConnection, *, ticket_id: str | None = None, since: datetime | None = None, limit: int
) -> list[AuditEntry]:
    """Rows oldest first: of one ticket, or all; from ``since`` on; at most ``limit`` (the latest)."""
    return await (
        await conn.cursor(row_factory=class_row(AuditEntry)).execute(
            "SELECT * FROM (SELECT id, at, actor, action, ticket_id, customer_email, source, detail"
            " FROM supportbot.audit WHERE (%(t)s::text IS NULL OR ticket_id = %(t)s)"
            " AND (%(s)s::timestamptz IS NULL OR at >= %(s)s) ORDER BY id DESC LIMIT %(n)s) latest"
            " ORDER BY id",
            {"t": ticket_id, "s": since, "n": limit},
        )
    ).fetchall()


async def redact_customer(conn: psycopg.AsyncConnection, email: str, ticket_ids: list[str]) -> int:
    """Erase the customer's address and free text from the rows about them; how many rows changed."""
    cur = await conn.execute(
        "UPDATE supportbot.audit SET customer_email = NULL,"
        " detail = (detail - %s::text[]) || '{\"redacted\": true}'"
        " WHERE (lower(customer_email) = lower(%s) OR ticket_id = ANY(%s))"
        " AND (customer_email IS NOT NULL OR detail ?| %s::text[])",
        (list(REDACTED_KEYS), email, ticket_ids, list(REDACTED_KEYS)),
    )
    return cur.rowcount


class AsyncAuditStatements:
    """The audit trail (``store.audit``): the statements code outside the store runs, each on the
    transaction or connection it passes."""

    entries = staticmethod(entries)
    record = staticmethod(record)
    redact_customer = staticmethod(redact_customer)
