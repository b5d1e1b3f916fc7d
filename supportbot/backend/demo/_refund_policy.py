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

from ..._records import CENT

REFUND_WINDOW_DAYS = 30
REFUNDABLE_CYCLES = frozenset({"年付"})


@dataclass(frozen=True, slots=True)
class Entitlement:
    amount: Decimal  # what the policy refunds, before refunds already made on the invoice
    basis: str  # the computation, in words the customer can check


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
    head = f"账单 {invoice_id} 于 {paid_on.isoformat()} 实付 {paid:.2f} 元"
    if billing_cycle not in REFUNDABLE_CYCLES:
        return Entitlement(
            Decimal(0),
            f"{head},不是年付套餐的账单;按退款政策只有年付套餐可以退款,月付套餐可以随时取消自动续费。",
        )
    used = max(0, (as_of - paid_on).days)
    if used > REFUND_WINDOW_DAYS:
        return Entitlement(
            Decimal(0),
            f"{head},至 {as_of.isoformat()} 已过 {used} 天,"
            f"超过付款后 {REFUND_WINDOW_DAYS} 天的退款期限,按退款政策不能退款。",
        )
    period = (_one_year_after(paid_on) - paid_on).days
    unused = period - used
    amount = min(paid, (paid * unused / period).quantize(CENT, ROUND_HALF_UP))
    return Entitlement(
        amount,
        f"{head},年付按 {period} 天计,至 {as_of.isoformat()} 已使用 {used} 天,"
        f"按未使用的 {unused} 天折算可退 {amount:.2f} 元。",
    )


def _one_year_after(day: date) -> date:
    try:
        return day.replace(year=day.year + 1)
    except ValueError:  # 29 February
        return day.replace(year=day.year + 1, day=28)
