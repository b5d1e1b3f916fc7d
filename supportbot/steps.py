"""The step functions. Each reads the state and its deps and returns only what it changes."""

from __future__ import annotations

import dataclasses
import logging
import re
from collections.abc import Sequence
from decimal import Decimal, InvalidOperation
from typing import Any

from pydantic import BaseModel, TypeAdapter

from . import context
from .deps import Deps
from .errors import ContextBudgetExceeded, ModelError
from .llm.base import Completion
from .memory.compress import compress, summary_messages
from .memory.facts import update_ledger
from .memory.mask import mask_text
from .memory.tokens import with_tokens
from .records import ApprovalDecision, Invoice, RefundRequest
from .state import Review, SupportState, Triage, Turn, reduce

Update = dict[str, Any]
log = logging.getLogger(__name__)

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
    """Pin the facts of new turns, then fold early turns into the summary if history is over budget.

    Only turns are ever folded. Tool calls and their results live in ``tool_log``, never in
    ``turns``, so a fold cannot separate a tool result from the call that produced it.
    """
    return _fold(state, deps, budget=deps.settings.history_budget)


def _fold(state: SupportState, deps: Deps, *, budget: int) -> Update:
    settings = deps.settings
    summarizer = _Summarizer(deps)
    window = settings.context_window if settings.trigger_fraction is not None else None
    result = compress(state.turns, state.summary, state.summarized_upto, budget=budget, keep_last=settings.keep_last,
                      summarize=summarizer, max_pending_turns=settings.max_pending_turns, context_window=window,
                      trigger_fraction=settings.trigger_fraction, summary_cap=settings.summary_cap,
                      facts=state.facts)
    update: Update = {}
    if result.facts != state.facts:
        update["facts"] = result.facts
    if result.summarized_upto != state.summarized_upto:
        update.update(summary=result.summary, summarized_upto=result.summarized_upto)
    if result.error is not None:
        # The round goes on with the old summary and the full pending history (seed 001).
        log.warning("compression of %s skipped: %s", state.ticket.id, result.error)
        update["summary_error"] = result.error
    if summarizer.cost:
        update["cost"] = summarizer.cost
    return update


class _Summarizer:
    """The small model as compress()'s summarizer; masks what it writes, adds up what it costs."""

    def __init__(self, deps: Deps) -> None:
        self._deps = deps
        self.cost = 0.0

    def __call__(self, previous: str, turns: Sequence[Turn]) -> str:
        completion = self._deps.small_llm.chat(summary_messages(previous, turns))
        self.cost += completion.cost
        return mask_text(completion.text) if self._deps.settings.mask_pii else completion.text


def _prompt(state: SupportState, deps: Deps, build: context.Builder, *, record: bool = True
            ) -> tuple[context.Prompt, Update]:
    """The step's prompt, degraded until it fits; folds more history before giving up."""
    budget = context.prompt_budget(deps.settings)
    prompt = context.fit(build, state, budget)
    update: Update = {}
    if prompt is None:
        update = _fold(state, deps, budget=0)  # everything but the last keep_last turns
        folded = reduce(state, update)
        prompt = context.fit(build, folded, budget, (*context.LADDER, *context.LAST_RUNGS))
        if prompt is None:
            smallest = build(folded, context.LAST_RUNGS[-1], budget)
            raise ContextBudgetExceeded(context.over_budget_message(smallest, budget, deps.settings),
                                        ticket_id=state.ticket.id, step=deps.step)
    if record:
        update["context_usage"] = prompt.usage
    return prompt, update


def _merged(first: Update, second: Update) -> Update:
    cost = first.get("cost", 0.0) + second.get("cost", 0.0)
    merged = {**first, **second}
    if cost:
        merged["cost"] = cost
    return merged


def classify(state: SupportState, deps: Deps) -> Update:
    prompt, update = _prompt(state, deps, context.classify_prompt)
    completion = deps.small_llm.chat(prompt.messages, schema=Triage)
    return _merged(update, {"triage": _parsed(completion, Triage), "cost": completion.cost})


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
    prompt, update = _prompt(state, deps, context.draft_prompt)
    completion = deps.llm.chat(prompt.messages)
    text = completion.text.strip()
    if not text:
        raise ModelError("the model returned an empty draft", ticket_id=state.ticket.id, step="draft")
    return _merged(update, {"draft": text, "revisions": state.revisions + 1, "cost": completion.cost})


def check(state: SupportState, deps: Deps) -> Update:
    """Rules first (they are free and certain), then the model's review."""
    problems = _rule_problems(state)
    prompt, update = _prompt(state, deps, context.review_prompt, record=False)
    completion = deps.small_llm.chat(prompt.messages, schema=Review)
    review = _parsed(completion, Review)
    problems += review.problems if not review.passed else []
    return _merged(update, {"review": Review(passed=not problems, problems=problems), "cost": completion.cost})


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
    turn = with_tokens(Turn(role="agent", content=text, round=state.round, created_at=deps.clock()))
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
