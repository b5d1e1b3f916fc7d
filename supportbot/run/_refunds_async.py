"""Refunds: a request within what the business's policy still allows, and a human's decision.

The policy and its numbers belong to the business system (its ``quote_refund``); this module
files a request only within the quote, says how it was computed, and applies the decision inside
the transaction that records it (``decide``), where the business system may turn an approval into
a rejection. Nothing here approves anything on its own.
"""

from __future__ import annotations

import dataclasses
import re
from decimal import Decimal
from typing import Any

from pydantic import TypeAdapter

from .._records import CENT, ApprovalDecision, Finding, Invoice, RefundQuote, RefundRequest
from .._state import StateUpdate, SupportState
from ..i18n import Language, translator
from ..memory._mask import mask_text
from ..memory._money import Money, bare_figure, maybe_money, money_in
from ..reply._findings import basis_finding
from ._deps_async import Deps, ToolRecorder
from ._speech import says

Update = StateUpdate

_INVOICE_ID = re.compile(r"(?<![A-Za-z0-9-])INV-[A-Za-z0-9]+(?:-[A-Za-z0-9]+)*")
_REFUND_WORD = re.compile(r"退|refund|money back", re.IGNORECASE)
# Asking for a refund, as opposed to asking about one.
_REFUND_ASK = re.compile(
    r"申请|要求|想退|要退|退给我|给我退|帮我退|\brefund me\b|\b(?:request|want|need|like) a refund\b",
    re.IGNORECASE,
)
_REFUND_ADAPTER: TypeAdapter[RefundRequest] = TypeAdapter(RefundRequest)


@dataclasses.dataclass(frozen=True, slots=True)
class Asked:
    """What a refund message asks for. ``amount`` None: it names no amount. ``unclear``: the
    customer's words for amounts that could each be the one asked ("200 元", "300 元"), or one in
    another currency; the customer is asked to confirm. ``unreadable``: written as money but no
    amount (a 30-digit run), refused."""

    amount: Decimal | None = None
    words: str = ""
    currency: str | None = None
    unclear: tuple[str, ...] = ()
    unreadable: str = ""


def asked_amount(message: str) -> Asked:
    """The amount a refund message asks for: the one amount written after the first mention of a
    refund ("付了 3588 元,想退 1000 元" asks 1000), else the one amount in the message. Anything
    less certain is not guessed: two different amounts, or a bare number where an amount is
    expected ("退款 200"), are ``unclear``."""
    word = _REFUND_WORD.search(message)
    written = money_in(message)
    if broken := [m.text for m in written if m.value is None]:
        return Asked(unreadable=broken[0])
    after = [m for m in written if word and m.start >= word.start()]
    candidates = after or written
    values = {(m.currency, m.value) for m in candidates}
    # Beside an amount, a figure the reader would not take as money may still be one: never file
    # one of them without asking.
    maybe = maybe_money(message, word.start() if word else 0)
    loose = [k for k in maybe if not any(k in m.text for m in candidates)]
    if len(values) > 1 or (values and loose):
        return Asked(unclear=tuple(dict.fromkeys([*(m.text for m in candidates), *loose])))
    if candidates:
        first: Money = candidates[0]
        return Asked(amount=first.value, words=first.text, currency=first.currency)
    # A number with no currency right after the refund word ("退款 200") is likely the amount, but
    # not certainly (of what currency?): it is confirmed, never guessed.
    if word and (bare := bare_figure(message, word.end())):
        return Asked(unclear=(bare,))
    return Asked()


async def request(
    state: SupportState, deps: Deps, invoices: list[Invoice], tools: ToolRecorder, *, latest: str
) -> tuple[RefundRequest | None, tuple[Finding, ...]]:
    """Open a refund request only for this customer's paid invoice, for the amount the customer
    wrote (or, when they wrote none, what the business's policy still allows: ``quote_refund``),
    and say how that was computed (the findings to show the model).

    Nothing here approves anything: the request waits for a human (``approval``), whatever the
    customer's message says. An unusable amount is refused, and an uncertain one (two amounts,
    another currency, no amount when several invoices could be meant) is asked back, before
    anything is written.
    """
    asked = asked_amount(latest)
    if asked.unreadable:
        return None, (Finding.of("refund_invalid_amount", amount=_clip(asked.unreadable)),)
    invoice = _refund_invoice(latest, invoices, amount_named=bool(asked.words or asked.unclear))
    if isinstance(invoice, Finding):
        return None, (invoice,)
    earlier = _earlier_refunds(state, invoice.id)
    if earlier and not (asked.words or asked.unclear) and not _REFUND_ASK.search(latest):
        # "When does my refund arrive?" is triaged as a refund too; it asks about one, not for one.
        ids = "、".join(refund_id for refund_id, _ in earlier)
        return None, (Finding.of("refund_repeat", invoice=invoice.id, refunds=ids),)
    amount = asked.amount
    if amount is not None and (amount < CENT or amount != amount.quantize(CENT)):
        return None, (Finding.of("refund_invalid_amount", amount=asked.words),)
    assert state.customer is not None
    customer_id = state.customer.id
    quote: RefundQuote | None = await tools.call(
        "quote_refund", deps.backend.quote_refund, customer_id=customer_id, invoice_id=invoice.id
    )
    if quote is None:
        return None, (Finding.of("refund_not_quoted", invoice=invoice.id),)
    basis = _basis(quote)
    if quote.refundable < CENT:
        return None, (basis, Finding.of("refund_nothing_left", invoice=invoice.id))
    unclear = asked.unclear or ((asked.words,) if asked.currency not in (None, quote.currency) else ())
    if unclear:
        confirm = Finding.of(
            "refund_confirm_amount",
            written="、".join(unclear),
            invoice=invoice.id,
            refundable=f"{quote.refundable:.2f}",
            currency=quote.currency,
        )
        return None, (basis, confirm)
    if amount is None:
        amount = quote.refundable  # no amount written: what the policy allows on the one invoice
    if amount > quote.refundable:
        over = Finding.of(
            "refund_over_limit",
            asked=f"{amount:.2f}",
            invoice=invoice.id,
            refundable=f"{quote.refundable:.2f}",
        )
        return None, (basis, over)
    args: dict[str, Any] = {
        "ticket_id": state.ticket.id,
        "customer_id": customer_id,
        "invoice_id": invoice.id,
        "amount": amount,
        "reason": _excerpt(mask_text(latest) if deps.settings.mask_pii else latest, asked.words),
    }
    result = await deps.require_effects().call(
        "refund_request", tools, "create_refund_request", deps.backend.create_refund_request, **args
    )
    # The customer's own words for the amount go with the request to the approver.
    refund = dataclasses.replace(_REFUND_ADAPTER.validate_python(result), asked=asked.words)
    # The reply goes out only after a person decided, and finalize states that decision: the
    # draft must not announce a pending request (a refund_filed finding is for the model only).
    filed = Finding.of("refund_filed", refund=refund.id, amount=refund.amount, currency=refund.currency)
    return refund, (basis, filed)


_REASON_CHARS = 200


def _clip(words: str, limit: int = 24) -> str:
    return words if len(words) <= limit else words[: limit - 1] + "…"


def _excerpt(message: str, words: str) -> str:
    """At most 200 characters of the message, holding the customer's words for the amount."""
    at = message.find(words) if words else 0
    start = max(0, min(at - _REASON_CHARS // 2, len(message) - _REASON_CHARS))
    return ("…" if start else "") + message[start : start + _REASON_CHARS - (1 if start else 0)]


def _basis(quote: RefundQuote) -> Finding:
    committed = f"{quote.committed:.2f}" if quote.committed else ""
    return basis_finding(quote.basis, committed=committed, refundable=f"{quote.refundable:.2f}")


def _earlier_refunds(state: SupportState, invoice_id: str) -> list[tuple[str, Decimal]]:
    """The refunds this ticket already requested for the invoice (id, amount), from its tool log."""
    found = []
    for call in state.tool_log:
        if (
            call.name == "create_refund_request"
            and call.error is None
            and call.args.get("invoice_id") == invoice_id
        ):
            result = call.result if isinstance(call.result, dict) else {}
            found.append((str(result.get("id") or "?"), Decimal(str(call.args.get("amount") or 0))))
    return found


def _refund_invoice(message: str, invoices: list[Invoice], *, amount_named: bool) -> Invoice | Finding:
    """The invoice the customer names (it must be theirs and paid), else their latest paid one;
    when there is none, or several could be meant and no amount says which, the finding that says
    why."""
    named = list(dict.fromkeys(_INVOICE_ID.findall(message)))
    if named:
        own = [i for i in invoices if i.id in named]
        if not own:
            return Finding.of("refund_not_theirs", invoices="、".join(named))
        if own[0].status != "paid":
            return Finding.of("refund_not_paid", invoice=own[0].id, status=own[0].status)
        return own[0]
    paid = [i for i in invoices if i.status == "paid"]
    if len(paid) > 1 and not amount_named:
        latest = "、".join(i.id for i in paid[:3]) + ("…" if len(paid) > 3 else "")
        return Finding.of("refund_confirm_invoice", count=len(paid), invoices=latest)
    return paid[0] if paid else Finding.of("refund_no_paid_invoice")


async def decide(state: SupportState, deps: Deps, decision: ApprovalDecision) -> Update:
    """Apply a human's decision to the paused round's refund; the engine runs it inside the
    transaction that records the decision.

    The business system may turn an approval into a rejection (the invoice has nothing left to
    refund, say, because another ticket's refund of it was approved first). The decision then
    recorded, returned to the approver and stated to the customer is that rejection, with its
    reason as the note.
    """
    refund = state.refund_request
    assert refund is not None
    tools = deps.tools()
    result = await apply_decision(deps, tools, refund, decision)
    outcome = result if isinstance(result, dict) else {}
    if decision.approved and outcome.get("status") != "approved":
        reason = outcome.get("reason") or says(state)(
            "refund.not_approvable", refund=refund.id, status=outcome.get("status")
        )
        decision = dataclasses.replace(decision, approved=False, note=str(reason), amount=None)
    return {"approval": decision, "tool_log": tools.calls}


async def apply_decision(
    deps: Deps, tools: ToolRecorder, refund: RefundRequest, decision: ApprovalDecision
) -> object:
    # ``amount`` only for an edited approval: a backend written before edits keeps its signature.
    edited: dict[str, Any] = {}
    if decision.approved and decision.amount is not None:
        edited["amount"] = decision.amount
    return await deps.require_effects().call(
        "refund_decision",
        tools,
        "decide_refund",
        deps.backend.decide_refund,
        refund_id=refund.id,
        approved=decision.approved,
        approver=decision.approver,
        note=decision.note,
        **edited,
    )


def decision_text(refund: RefundRequest, decision: ApprovalDecision, lang: Language) -> str:
    """The human's decision, stated by the system (never by a draft: see guardrails), in ``lang``."""
    says = translator("round", lang)
    ids = {"refund": refund.id, "amount": refund.amount, "currency": refund.currency}
    if refund.status == "approved" and decision.amount is not None:
        text = says("refund.approved_edited", approved=decision.amount, **ids)
        return text + (says("refund.note", note=decision.note) if decision.note else "")
    if refund.status == "approved":
        return says("refund.approved", **ids)
    return says("refund.rejected", refund=refund.id) + (
        says("refund.reason", note=decision.note) if decision.note else ""
    )
