"""The demo help center's refund policy (KB-refund-001), as one pure function.

Annual plans are refundable within ``REFUND_WINDOW_DAYS`` days of payment, pro rata to the days
not yet used; other billing cycles and older payments are not refundable; a refund never exceeds
what was paid. ``DemoBackend.quote_refund`` applies it; the database enforces the parts that do
not depend on the calendar (sql/010_refund_invariants.sql).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date
from decimal import ROUND_HALF_UP, Decimal

from ..._records import CENT, RefundBasis

REFUND_WINDOW_DAYS = 30
REFUNDABLE_CYCLES = frozenset({"年付"})


@dataclass(frozen=True, slots=True)
class Entitlement:
    amount: Decimal  # what the policy refunds, before refunds already made on the invoice
    basis: RefundBasis  # the computation, which the reply words in the customer's language


def entitlement(
    *, invoice_id: str, paid: Decimal, paid_on: date, billing_cycle: str, as_of: date
) -> Entitlement:
    """What the policy refunds on a paid invoice as of ``as_of``, and why.

    Pro rata: ``paid × unused days / days of the paid year``, rounded half up to the cent, where
    the paid year runs from ``paid_on`` to the same day a year later (365 or 366 days) and the
    days used are the whole days since payment (the day of payment itself counts as unused, so
    a refund asked on that day returns everything). Zero outside the window or for a cycle the
    policy does not refund. Never negative, never more than ``paid``.
    """
    paid_as = {"invoice": invoice_id, "paid_on": paid_on.isoformat(), "paid": f"{paid:.2f}"}
    if billing_cycle not in REFUNDABLE_CYCLES:
        return Entitlement(Decimal(0), RefundBasis.of("not_annual", **paid_as))
    used = max(0, (as_of - paid_on).days)
    if used > REFUND_WINDOW_DAYS:
        late = RefundBasis.of(
            "window_passed", **paid_as, as_of=as_of.isoformat(), days=used, window=REFUND_WINDOW_DAYS
        )
        return Entitlement(Decimal(0), late)
    period = (_one_year_after(paid_on) - paid_on).days
    unused = period - used
    amount = min(paid, (paid * unused / period).quantize(CENT, ROUND_HALF_UP))
    basis = RefundBasis.of(
        "pro_rata",
        **paid_as,
        period=period,
        as_of=as_of.isoformat(),
        used=used,
        unused=unused,
        amount=f"{amount:.2f}",
    )
    return Entitlement(amount, basis)


def _one_year_after(day: date) -> date:
    try:
        return day.replace(year=day.year + 1)
    except ValueError:  # 29 February
        return day.replace(year=day.year + 1, day=28)
