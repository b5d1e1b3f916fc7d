"""A host application's own business system, as ``SUPPORTBOT_BACKEND=support.host_backend:make`` names it.

It is not the demo backend: it is a class of its own with its own connection pool (a host's
business system is reached on its own terms), and it keeps every refund decision it is asked to
apply in a table of its own, ``host.decisions``, so a test can tell that a decision reached the
host and not the demo tables by accident. For the records it serves (customers, invoices, the
refund policy) it reads the demo schema's rows through a DemoBackend it holds: the data a host
has, not its code path.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import psycopg
from psycopg_pool import ConnectionPool

from supportbot import Customer, Hit, Invoice, PastTicket, RefundRequest, Settings, Subscription
from supportbot._records import RefundQuote
from supportbot.backend.demo import DemoBackend
from supportbot.backend.demo._data import demo_clock

HOST_SCHEMA = """
CREATE SCHEMA IF NOT EXISTS host;
CREATE TABLE IF NOT EXISTS host.decisions (
    refund_id text PRIMARY KEY, approved boolean NOT NULL, approver text NOT NULL, note text NOT NULL,
    amount numeric(12, 2)
);
"""


class HostBackend:
    """Delegates reads to the demo rows; records each refund decision in ``host.decisions``."""

    def __init__(self, url: str) -> None:
        self._pool = ConnectionPool(url, min_size=1, max_size=2, open=True, kwargs={"autocommit": True})
        with self._pool.connection() as conn:
            conn.execute(HOST_SCHEMA)
        self._rows = DemoBackend(self._pool, clock=demo_clock())

    # The Backend protocol's reads and the requests, served from the demo rows. Nothing optional
    # is declared (no ReadsEnginePool, ResetsData, ReadsCustomerRecords): a host's system is
    # reached through its own connections and is never reset by supportbot.
    def get_customer(self, email: str) -> Customer | None:
        return self._rows.get_customer(email)

    def list_subscriptions(self, customer_id: str) -> list[Subscription]:
        return self._rows.list_subscriptions(customer_id)

    def list_invoices(self, customer_id: str) -> list[Invoice]:
        return self._rows.list_invoices(customer_id)

    def search_help_center(self, query: str, *, limit: int = 3) -> list[Hit]:
        return self._rows.search_help_center(query, limit=limit)

    def list_resolved_tickets(self, customer_id: str) -> list[PastTicket]:
        return self._rows.list_resolved_tickets(customer_id)

    def quote_refund(self, *, customer_id: str, invoice_id: str) -> RefundQuote | None:
        return self._rows.quote_refund(customer_id=customer_id, invoice_id=invoice_id)

    def create_refund_request(self, **request: Any) -> RefundRequest:
        return self._rows.create_refund_request(**{**request, "tx": None})

    def escalate(self, **escalation: Any) -> Any:
        return self._rows.escalate(**{**escalation, "tx": None})

    def finish_ticket(self, **finished: Any) -> Any:
        return self._rows.finish_ticket(**{**finished, "tx": None})

    def decide_refund(
        self,
        *,
        refund_id: str,
        approved: bool,
        approver: str,
        note: str,
        key: str,
        tx: psycopg.Connection | None,
        **more: Any,
    ) -> Any:
        result = self._rows.decide_refund(
            refund_id=refund_id, approved=approved, approver=approver, note=note, key=key, tx=None, **more
        )
        amount: Decimal | None = more.get("amount")
        with self._pool.connection() as conn:
            conn.execute(
                "INSERT INTO host.decisions (refund_id, approved, approver, note, amount)"
                " VALUES (%s, %s, %s, %s, %s) ON CONFLICT (refund_id) DO NOTHING",
                (refund_id, approved, approver, note, amount),
            )
        return result

    def close(self) -> None:
        self._pool.close()


def make(settings: Settings) -> HostBackend:
    assert settings.database_url is not None
    return HostBackend(settings.database_url)
