# Generated from _backend_async.py by scripts/async_to_sync.py: edit that file and run the script.
"""The demo business system on the ``demo`` schema of the same database as the engine."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import UTC, date, datetime
from decimal import Decimal
from typing import Any, Literal

import psycopg
from psycopg import sql
from psycopg.rows import class_row
from psycopg.types.json import Jsonb
from psycopg_pool import ConnectionPool

from ..._records import (
    CENT,
    Customer,
    CustomerRecords,
    Hit,
    Invoice,
    PastTicket,
    RefundQuote,
    RefundRequest,
    Subscription,
)
from ...errors import InvalidInput
from ...reply._search import BM25Index
from . import _refund_policy as refund_policy
from ._data import DEMO_TODAY, PLAN_PRICES, demo_batches


class DemoBackend:
    """``today``: the day refunds are quoted on. The demo business lives on its demo day
    (DEMO_TODAY), so its 30-day refund window tells the same story whenever the demo runs.
    ``clock``: the engine's clock, which dates the tickets it resolves."""

    # Its reads are queries through the pool it is given, the engine's (backend.ReadsEnginePool).
    reads_engine_pool: Literal[True] = True

    def __init__(
        self,
        pool: ConnectionPool,
        *,
        clock: Callable[[], datetime] | None = None,
        today: Callable[[], date] = lambda: DEMO_TODAY,
    ) -> None:
        self._pool = pool
        self._today = today
        self._index: BM25Index | None = None
        # The engine's clock, so that a ticket resolved on the demo day is in the history of that
        # day (the profile ignores tickets resolved after the day it is built for).
        self._clock = clock or (lambda: datetime.now(UTC))

    def list_plans(self) -> list[str]:
        """The demo's plan catalogue (supportbot.backend.ListsPlans), from its price list."""
        return sorted({plan for plan, _ in PLAN_PRICES})

    def load_demo_data(self) -> dict[str, int]:
        """(Re)load the demo rows (docs/demo-data.md) in one transaction; rows per table."""
        with self._pool.connection() as conn, conn.transaction():
            return load_demo_data(conn)

    def get_customer(self, email: str) -> Customer | None:
        with self._pool.connection() as conn:
            return (
                conn.cursor(row_factory=class_row(Customer)).execute(
                    "SELECT id, name, email, company, phone, is_vip FROM demo.customers"
                    " WHERE lower(email) = lower(%s)"
                    " ORDER BY id LIMIT 1",
                    (email.strip(),),
                )
            ).fetchone()

    def customer_records(self, emails: Sequence[str]) -> list[CustomerRecords | None]:
        """get_customer, list_subscriptions and list_resolved_tickets of each address, in one query
        (backend.ReadsCustomerRecords): the lists come as JSON arrays, amounts as text."""
        if not emails:
            return []
        query, args = (
            (_ONE_CUSTOMER_RECORDS, emails[0].strip())
            if len(emails) == 1
            else (_CUSTOMER_RECORDS, [email.strip() for email in emails])
        )
        with self._pool.connection() as conn:
            rows = (conn.execute(query, (args,))).fetchall()
        found = {row[0]: _records(row[1:]) for row in rows}
        return [found.get(n) for n in range(1, len(emails) + 1)]

    def list_subscriptions(self, customer_id: str) -> list[Subscription]:
        with self._pool.connection() as conn:
            return (
                conn.cursor(row_factory=class_row(Subscription)).execute(
                    "SELECT id, customer_id, plan, billing_cycle, status, started_on, renews_on, amount"
                    " FROM demo.subscriptions WHERE customer_id = %s ORDER BY started_on, id",
                    (customer_id,),
                )
            ).fetchall()

    def list_invoices(self, customer_id: str) -> list[Invoice]:
        with self._pool.connection() as conn:
            return (
                conn.cursor(row_factory=class_row(Invoice)).execute(
                    "SELECT id, customer_id, amount, currency, issued_on, status, subscription_id"
                    " FROM demo.invoices WHERE customer_id = %s ORDER BY issued_on DESC, id",
                    (customer_id,),
                )
            ).fetchall()

    def list_resolved_tickets(self, customer_id: str) -> list[PastTicket]:
        with self._pool.connection() as conn:
            return (
                conn.cursor(row_factory=class_row(PastTicket)).execute(
                    "SELECT id, customer_id, subject, resolved_on, facts FROM demo.past_tickets"
                    " WHERE customer_id = %s ORDER BY resolved_on NULLS LAST, id",
                    (customer_id,),
                )
            ).fetchall()

    def search_help_center(self, query: str, *, limit: int = 3) -> list[Hit]:
        if self._index is None:
            with self._pool.connection() as conn:
                articles = (
                    conn.cursor(row_factory=class_row(Hit)).execute(
                        "SELECT id, title, body, url FROM demo.kb_articles ORDER BY id"
                    )
                ).fetchall()
            if not articles:
                return []  # not cached: the demo data may be loaded later
            self._index = BM25Index(articles)
        return self._index.search(query, limit=limit)

    def quote_refund(self, *, customer_id: str, invoice_id: str) -> RefundQuote | None:
        with self._pool.connection() as conn:
            row = (
                conn.execute(
                    "SELECT i.amount, i.currency, i.issued_on, coalesce(s.billing_cycle, ''),"
                    " (SELECT coalesce(sum(r.amount), 0) FROM demo.refunds r"
                    "  WHERE r.invoice_id = i.id AND r.status IN ('approved', 'pending'))"
                    " FROM demo.invoices i LEFT JOIN demo.subscriptions s ON s.id = i.subscription_id"
                    " WHERE i.id = %s AND i.customer_id = %s AND i.status = 'paid'",
                    (invoice_id, customer_id),
                )
            ).fetchone()
        if row is None:
            return None
        paid, currency, paid_on, cycle, committed = row
        policy = refund_policy.entitlement(
            invoice_id=invoice_id, paid=paid, paid_on=paid_on, billing_cycle=cycle, as_of=self._today()
        )
        return RefundQuote(
            invoice_id=invoice_id,
            currency=currency,
            paid=paid,
            entitled=policy.amount,
            committed=committed,
            basis=policy.basis,
        )

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
        if amount < CENT or amount != amount.quantize(CENT):
            raise InvalidInput(f"a refund is a whole number of cents, at least 0.01; got {amount}")
        with self._writer(tx) as conn:
            conn.execute(
                "INSERT INTO demo.refunds"
                " (id, ticket_id, customer_id, invoice_id, amount, requested, currency, reason, request_key)"
                " SELECT 'R' || lpad(nextval('demo.refund_numbers')::text, 6, '0'),"
                " %s, %s, i.id, %s, %s, i.currency, %s, %s"
                " FROM demo.invoices i WHERE i.id = %s AND i.customer_id = %s AND %s <= i.amount"
                " ON CONFLICT (request_key) DO NOTHING",
                (ticket_id, customer_id, amount, amount, reason, key, invoice_id, customer_id, amount),
            )
            refund = (
                conn.cursor(row_factory=class_row(RefundRequest)).execute(
                    "SELECT id, invoice_id, amount, currency, reason, status FROM demo.refunds"
                    " WHERE request_key = %s",
                    (key,),
                )
            ).fetchone()
        if refund is None:
            raise InvalidInput(f"invoice {invoice_id} is not the customer's, or paid less than {amount}")
        return refund

    def decide_refund(
        self,
        refund_id: str,
        *,
        approved: bool,
        approver: str,
        note: str,
        key: str,
        tx: psycopg.Connection | None,
        amount: Decimal | None = None,
    ) -> dict[str, Any]:
        """Decide a pending refund; ``amount``: approve this much instead of what was asked (never
        more: the table's CHECK refuses it). An approval that would take the invoice's approved
        refunds past what it paid is recorded as a rejection, with the reason.

        The invoice row is locked first, so a decision on another refund of the same invoice
        waits for this transaction and then sees its outcome (the trigger of
        sql/010_refund_invariants.sql would refuse the update anyway; this turns it into a
        rejection instead of an error)."""
        with self._writer(tx) as conn:
            found = (
                conn.execute(
                    "SELECT r.amount, r.currency, i.id, i.amount FROM demo.refunds r"
                    " JOIN demo.invoices i ON i.id = r.invoice_id WHERE r.id = %s FOR UPDATE OF i, r",
                    (refund_id,),
                )
            ).fetchone()
            reason = ""
            if found is not None and approved:
                asked, currency, invoice_id, paid = found
                granted = asked if amount is None else amount
                already = _count(
                    conn,
                    sql.SQL(
                        "SELECT coalesce(sum(amount), 0) FROM demo.refunds"
                        " WHERE invoice_id = %s AND status = 'approved' AND id <> %s"
                    ),
                    (invoice_id, refund_id),
                    to=Decimal,
                )
                if already + granted > paid:
                    approved = False
                    left = max(paid - already, 0)
                    reason = (
                        f"账单 {invoice_id} 实付 {paid:.2f} {currency},已批准退款 {already:.2f} {currency},"
                        f"剩余可退 {left:.2f} {currency},不足本次的 {granted:.2f} {currency}"
                    )
            conn.execute(
                "UPDATE demo.refunds SET status = %s, decided_by = %s, decided_at = now(), decision_key = %s,"
                " decision_note = %s, amount = CASE WHEN %s THEN coalesce(%s, amount) ELSE amount END"
                " WHERE id = %s AND status = 'pending'",
                (
                    "approved" if approved else "rejected",
                    approver,
                    key,
                    reason or note,
                    approved,
                    amount,
                    refund_id,
                ),
            )
            row = (
                conn.execute(
                    "SELECT status, decision_key, decision_note, amount FROM demo.refunds WHERE id = %s",
                    (refund_id,),
                )
            ).fetchone()
        return {
            "refund_id": refund_id,
            "status": row[0] if row else "missing",
            "decision_key": row[1] if row else None,
            "note": row[2] if row else "",
            "reason": reason,
            "amount": str(row[3]) if row else None,
        }

    def escalate(
        self,
        *,
        ticket_id: str,
        customer_email: str,
        reason: str,
        key: str,
        tx: psycopg.Connection | None,
    ) -> dict[str, Any]:
        with self._writer(tx) as conn:
            row = (
                conn.execute(
                    "INSERT INTO demo.escalations (ticket_id, customer_email, reason, idempotency_key)"
                    " VALUES (%s, %s, %s, %s) ON CONFLICT (idempotency_key) DO UPDATE SET reason = "
                    "demo.escalations.reason"
                    " RETURNING id",
                    (ticket_id, customer_email, reason, key),
                )
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
            # One statement: the closure, and the ticket's facts joining the customer's history
            # (a later round of the same ticket replaces them, so one ticket counts once in the
            # profile).
            conn.execute(
                "WITH closed AS (INSERT INTO demo.ticket_closures"
                "  (ticket_id, customer_email, resolution, idempotency_key)"
                "  VALUES (%(t)s, %(e)s, %(r)s, %(k)s) ON CONFLICT (idempotency_key) DO NOTHING)"
                " INSERT INTO demo.past_tickets (id, customer_id, subject, resolved_on, facts)"
                " SELECT %(t)s, c.id, t.subject, %(d)s, %(f)s FROM demo.customers c, supportbot.tickets t"
                " WHERE lower(c.email) = lower(%(e)s) AND t.id = %(t)s"
                " ON CONFLICT (id) DO UPDATE SET facts = EXCLUDED.facts, resolved_on = EXCLUDED.resolved_on",
                {
                    "t": ticket_id,
                    "e": customer_email,
                    "r": resolution,
                    "k": key,
                    "d": self._clock().date(),
                    "f": Jsonb(dict(facts)),
                },
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
            found = (
                conn.execute("SELECT id FROM demo.customers WHERE lower(email) = lower(%s)", (email,))
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
                ).format(sql.Identifier("demo", table), sql.SQL(where))
                counts[f"demo.{table}"] = _count(conn, query, by)
        return counts

    def reset_data(self, *, tx: psycopg.Connection) -> dict[str, int]:
        """Empty every table of the demo schema (sequences keep counting); rows per table."""
        tables = [
            row[0]
            for row in (
                tx.execute("SELECT tablename FROM pg_tables WHERE schemaname = 'demo' ORDER BY tablename")
            ).fetchall()
        ]
        names = [sql.Identifier("demo", t) for t in tables]
        if not names:
            return {}
        tx.execute(sql.SQL("LOCK TABLE {} IN ACCESS EXCLUSIVE MODE").format(sql.SQL(", ").join(names)))
        counts = {
            f"demo.{t}": _count(tx, sql.SQL("SELECT count(*) FROM {}").format(n))
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


# One row per address found, numbered from 1 in the order given: the customer get_customer finds
# for it, with the lists in the orders list_subscriptions and list_resolved_tickets use. JSON has
# no decimal or date type, so amounts travel as text and days as ISO strings.
_RECORDS_OF = (
    "SELECT e.n, c.id, c.name, c.email, c.company, c.phone, c.is_vip,"
    " (SELECT coalesce(jsonb_agg(jsonb_build_array(s.id, s.plan, s.billing_cycle, s.status, s.started_on,"
    "   s.renews_on, s.amount::text) ORDER BY s.started_on, s.id), '[]')"
    "  FROM demo.subscriptions s WHERE s.customer_id = c.id),"
    " (SELECT coalesce(jsonb_agg(jsonb_build_array(t.id, t.subject, t.resolved_on, t.facts)"
    "   ORDER BY t.resolved_on NULLS LAST, t.id), '[]')"
    "  FROM demo.past_tickets t WHERE t.customer_id = c.id)"
    " FROM {addresses}"
    " CROSS JOIN LATERAL (SELECT * FROM demo.customers WHERE lower(email) = lower(e.email)"
    "  ORDER BY id LIMIT 1) c"
)
_CUSTOMER_RECORDS = _RECORDS_OF.format(addresses="unnest(%s::text[]) WITH ORDINALITY AS e(email, n)")
# The same for one address, as a round asks: a plan made for any array is costed for ten addresses,
# so the server planned the array's statement anew at every call (half its time); this one's plan
# is made once per connection.
_ONE_CUSTOMER_RECORDS = _RECORDS_OF.format(addresses="(SELECT %s::text, 1::bigint) AS e(email, n)")


def _records(row: Sequence[Any]) -> CustomerRecords:
    customer = Customer(*row[:6])
    return CustomerRecords(
        customer=customer,
        subscriptions=tuple(
            Subscription(
                sid,
                customer.id,
                plan,
                cycle,
                status,
                date.fromisoformat(started),
                _day(renews),
                Decimal(amount),
            )
            for sid, plan, cycle, status, started, renews, amount in row[6]
        ),
        resolved_tickets=tuple(
            PastTicket(tid, customer.id, subject, _day(resolved), facts)
            for tid, subject, resolved, facts in row[7]
        ),
    )


def _day(value: str | None) -> date | None:
    return None if value is None else date.fromisoformat(value)


def _count(
    conn: psycopg.Connection,
    query: sql.Composed | sql.SQL,
    args: Any = None,
    *,
    to: Callable[[Any], Any] = int,
) -> Any:
    """The one value of an aggregate (count, sum), which always has its row."""
    row = (conn.execute(query, args)).fetchone()
    assert row is not None
    return to(row[0])


def load_demo_data(conn: psycopg.Connection[Any]) -> dict[str, int]:
    """Upsert every demo row in one transaction; return how many rows each table was given.

    Idempotent: a second run leaves the same rows. Rows a host added to these tables are left alone.
    """
    counts: dict[str, int] = {}
    with conn.transaction(), conn.cursor() as cur:
        for table, statement, rows in demo_batches():
            cur.executemany(statement, rows)
            counts[table] = len(rows)
    return counts
