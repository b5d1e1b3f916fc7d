"""The step functions. Each reads the state and its deps and returns only what it changes."""

from __future__ import annotations

import dataclasses
import re
from decimal import Decimal, InvalidOperation
from typing import Any

from pydantic import BaseModel, TypeAdapter

from . import context
from .deps import Deps
from .errors import ModelError
from .llm.base import Completion
from .memory.facts import update_ledger
from .records import ApprovalDecision, Invoice, RefundRequest
from .state import Review, SupportState, Triage, Turn

Update = dict[str, Any]

_CITATION = re.compile(r"\[(KB-[A-Za-z0-9-]+)\]")
_AMOUNT = re.compile(r"(?:[¥￥]\s*(\d+(?:\.\d{1,2})?))|(\d+(?:\.\d{1,2})?)\s*(?:元|块|CNY|RMB)", re.IGNORECASE)
_REFUND_ADAPTER: TypeAdapter[RefundRequest] = TypeAdapter(RefundRequest)


def load_customer(state: SupportState, deps: Deps) -> Update:
    tools = deps.tools()
    customer = tools.call("get_customer", deps.backend.get_customer, email=state.ticket.customer_email)
    update: Update = {"customer": customer, "tool_log": tools.calls}
    if customer is not None and deps.profiles is not None:
        update["profile"] = deps.profiles.for_customer(customer).text
    return update


def prepare_context(state: SupportState, deps: Deps) -> Update:
    return {}


def classify(state: SupportState, deps: Deps) -> Update:
    completion = deps.small_llm.chat(context.classify_messages(state), schema=Triage)
    return {"triage": _parsed(completion, Triage), "cost": completion.cost}


def retrieve(state: SupportState, deps: Deps) -> Update:
    assert state.triage is not None
    query = state.triage.search_query or _latest(state)
    tools = deps.tools()
    hits = tools.call("search_help_center", deps.backend.search_help_center, query=query, limit=3)
    return {"hits": tuple(hits), "tool_log": tools.calls}


def act(state: SupportState, deps: Deps) -> Update:
    """Look the account up; for a refund, open a request that a human must approve."""
    assert state.customer is not None and state.triage is not None
    tools = deps.tools()
    subs = tools.call("list_subscriptions", deps.backend.list_subscriptions, customer_id=state.customer.id)
    invoices = tools.call("list_invoices", deps.backend.list_invoices, customer_id=state.customer.id)
    lines = [f"订阅:{s.plan}{s.billing_cycle},状态 {s.status},续费日 {s.renews_on}" for s in subs]
    lines += [f"账单 {i.id}:{i.amount} {i.currency},{i.issued_on},{i.status}" for i in invoices[:3]]
    update: Update = {"tool_log": tools.calls}
    if state.triage.category == "refund":
        refund, note = _request_refund(state, deps, invoices)
        lines.append(note)
        if refund is not None:
            update["refund_request"] = refund
    update["findings"] = "\n".join(lines)
    return update


def _request_refund(state: SupportState, deps: Deps, invoices: list[Invoice]) -> tuple[RefundRequest | None, str]:
    paid = [i for i in invoices if i.status == "paid"]
    if not paid:
        return None, "没有可退款的已支付账单。"
    invoice = paid[0]
    asked = _amount_in(_latest(state)) or invoice.amount
    if asked > invoice.amount:
        return None, f"客户申请退款 {asked} 元,超过账单 {invoice.id} 的实付金额 {invoice.amount} 元,不能受理。"
    assert state.customer is not None
    customer_id = state.customer.id
    result = deps.require_effects().run(
        "refund_request",
        lambda key, tx: deps.backend.create_refund_request(
            ticket_id=state.ticket.id, customer_id=customer_id, invoice_id=invoice.id, amount=asked,
            reason=_latest(state)[:200], key=key, tx=tx),
    )
    refund = _REFUND_ADAPTER.validate_python(result)
    return refund, f"已创建退款申请 {refund.id}:{refund.amount} {refund.currency},等待人工审批。"


def draft(state: SupportState, deps: Deps) -> Update:
    completion = deps.llm.chat(context.draft_messages(state))
    text = completion.text.strip()
    if not text:
        raise ModelError("the model returned an empty draft", ticket_id=state.ticket.id, step="draft")
    return {"draft": text, "revisions": state.revisions + 1, "cost": completion.cost}


def check(state: SupportState, deps: Deps) -> Update:
    """Rules first (they are free and certain), then the model's review."""
    problems = _rule_problems(state)
    completion = deps.small_llm.chat(context.review_messages(state), schema=Review)
    review = _parsed(completion, Review)
    problems += review.problems if not review.passed else []
    return {"review": Review(passed=not problems, problems=problems), "cost": completion.cost}


def _rule_problems(state: SupportState) -> list[str]:
    problems = []
    known = {h.id for h in state.hits}
    cited = set(_CITATION.findall(state.draft))
    if unknown := sorted(cited - known):
        problems.append(f"引用了不存在的文章:{', '.join(unknown)}")
    if known and not cited:
        problems.append("没有引用帮助中心文章")
    if len(state.draft) > 1500:
        problems.append("草稿过长")
    return problems


def approval(state: SupportState, deps: Deps) -> Update:
    """Runs only once a human decided (the engine pauses the round until then)."""
    assert state.approval is not None and state.refund_request is not None
    status = "approved" if state.approval.approved else "rejected"
    return {"refund_request": dataclasses.replace(state.refund_request, status=status)}


def finalize(state: SupportState, deps: Deps) -> Update:
    effects = deps.require_effects()
    reply = _render_citations(state)
    refund = state.refund_request
    if refund is not None and refund.status in ("approved", "rejected"):
        decision = state.approval or ApprovalDecision(approved=False, approver="system")
        effects.run("refund_decision", lambda key, tx: deps.backend.decide_refund(
            refund.id, approved=decision.approved, approver=decision.approver, note=decision.note, key=key, tx=tx))
        if refund.status == "approved":
            reply += f"\n\n您的退款申请 {refund.id}({refund.amount} {refund.currency})已审批通过,款项将原路退回。"
        else:
            reply += f"\n\n很抱歉,您的退款申请 {refund.id} 未通过审批。" + (f"原因:{decision.note}" if decision.note else "")
    facts = ticket_facts(state)
    effects.run("finish_ticket", lambda key, tx: deps.backend.finish_ticket(
        ticket_id=state.ticket.id, customer_email=state.ticket.customer_email, resolution="resolved",
        facts=facts, key=key, tx=tx))
    return _reply(state, deps, reply, outcome="resolved")


def ticket_facts(state: SupportState) -> dict[str, Any]:
    """The structured record kept when a round resolves the ticket; profiles are built from these."""
    by_kind: dict[str, list[str]] = {}
    for fact in update_ledger((), state.turns, 0):
        by_kind.setdefault(fact.kind, []).append(fact.value)
    cited = sorted(set(_CITATION.findall(state.draft)))
    return {
        "category": state.triage.category if state.triage else "other",
        "error_codes": sorted({code.upper() for code in by_kind.get("error_code", [])}),
        "amounts": by_kind.get("amount", []),
        "ids": by_kind.get("id", []),
        "dates": by_kind.get("date", []),
        "requests": by_kind.get("request", []),
        "promises": by_kind.get("promise", []),
        "resolution": f"按 {'、'.join(cited)} 处理" if cited else "已答复",
    }


def handoff(state: SupportState, deps: Deps) -> Update:
    reason = state.handoff_reason or _handoff_reason(state)
    deps.require_effects().run("escalation", lambda key, tx: deps.backend.escalate(
        ticket_id=state.ticket.id, customer_email=state.ticket.customer_email, reason=reason, key=key, tx=tx))
    reply = "您好,您的问题已转交人工客服处理,我们会尽快与您联系。"
    return {**_reply(state, deps, reply, outcome="escalated"), "handoff_reason": reason}


def _handoff_reason(state: SupportState) -> str:
    if state.triage is not None and state.triage.needs_human:
        return "分诊判断需要人工处理"
    if state.review is not None and not state.review.passed:
        return "草稿多次未通过质检:" + ";".join(state.review.problems)
    return "需要人工处理"


def _reply(state: SupportState, deps: Deps, text: str, *, outcome: str) -> Update:
    turn = Turn(role="agent", content=text, round=state.round, created_at=deps.clock())
    return {"reply": text, "outcome": outcome, "turns": [turn]}


def _render_citations(state: SupportState) -> str:
    urls = {h.id: h.url for h in state.hits if h.url}
    return _CITATION.sub(lambda m: f"[{m[1]}]({urls[m[1]]})" if m[1] in urls else m[0], state.draft)


def _latest(state: SupportState) -> str:
    latest = state.latest_customer_message
    return latest.content if latest else state.ticket.body


def _amount_in(text: str) -> Decimal | None:
    match = _AMOUNT.search(text)
    if not match:
        return None
    try:
        return Decimal(match[1] or match[2])
    except InvalidOperation:
        return None


def _parsed(completion: Completion, schema: type[BaseModel]) -> Any:
    if not isinstance(completion.parsed, schema):
        raise ModelError(f"the model did not return a {schema.__name__}; got {completion.text[:200]!r}")
    return completion.parsed
