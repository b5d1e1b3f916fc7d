# Generated from base_async.py by scripts/async_to_sync.py: edit that file and run the script.
"""What supportbot needs from the business system. A host application implements this protocol:
``AsyncBackend`` (coroutines) for ``AsyncSupportBot``, ``Backend`` (``supportbot.backend.base``,
generated from this module) for ``SupportBot``. The two are the same contract.

Side-effecting calls take ``key``, the engine's idempotency key (ticket:round:step:kind): the same
key twice must act once and return the first result. They also take ``tx``, the engine's open
transaction: a backend on the same database writes through it so the effect and the engine's
record of it commit together; a backend elsewhere ignores it and relies on ``key``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from decimal import Decimal
from typing import Any, Literal, Protocol, runtime_checkable

import psycopg

from .._records import (
    Customer,
    CustomerRecords,
    Hit,
    Invoice,
    PastTicket,
    RefundQuote,
    RefundRequest,
    Subscription,
)
from .._records import RefundBasis as RefundBasis  # a host builds one for RefundQuote.basis


@runtime_checkable
class Backend(Protocol):
    def get_customer(self, email: str) -> Customer | None: ...

    def list_subscriptions(self, customer_id: str) -> list[Subscription]: ...

    def list_invoices(self, customer_id: str) -> list[Invoice]: ...

    def search_help_center(self, query: str, *, limit: int = 3) -> list[Hit]: ...

    def list_resolved_tickets(self, customer_id: str) -> list[PastTicket]:
        """Resolved tickets with their structured facts; the profile is built from these."""
        ...

    def quote_refund(self, *, customer_id: str, invoice_id: str) -> RefundQuote | None:
        """What a new refund request on the customer's invoice may ask for, by the business's
        refund policy, net of the refunds of that invoice approved or pending in any ticket.
        None if the invoice is not the customer's. Its ``basis`` is a :class:`RefundBasis`: a kind
        the catalogue words in each language, or ``RefundBasis.text(words)`` in your own words."""
        ...

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
        """File a request for a human to decide; ``amount`` is at least 0.01 and within the quote."""
        ...

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
        """Record the human's decision; the engine calls it inside the transaction that records
        the decision on its side. Returns ``status`` ("approved" or "rejected") and, when an
        approval could not be applied, ``reason``: e.g. the approved refunds of the invoice would
        add up past what was paid. Such an approval must become a rejection atomically, and hold
        against approvals racing in other tickets (the demo locks the invoice row).

        ``amount``: the reviewer approved less than was asked (an edited approval; never more,
        which the engine checks first). It is passed only for such an approval, so a backend
        written before 0.3 keeps working until a reviewer edits an amount, which then fails
        before anything is decided. Return the amount applied as ``amount``."""
        ...

    def escalate(
        self,
        *,
        ticket_id: str,
        customer_email: str,
        reason: str,
        key: str,
        tx: psycopg.Connection | None,
    ) -> dict[str, Any]: ...

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
        """Close the ticket and keep its structured facts (category, codes, amounts, requests …)."""
        ...


@runtime_checkable
class ForgetsCustomers(Protocol):
    """Optional: a backend that can erase a customer from the business system.

    ``SupportBot.forget_customer`` calls it inside the transaction that deletes the engine's own
    rows, passing ``tx``; a backend on the same database writes through it so both commit or
    neither does. A backend elsewhere ignores ``tx`` and must be safe to call again (the engine's
    part may roll back after it ran). Returns rows deleted per ``schema.table``.
    """

    def forget_customer(
        self, email: str, *, ticket_ids: Sequence[str], tx: psycopg.Connection | None
    ) -> dict[str, int]: ...


@runtime_checkable
class ListsPlans(Protocol):
    """Optional: the business system's plan catalogue. The facts ledger pins a plan a customer
    names when it is in the catalogue, besides the forms it knows (``…版``); keep it cheap, it is
    read once per compression."""

    def list_plans(self) -> list[str]: ...


@runtime_checkable
class ReadsCustomerRecords(Protocol):
    """Optional: customers with the records their profiles are built from, in one read.

    Every round starts with a customer, their subscriptions and their resolved tickets
    (``get_customer``, ``list_subscriptions``, ``list_resolved_tickets``). A backend that returns
    all three at once, for many customers at once, saves each round those trips: a worker reads the
    customers of every ticket it claims in one call, before their rounds start (on the thread that
    hands out the work: keep it one quick query). The result has one entry per address, in order,
    equal to what the three calls return (None: no such customer). Should it raise, each round
    reads its own customer."""

    def customer_records(self, emails: Sequence[str]) -> list[CustomerRecords | None]: ...


@runtime_checkable
class ReadsEnginePool(Protocol):
    """Optional: a backend whose reads are short queries through the engine's own connection pool
    (the demo's). A step that only reads the business system (load_customer, retrieve) then holds
    one pooled connection while it runs, so its reads share one checkout instead of queueing for
    the pool once each. A backend that calls other services must not declare it: a database
    connection would be held while they answer."""

    reads_engine_pool: Literal[True]


@runtime_checkable
class ResetsData(Protocol):
    """Optional: a demo or test backend whose data ``SupportBot.reset`` may clear.

    Called inside the transaction that clears the engine's tables, so a reseed never finds one
    side cleared and the other not. A host's production backend should not implement it.
    """

    def reset_data(self, *, tx: psycopg.Connection) -> dict[str, int]: ...
