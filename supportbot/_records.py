"""Business records: what the backend returns and the steps, memory and profile read.

They are frozen so a step can hand them to the state without anyone changing them later.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import date, datetime
from decimal import Decimal
from typing import Any, Literal

RefundStatus = Literal["pending", "approved", "rejected"]
# The smallest amount of money a refund may move, and the step every amount is a multiple of.
CENT = Decimal("0.01")


@dataclass(frozen=True, slots=True)
class Customer:
    id: str
    name: str
    email: str
    company: str = ""
    phone: str = ""
    is_vip: bool = False


@dataclass(frozen=True, slots=True)
class Subscription:
    id: str
    customer_id: str
    plan: str
    billing_cycle: str
    status: str
    started_on: date
    renews_on: date | None
    amount: Decimal


@dataclass(frozen=True, slots=True)
class CustomerRecords:
    """A customer with what their profile is built from, as one read returns them
    (backend.ReadsCustomerRecords): subscriptions in start order, resolved tickets oldest first."""

    customer: Customer
    subscriptions: tuple[Subscription, ...]
    resolved_tickets: tuple[PastTicket, ...]


@dataclass(frozen=True, slots=True)
class Invoice:
    id: str
    customer_id: str
    amount: Decimal
    currency: str
    issued_on: date
    status: str
    subscription_id: str | None = None


@dataclass(frozen=True, slots=True)
class PastTicket:
    """A ticket the business system closed, as the backend lists it; the customer profile reads these.

    ``facts`` holds: category (str, required), error_codes, requests, promises, ids, dates (lists
    of str), amounts (list of str or numbers) and resolution (str), all optional.
    """

    id: str
    customer_id: str
    subject: str
    resolved_on: date | None
    facts: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class Hit:
    """One help-center article found for the ticket."""

    id: str
    title: str
    body: str
    url: str = ""
    score: float = 0.0


@dataclass(frozen=True, slots=True)
class RefundRequest:
    id: str
    invoice_id: str
    amount: Decimal
    currency: str
    reason: str
    status: RefundStatus = "pending"
    # The customer's own words for the amount ("两百块"), shown to the approver beside ``amount``;
    # empty when they wrote none and the refundable amount was requested.
    asked: str = ""


@dataclass(frozen=True, slots=True)
class RefundBasis:
    """How a refund quote was computed: a kind and its values, which the reply, the prompt and the
    console word in their reader's language (the ``findings`` catalogue, ``basis.KIND``).

    The kinds worded there, with their values (strings, as the reader should see them):

    - ``pro_rata``: invoice, paid_on, paid, period, as_of, used, unused, amount (an annual plan
      refunded for its unused days)
    - ``not_annual``: invoice, paid_on, paid (only annual plans are refunded)
    - ``window_passed``: invoice, paid_on, paid, as_of, days, window (asked too long after payment)
    - ``text``: text, the business system's own words, shown as written in every language
      (:meth:`text`); the way for a policy whose computation no kind describes
    """

    kind: str
    values: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def of(cls, kind: str, **values: object) -> RefundBasis:
        return cls(kind, {name: str(value) for name, value in values.items()})

    @classmethod
    def text(cls, words: str) -> RefundBasis:
        """A basis in the business system's own words, shown as written."""
        return cls("text", {"text": words})


@dataclass(frozen=True, slots=True)
class RefundQuote:
    """What the business system would refund on one invoice now, and how it got there.

    ``entitled`` is what the refund policy allows on the invoice (never more than ``paid``);
    ``committed`` the refunds of that invoice already approved or waiting for approval, in every
    ticket; ``basis`` the computation, quoted in the reply in the customer's language.

    A ``basis`` given as a string (the form of 0.2) is deprecated: it is taken as
    ``RefundBasis.text(basis)``, shown as written.
    """

    invoice_id: str
    currency: str
    paid: Decimal
    entitled: Decimal
    committed: Decimal
    basis: RefundBasis

    def __post_init__(self) -> None:
        if isinstance(self.basis, str):
            warnings.warn(
                "RefundQuote(basis=str) is deprecated: pass RefundBasis.text(words) for a basis in "
                "your own words, or a RefundBasis kind the catalogue words in each language",
                DeprecationWarning,
                stacklevel=3,
            )
            object.__setattr__(self, "basis", RefundBasis.text(self.basis))

    @property
    def refundable(self) -> Decimal:
        """What a new request on this invoice may still ask for."""
        return max(Decimal(0), min(self.entitled, self.paid) - self.committed)


@dataclass(frozen=True, slots=True)
class ApprovalDecision:
    approved: bool
    approver: str
    note: str = ""
    decided_at: datetime | None = None
    amount: Decimal | None = None  # approved less than asked (an edited approval); None: as asked


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One call to the business system, as the tool log keeps it."""

    name: str
    args: dict[str, Any] = field(default_factory=dict)
    result: Any = None
    error: str | None = None
    duration_ms: float = 0.0
    round: int = 0
    step: str = ""
    idx: int | None = None  # position in the ticket's tool log; None until the reducer appends it


@dataclass(frozen=True, slots=True)
class Spend:
    """Totals over some model calls: a round's in ``SupportState.round_spend``; spends add up with ``+``."""

    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float = 0.0

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def __add__(self, other: Spend) -> Spend:
        return Spend(
            calls=self.calls + other.calls,
            prompt_tokens=self.prompt_tokens + other.prompt_tokens,
            completion_tokens=self.completion_tokens + other.completion_tokens,
            cost=self.cost + other.cost,
        )


# -- what the account lookup found (rendered in words by reply/_findings.py) --------------------

FindingKind = Literal[
    "subscription",  # plan, cycle, status, renews_on ("" when it does not renew)
    "invoice",  # id, amount, currency, issued_on, status
    "refund_basis",  # basis_kind, the RefundBasis values, committed ("" when none), refundable
    "refund_filed",  # refund, amount, currency: a request waiting for a human
    "refund_repeat",  # invoice, refunds: this ticket already asked for a refund of the invoice
    "refund_invalid_amount",  # amount
    "refund_over_limit",  # asked, invoice, refundable
    "refund_nothing_left",  # invoice
    "refund_not_theirs",  # invoices
    "refund_not_paid",  # invoice, status
    "refund_not_quoted",  # invoice: the business system has no quote for it
    "refund_no_paid_invoice",
    "refund_confirm_amount",  # written, invoice, refundable, currency: asked back, nothing filed
    "refund_confirm_invoice",  # count, invoices (the latest three): no amount or id says which
]
# The outcomes of a refund request, which a reply states; the rest is account data.
REFUND_OUTCOMES: frozenset[FindingKind] = frozenset(
    {
        "refund_basis",
        "refund_repeat",
        "refund_invalid_amount",
        "refund_over_limit",
        "refund_nothing_left",
        "refund_not_theirs",
        "refund_not_paid",
        "refund_not_quoted",
        "refund_no_paid_invoice",
        "refund_confirm_amount",
        "refund_confirm_invoice",
    }
)
# For the model only: the reply goes out after a human decided, and the system states the decision.
MODEL_ONLY: frozenset[FindingKind] = frozenset({"refund_filed"})


@dataclass(frozen=True, slots=True)
class Finding:
    kind: FindingKind
    fields: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def of(cls, kind: FindingKind, **fields: object) -> Finding:
        return cls(kind, {name: str(value) for name, value in fields.items()})
