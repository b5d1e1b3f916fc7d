"""The demo business system on the ``demo`` schema of the same database as the engine."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import psycopg
from psycopg import sql
from psycopg.rows import class_row
from psycopg.types.json import Jsonb
from psycopg_pool import ConnectionPool

from ..records import Customer, Hit, Invoice, PastTicket, RefundRequest, Subscription
from .search import BM25Index


class DemoBackend:
    def __init__(self, pool: ConnectionPool, *, clock: Callable[[], datetime] | None = None) -> None:
        self._pool = pool
        self._index: BM25Index | None = None
        # The engine's clock, so that a ticket resolved on the demo day is in the history of that
        # day (the profile ignores tickets resolved after the day it is built for).
        self._clock = clock or (lambda: datetime.now(UTC))

    def get_customer(self, email: str) -> Customer | None:
        with self._pool.connection() as conn:
            return (
                conn.cursor(row_factory=class_row(Customer))
                .execute(
                    "SELECT id, name, email, company, phone, is_vip FROM demo.customers WHERE lower(email) = lower(%s)"
                    " ORDER BY id LIMIT 1",
                    (email.strip(),),
                )
                .fetchone()
            )

    def list_subscriptions(self, customer_id: str) -> list[Subscription]:
        with self._pool.connection() as conn:
            return (
                conn.cursor(row_factory=class_row(Subscription))
                .execute(
                    "SELECT id, customer_id, plan, billing_cycle, status, started_on, renews_on, amount"
                    " FROM demo.subscriptions WHERE customer_id = %s ORDER BY started_on, id",
                    (customer_id,),
                )
                .fetchall()
            )

    def list_invoices(self, customer_id: str) -> list[Invoice]:
        with self._pool.connection() as conn:
            return (
                conn.cursor(row_factory=class_row(Invoice))
                .execute(
                    "SELECT id, customer_id, amount, currency, issued_on, status, subscription_id"
                    " FROM demo.invoices WHERE customer_id = %s ORDER BY issued_on DESC, id",
                    (customer_id,),
                )
                .fetchall()
            )

    def list_resolved_tickets(self, customer_id: str) -> list[PastTicket]:
        with self._pool.connection() as conn:
            return (
                conn.cursor(row_factory=class_row(PastTicket))
                .execute(
                    "SELECT id, customer_id, subject, resolved_on, facts FROM demo.past_tickets"
                    " WHERE customer_id = %s ORDER BY resolved_on NULLS LAST, id",
                    (customer_id,),
                )
                .fetchall()
            )

    def search_help_center(self, query: str, *, limit: int = 3) -> list[Hit]:
        if self._index is None:
            with self._pool.connection() as conn:
                articles = (
                    conn.cursor(row_factory=class_row(Hit))
                    .execute("SELECT id, title, body, url FROM demo.kb_articles ORDER BY id")
                    .fetchall()
                )
            if not articles:
                return []  # not cached: the demo data may be loaded later
            self._index = BM25Index(articles)
        return self._index.search(query, limit=limit)

    def create_refund_request(
        self,
        *,
        ticket_id: str,
        customer_id: str,
        invoice_id: str,
        amount: Decimal,
        reason: str,
        key: str,
        tx: psycopg.Connection | None,
    ) -> RefundRequest:
        with self._writer(tx) as conn:
            conn.execute(
                "INSERT INTO demo.refunds (id, ticket_id, customer_id, invoice_id, amount, currency, reason, request_key)"
                " SELECT 'R' || lpad(nextval('demo.refund_numbers')::text, 6, '0'), %s, %s, i.id, %s, i.currency, %s, %s"
                " FROM demo.invoices i WHERE i.id = %s ON CONFLICT (request_key) DO NOTHING",
                (ticket_id, customer_id, amount, reason, key, invoice_id),
            )
            return (
                conn.cursor(row_factory=class_row(RefundRequest))
                .execute(
                    "SELECT id, invoice_id, amount, currency, reason, status FROM demo.refunds WHERE request_key = %s",
                    (key,),
                )
                .fetchone()
            )

    def decide_refund(
        self,
        refund_id: str,
        *,
        approved: bool,
        approver: str,
        note: str,
        key: str,
        tx: psycopg.Connection | None,
    ) -> dict[str, Any]:
        with self._writer(tx) as conn:
            conn.execute(
                "UPDATE demo.refunds SET status = %s, decided_by = %s, decided_at = now(), decision_key = %s"
                " WHERE id = %s AND status = 'pending'",
                ("approved" if approved else "rejected", approver, key, refund_id),
            )
            row = conn.execute(
                "SELECT status, decision_key FROM demo.refunds WHERE id = %s", (refund_id,)
            ).fetchone()
        return {
            "refund_id": refund_id,
            "status": row[0] if row else "missing",
            "decision_key": row[1] if row else None,
        }

    def escalate(
        self, *, ticket_id: str, customer_email: str, reason: str, key: str, tx: psycopg.Connection | None
    ) -> dict[str, Any]:
        with self._writer(tx) as conn:
            row = conn.execute(
                "INSERT INTO demo.escalations (ticket_id, customer_email, reason, idempotency_key)"
                " VALUES (%s, %s, %s, %s) ON CONFLICT (idempotency_key) DO UPDATE SET reason = demo.escalations.reason"
                " RETURNING id",
                (ticket_id, customer_email, reason, key),
            ).fetchone()
        return {"escalation_id": int(row[0]) if row else None}

    def finish_ticket(
        self,
        *,
        ticket_id: str,
        customer_email: str,
        resolution: str,
        facts: Mapping[str, Any],
        key: str,
        tx: psycopg.Connection | None,
    ) -> dict[str, Any]:
        with self._writer(tx) as conn:
            conn.execute(
                "INSERT INTO demo.ticket_closures (ticket_id, customer_email, resolution, idempotency_key)"
                " VALUES (%s, %s, %s, %s) ON CONFLICT (idempotency_key) DO NOTHING",
                (ticket_id, customer_email, resolution, key),
            )
            # The ticket's facts join the customer's history; a later round of the same ticket
            # replaces them, so one ticket counts once in the profile.
            conn.execute(
                "INSERT INTO demo.past_tickets (id, customer_id, subject, resolved_on, facts)"
                " SELECT %s, c.id, t.subject, %s, %s FROM demo.customers c, supportbot.tickets t"
                " WHERE lower(c.email) = lower(%s) AND t.id = %s"
                " ON CONFLICT (id) DO UPDATE SET facts = EXCLUDED.facts, resolved_on = EXCLUDED.resolved_on",
                (ticket_id, self._clock().date(), Jsonb(dict(facts)), customer_email, ticket_id),
            )
        return {"ticket_id": ticket_id, "closed": True}

    def forget_customer(
        self, email: str, *, ticket_ids: Sequence[str], tx: psycopg.Connection | None
    ) -> dict[str, int]:
        """Delete the customer and everything of theirs in the demo schema; rows per table.

        Rows are matched by customer id, by email and by the engine's ticket ids, because the
        escalation and closure records carry only the latter two.
        """
        ids = list(ticket_ids)
        with self._writer(tx) as conn:
            found = conn.execute(
                "SELECT id FROM demo.customers WHERE lower(email) = lower(%s)", (email,)
            ).fetchall()
            customers = [row[0] for row in found]
            by = {"c": customers, "t": ids, "e": email}
            statements = [  # children first: the cascades would hide their counts
                ("refunds", "customer_id = ANY(%(c)s) OR ticket_id = ANY(%(t)s)"),
                ("escalations", "lower(customer_email) = lower(%(e)s) OR ticket_id = ANY(%(t)s)"),
                ("ticket_closures", "lower(customer_email) = lower(%(e)s) OR ticket_id = ANY(%(t)s)"),
                ("past_tickets", "customer_id = ANY(%(c)s) OR id = ANY(%(t)s)"),
                ("invoices", "customer_id = ANY(%(c)s)"),
                ("subscriptions", "customer_id = ANY(%(c)s)"),
                ("customers", "id = ANY(%(c)s)"),
            ]
            counts = {}
            for table, where in statements:
                query = sql.SQL(
                    "WITH gone AS (DELETE FROM {} WHERE {} RETURNING 1) SELECT count(*) FROM gone"
                ).format(sql.Identifier("demo", table), sql.SQL(where))  # type: ignore[arg-type]
                counts[f"demo.{table}"] = int(conn.execute(query, by).fetchone()[0])  # type: ignore[index]
        return counts

    def reset_data(self, *, tx: psycopg.Connection) -> dict[str, int]:
        """Empty every table of the demo schema (sequences keep counting); rows per table."""
        tables = [
            row[0]
            for row in tx.execute(
                "SELECT tablename FROM pg_tables WHERE schemaname = 'demo' ORDER BY tablename"
            ).fetchall()
        ]
        names = [sql.Identifier("demo", t) for t in tables]
        if not names:
            return {}
        tx.execute(sql.SQL("LOCK TABLE {} IN ACCESS EXCLUSIVE MODE").format(sql.SQL(", ").join(names)))
        counts = {
            f"demo.{t}": int(tx.execute(sql.SQL("SELECT count(*) FROM {}").format(n)).fetchone()[0])  # type: ignore[index]
            for t, n in zip(tables, names, strict=True)
        }
        tx.execute(sql.SQL("TRUNCATE {}").format(sql.SQL(", ").join(names)))
        self._index = None  # the help center is gone with it
        return counts

    @contextmanager
    def _writer(self, tx: psycopg.Connection | None) -> Iterator[psycopg.Connection]:
        """Write through the engine's transaction when given, else in a transaction of our own."""
        if tx is not None:
            yield tx
            return
        with self._pool.connection() as conn, conn.transaction():
            yield conn
