"""The step functions. Each reads the state and its deps and returns only what it changes."""

from __future__ import annotations

import dataclasses
import json
import logging
from collections.abc import Awaitable, Callable, Sequence
from functools import partial
from typing import TypeVar

from pydantic import BaseModel

from .._records import ApprovalDecision, Customer, CustomerRecords, Finding, RefundStatus, Spend
from .._state import Fact, Outcome, Review, StateUpdate, SupportState, Triage, Turn, reduce
from ..backend.base_async import AsyncListsPlans, AsyncReadsCustomerRecords
from ..errors import BilledCall, ContextBudgetExceeded, ModelError, RespondRefused
from ..i18n import LANGUAGES
from ..i18n._prompts import system_prompt
from ..llm.base import Completion
from ..memory import _assist as assist
from ..memory._compress import Compression, Folding, folding, summary_messages
from ..memory._tokens import MESSAGE_OVERHEAD, count_edited, with_tokens
from ..reply import _context as context
from ..reply import _findings as findings
from ..reply import _guardrails as guardrails
from . import _models_async as models
from . import _refunds_async as refunds
from ._deps_async import Deps
from ._speech import handoff_reason, says
from ._ticket_record import ticket_facts

Update = StateUpdate
_Parsed = TypeVar("_Parsed", bound=BaseModel)
log = logging.getLogger(__name__)

_CITATION = guardrails.CITATION
# The instructions of a round's prompts, which a reply must never repeat to the customer: in every
# language, since a ticket's language may change between rounds and a model may be asked to switch.
SYSTEM_PROMPTS = tuple(
    system_prompt(name, lang) for lang in LANGUAGES for name in ("classify", "draft", "review", "summary")
)


async def load_customer(state: SupportState, deps: Deps) -> Update:
    tools = deps.tools()
    email = state.ticket.customer_email
    records: CustomerRecords | None = None
    if isinstance(deps.backend, AsyncReadsCustomerRecords):
        # One read for the customer and the profile's records, made before the round when a worker
        # claimed the ticket; logged as the get_customer it replaces.
        read = partial(_read_records, deps.backend, deps.records)
        records = await tools.call("get_customer", read, logged_result=_customer_of, email=email)
        customer = _customer_of(records)
    else:
        customer = await tools.call("get_customer", deps.backend.get_customer, email=email)
    update: Update = {"customer": customer, "tool_log": tools.calls}
    if customer is not None and deps.profiles is not None:
        found = await deps.profiles.for_customer(customer, excluding=state.ticket.id, records=records)
        profile = found.text
        if profile != state.profile:  # it persists across rounds: record it when it changes
            update["profile"] = profile
    return update


async def _read_records(
    backend: AsyncReadsCustomerRecords, ahead: CustomerRecords | None, email: str
) -> CustomerRecords | None:
    return ahead if ahead is not None else (await backend.customer_records([email]))[0]


def _customer_of(records: CustomerRecords | None) -> Customer | None:
    return None if records is None else records.customer


async def prepare_context(state: SupportState, deps: Deps) -> Update:
    """Pin the facts of new turns, then fold early turns into the summary if history is over budget.

    Only turns are ever folded. Tool calls and their results live in ``tool_log``, never in
    ``turns``, so a fold cannot separate a tool result from the call that produced it.
    """
    return await _fold(state, deps, budget=deps.settings.history_budget)


async def _fold(state: SupportState, deps: Deps, *, budget: int) -> Update:
    settings = deps.settings
    lang = context.ticket_language(state)
    summarizer = _Summarizer(deps, lang)
    window = settings.context_window if settings.trigger_fraction is not None else None
    plans = await deps.backend.list_plans() if isinstance(deps.backend, AsyncListsPlans) else ()
    fold = folding(
        state.turns,
        state.summary,
        state.summarized_upto,
        budget=budget,
        keep_last=settings.keep_last,
        max_pending_turns=settings.max_pending_turns,
        context_window=window,
        trigger_fraction=settings.trigger_fraction,
        summary_cap=settings.summary_cap,
        facts=state.facts,
        facts_upto=state.facts_upto,
        # The ticket's own memory keeps contact details as the customer gave them: its prompt
        # must show the number to call back. Masking applies where records leave the ticket.
        mask=False,
        facts_allowance=context.facts_allowance(settings),
        plans=plans,
        lang=lang,
    )
    result = await _summarized(fold, summarizer)
    update: Update = {}
    spend = summarizer.spend
    if settings.fact_assist and state.facts_upto < len(state.turns):
        assisted, assist_spend = await _assisted_facts(state, deps, result.facts)
        result = dataclasses.replace(result, facts=result.facts + tuple(assisted))
        spend += assist_spend
    if result.facts != state.facts:
        update["facts"] = result.facts[len(state.facts) :]  # the ledger only grows; send the new ones
    if state.facts_upto != len(state.turns):
        update["facts_upto"] = len(state.turns)  # each turn is scanned for facts once
    if result.summarized_upto != state.summarized_upto:
        update["summary"] = result.summary
        update["summarized_upto"] = result.summarized_upto
    if result.error is not None:
        # The round goes on with the old summary and the full pending history (seed 001).
        log.warning("compression of %s skipped: %s", state.ticket.id, result.error)
        update["summary_error"] = result.error
    if spend.calls:
        update.update(spent(spend))
    return update


async def _summarized(fold: Folding, summarize: _Summarizer) -> Compression:
    """Run compression's folding to its end, answering each summary it asks for with the model
    (``memory._compress.drive`` does the same for a plain function)."""
    try:
        ask = next(fold)
        while True:
            try:
                text = await summarize(*ask)
            except Exception as exc:  # noqa: BLE001 - folding reports it and the round goes on
                ask = fold.throw(exc)
            else:
                ask = fold.send(text)
    except StopIteration as done:
        result: Compression = done.value
        return result


async def _assisted_facts(
    state: SupportState, deps: Deps, ledger: tuple[Fact, ...]
) -> tuple[list[Fact], Spend]:
    """Facts the small model adds for the newly scanned turns; none from the offline model, whose
    extraction is the rules', and none when the call fails (the rule facts stand)."""
    from ..llm.offline import OfflineModel  # only with fact_assist on: the core never loads it otherwise

    if isinstance(deps.small_llm, OfflineModel):
        return [], Spend()
    start = min(state.facts_upto, len(state.turns))
    messages = assist.assist_messages(state.turns, start, ledger, lang=context.ticket_language(state))
    try:
        completion = await models.ask(deps, "facts", messages, schema=assist.ProposedFacts)
    except ModelError as exc:
        log.warning("fact assist for %s skipped: %s", state.ticket.id, exc)
        return [], Spend()
    proposed = completion.parsed if isinstance(completion.parsed, assist.ProposedFacts) else None
    if proposed is None:
        return [], _spend_of(completion)
    accepted = assist.accept(proposed, state.turns, start, ledger, mask=False)
    return accepted, _spend_of(completion)


class _Summarizer:
    """The small model as compress()'s summarizer, asked in the ticket's language ``lang``; adds up
    what it costs. The summary is the ticket's own memory: contact details stay as given (the
    profile and the ticket record mask)."""

    def __init__(self, deps: Deps, lang: str) -> None:
        self._deps = deps
        self._lang = lang
        self.spend = Spend()

    async def __call__(self, previous: str, turns: Sequence[Turn]) -> str:
        messages = summary_messages(previous, turns, lang=self._lang)
        completion = await models.ask(self._deps, "summary", messages)
        self.spend += _spend_of(completion)
        return completion.text


async def _prompt(
    state: SupportState, deps: Deps, build: context.Builder, *, record: bool = True, budget: int | None = None
) -> tuple[context.Prompt, Update]:
    """The step's prompt, degraded until it fits; folds more history before giving up."""
    budget = context.prompt_budget(deps.settings) if budget is None else budget
    build = partial(build, facts_allowance=context.facts_allowance(deps.settings), caches=deps.caches)
    prompt = context.fit(build, state, budget)
    update: Update = {}
    if prompt is None:
        update = await _fold(state, deps, budget=0)  # everything but the last keep_last turns
        folded = reduce(state, update)
        prompt = context.fit(build, folded, budget, (*context.LADDER, *context.LAST_RUNGS))
        if prompt is None:
            smallest = build(folded, context.LAST_RUNGS[-1], budget)
            raise ContextBudgetExceeded(
                context.over_budget_message(smallest, budget, deps.settings),
                ticket_id=state.ticket.id,
                step=deps.step,
            )
    if record:
        update["context_usage"] = prompt.usage
    return prompt, update


async def _ask_fitted(
    state: SupportState,
    deps: Deps,
    build: context.Builder,
    kind: models.Kind,
    *,
    schema: type[BaseModel] | None = None,
    record: bool = True,
) -> tuple[Completion, Update]:
    """The model's answer to the step's prompt. A server whose window is smaller than
    ``context_window`` says so (HTTP 400, ``reason="context_length"``); the prompt then goes down
    the degradation ladder to fit ``SHRINK`` of its size, and is sent once more. A second
    refusal is the model fault it is: the ticket goes to a person."""
    prompt, update = await _prompt(state, deps, build, record=record)
    try:
        return await models.ask(deps, kind, prompt.messages, schema=schema), update
    except ModelError as exc:
        if exc.reason != "context_length":
            raise
    smaller = int(prompt.tokens * SHRINK)
    log.warning(
        "%s prompt of %s over the server's window; shrinking it to %d tokens", kind, state.ticket.id, smaller
    )
    shrunk, again = await _prompt(
        reduce(state, update) if update else state, deps, build, record=record, budget=smaller
    )
    completion = await models.ask(deps, kind, shrunk.messages, schema=schema)
    if "facts" in update and "facts" in again:  # both folded: the ledger grew twice
        again = {**again, "facts": [*update["facts"], *again["facts"]]}
    return completion, _merged(update, again)


# The share of its size a prompt the server found too long is shrunk to: our token count (tiktoken)
# and the server's tokenizer disagree, most on Chinese, so one step must clear a wide gap.
SHRINK = 0.6


def _merged(first: Update, second: Update) -> Update:
    """Two updates of one step as one; what they spent adds up, as the reducer would add it."""
    merged: Update = {**first, **second}
    if "cost" in first and "cost" in second:
        merged["cost"] = first["cost"] + second["cost"]
    if "round_spend" in first and "round_spend" in second:
        merged["round_spend"] = first["round_spend"] + second["round_spend"]
    return merged


async def classify(state: SupportState, deps: Deps) -> Update:
    # context_usage reports the reply prompt (draft's), the one that carries the whole context.
    completion, update = await _ask_fitted(
        state, deps, context.classify_prompt, "classify", schema=Triage, record=False
    )
    triage: Triage = _parsed(completion, Triage)
    if not state.topic:
        update["topic"] = (
            triage.category
        )  # a follow-up about a refund does not change what the ticket is about
    return _merged(update, {"triage": triage, **spent(completion)})


async def retrieve(state: SupportState, deps: Deps) -> Update:
    assert state.triage is not None
    query = state.triage.search_query or _latest(state)
    tools = deps.tools()
    hits = await tools.call("search_help_center", deps.backend.search_help_center, query=query, limit=3)
    return {"hits": tuple(hits), "tool_log": tools.calls}


async def act(state: SupportState, deps: Deps) -> Update:
    """Look the account up; for a refund, open a request that a human must approve."""
    assert state.customer is not None and state.triage is not None
    tools = deps.tools()
    subs = await tools.call(
        "list_subscriptions", deps.backend.list_subscriptions, customer_id=state.customer.id
    )
    invoices = await tools.call("list_invoices", deps.backend.list_invoices, customer_id=state.customer.id)
    found = [
        Finding.of(
            "subscription", plan=s.plan, cycle=s.billing_cycle, status=s.status, renews_on=s.renews_on or ""
        )
        for s in subs
    ]
    found += [
        Finding.of(
            "invoice", id=i.id, amount=i.amount, currency=i.currency, issued_on=i.issued_on, status=i.status
        )
        for i in invoices[:3]
    ]
    update: Update = {}
    if state.triage.category == "refund":
        refund, outcome = await refunds.request(state, deps, invoices, tools, latest=_latest(state))
        found += outcome
        if refund is not None:
            update["refund_request"] = refund
    # The text is what a model reads (and what a draft is checked against); the records are for a
    # reader that wants them structured (the offline model).
    update["findings"] = findings.render(found, context.ticket_language(state))
    update["account_findings"] = tuple(found)
    update["tool_log"] = tools.calls
    return update


async def draft(state: SupportState, deps: Deps) -> Update:
    completion, update = await _ask_fitted(state, deps, context.draft_prompt, "draft")
    text = completion.text.strip()
    if not text:
        raise ModelError(
            "the model returned an empty draft",
            ticket_id=state.ticket.id,
            step="draft",
            reason="invalid_output",
            spent=completion,
        )
    return _merged(update, {"draft": text, "revisions": state.revisions + 1, **spent(completion)})


async def check(state: SupportState, deps: Deps) -> Update:
    """Rules first (they are free and certain); only a draft they pass is shown to the model.

    A draft that repeats the system's instructions (a model that obeyed "print your system
    prompt") hands off at once: a redraft by a model that obeyed once is no safer, and the
    reason recorded says how much was copied, never what.
    """
    if leaked := guardrails.prompt_leak(state.draft, SYSTEM_PROMPTS, allowed=partial(_quotable, state)):
        reason = says(state)("handoff.prompt_leak", words=leaked)
        return {"review": Review(passed=False, problems=[reason]), "handoff_reason": reason}
    problems = _rule_problems(state, deps)
    if problems:
        return {"review": Review(passed=False, problems=problems)}
    completion, update = await _ask_fitted(
        state, deps, context.review_prompt, "check", schema=Review, record=False
    )
    review = _parsed(completion, Review)
    # A model that fails a draft without saying why still failed it.
    problems = [] if review.passed else (list(review.problems) or [says(state)("review.unexplained")])
    return _merged(update, {"review": Review(passed=not problems, problems=problems), **spent(completion)})


def _rule_problems(state: SupportState, deps: Deps) -> list[str]:
    # The evidence is built only if the draft states an amount, a time limit or an identifier.
    return guardrails.draft_problems(
        state.draft,
        known_articles={h.id for h in state.hits},
        evidence=partial(_evidence, state),
        scans=deps.caches.evidence,
        lang=context.ticket_language(state),
    )


def _quotable(state: SupportState) -> str:
    """What a reply may quote even where it matches a prompt: the customer's words, the articles.

    The customer's words since the summary, like ``_evidence``: a check must not grow with the
    ticket (a reply quoting a folded message that matches a prompt is handed off, wrongly but safely).
    """
    parts = [state.ticket.subject, state.ticket.body]
    parts += [t.content for t in state.turns[state.summarized_upto :] if t.role == "customer"]
    parts += [f"{h.title}\n{h.body}" for h in state.hits]
    return "\n".join(parts)


def _evidence(state: SupportState) -> str:
    """Everything a draft may take amounts, time limits and identifiers from: this customer's
    records and messages, this round's articles, findings and tool results, earlier replies."""
    parts = [
        state.ticket.customer_email,
        state.ticket.subject,
        state.ticket.body,
        state.profile,
        state.findings,
    ]
    parts += [f"[{h.id}] {h.title}:{h.body}" for h in state.hits]
    # What the model saw of the conversation: the summary, the pinned facts (every exact figure of
    # the folded turns) and the turns since. Not all turns: a check must not grow with the ticket.
    parts += [state.summary, *(turn.content for turn in state.turns[state.summarized_upto :])]
    parts += [fact.value for fact in state.facts]
    if state.customer is not None:
        parts += [state.customer.id, state.customer.email, state.customer.phone]
    if state.refund_request is not None:
        r = state.refund_request
        parts += [r.id, r.invoice_id, f"{r.amount} {r.currency}"]
    parts += [json.dumps(call.result, ensure_ascii=False, default=str) for call in state.round_calls]
    return "\n".join(part for part in parts if part)


async def approval(state: SupportState, deps: Deps) -> Update:
    """Runs only once a human decided (the engine pauses the round until then)."""
    assert state.approval is not None and state.refund_request is not None
    status: RefundStatus = "approved" if state.approval.approved else "rejected"
    return {"refund_request": dataclasses.replace(state.refund_request, status=status)}


async def answer_note(state: SupportState, deps: Deps) -> Update:
    """The agent's answer to a reviewer's note (``state.reviewer_note``) while the refund waits
    (SupportBot.respond): the update that records the note with it.

    The answer is drafted with the note as its instruction and checked by the same rules as any
    draft: it may not claim a decision, nor state an amount, time limit or id that neither the
    evidence nor the note holds. An answer that fails them raises RespondRefused before anything
    is recorded, and the reviewer may word the note otherwise.
    """
    completion, update = await _ask_fitted(state, deps, context.draft_prompt, "answer", record=False)
    text = completion.text.strip()
    problems = guardrails.draft_problems(
        text,
        known_articles={h.id for h in state.hits},
        evidence=lambda: _evidence(state) + "\n" + state.reviewer_note,
        cite=False,
        lang=context.ticket_language(state),
    )
    if problems:
        raise RespondRefused(
            f"the agent's answer to the note on {state.ticket.id} did not pass the draft checks "
            f"({'; '.join(problems)}); nothing was sent or recorded. Word the note otherwise",
            ticket_id=state.ticket.id,
            step="respond",
            problems=problems,
        )
    return _merged(
        update, {"reviewer_note": state.reviewer_note, "reviewer_answer": text, **spent(completion)}
    )


async def respond(state: SupportState, deps: Deps) -> Update:
    """Send the answer to the reviewer's note (drafted and checked by ``answer_note``) as the
    round's reply; the round then pauses again for the refund's decision."""
    return _reply(state, deps, state.reviewer_answer, outcome="waiting_approval")


async def finalize(state: SupportState, deps: Deps) -> Update:
    effects = deps.require_effects()
    tools = deps.tools()
    reply = _render_citations(state)
    refund = state.refund_request
    if refund is not None and refund.status in ("approved", "rejected"):
        decision = state.approval or ApprovalDecision(approved=False, approver="system")
        if not any(call.name == "decide_refund" for call in state.round_calls):
            # Decided before decide() applied decisions itself (an older version's paused round).
            await refunds.apply_decision(deps, tools, refund, decision)
        reply += "\n\n" + refunds.decision_text(refund, decision, context.ticket_language(state))
    facts = ticket_facts(state, mask=deps.settings.mask_pii, caches=deps.caches)
    # The facts grow with the ticket and are rebuilt from the ledger at will, so the tool log keeps
    # their counts: otherwise every round would store the whole ledger once more.
    counts = {k: len(v) if isinstance(v, list) else v for k, v in facts.items()}
    await effects.call(
        "finish_ticket",
        tools,
        "finish_ticket",
        deps.backend.finish_ticket,
        logged_as={"facts": counts},
        ticket_id=state.ticket.id,
        customer_email=state.ticket.customer_email,
        resolution="resolved",
        facts=facts,
    )
    return {**_reply(state, deps, reply, outcome="resolved", draft=state.draft), "tool_log": tools.calls}


async def handoff(state: SupportState, deps: Deps) -> Update:
    reason = state.handoff_reason or handoff_reason(state)
    if (refund := state.refund_request) is not None and refund.status == "pending":
        # Filed, then the round handed off before the approval step (its draft kept failing, say):
        # the request waits in the business system, and whoever takes the ticket must know a
        # decision on it is owed.
        reason += says(state)(
            "handoff.refund_pending", refund=refund.id, amount=refund.amount, currency=refund.currency
        )
    tools = deps.tools()
    await deps.require_effects().call(
        "escalation",
        tools,
        "escalate",
        deps.backend.escalate,
        ticket_id=state.ticket.id,
        customer_email=state.ticket.customer_email,
        reason=reason,
    )
    # The customer hears that a person takes over, never the internal reason (it may be a model error).
    reply = says(state)("handoff.reply", ticket=state.ticket.id)
    return {
        **_reply(state, deps, reply, outcome="escalated"),
        "handoff_reason": reason,
        "tool_log": tools.calls,
    }


def _reply(state: SupportState, deps: Deps, text: str, *, outcome: Outcome, draft: str = "") -> Update:
    # A reply made from a reviewed draft (counted for the review prompt, so cached) is counted
    # from the draft's count: only its changed end, where the citations became links, is new.
    size = count_edited(text, draft) + MESSAGE_OVERHEAD if draft else None
    turn = with_tokens(
        Turn(role="agent", content=text, round=state.round, created_at=deps.clock(), tokens=size)
    )
    return {"outcome": outcome, "turns": [turn]}  # state.reply is this turn


def _render_citations(state: SupportState) -> str:
    urls = {h.id: h.url for h in state.hits if h.url}
    return _CITATION.sub(lambda m: f"[{m[1]}]({urls[m[1]]})" if m[1] in urls else m[0], state.draft)


def _latest(state: SupportState) -> str:
    latest = state.latest_customer_message
    return latest.content if latest else state.ticket.body


def spent(spend: Spend | BilledCall) -> Update:
    """What model calls add to the ticket's cost and to this round's calls, tokens and cost."""
    spend = spend if isinstance(spend, Spend) else _spend_of(spend)
    return {"round_spend": spend, **({"cost": spend.cost} if spend.cost else {})}


def _parsed(completion: Completion, schema: type[_Parsed]) -> _Parsed:
    if not isinstance(completion.parsed, schema):
        raise ModelError(
            f"the model did not return a {schema.__name__}; got {completion.text[:200]!r}",
            reason="invalid_output",
            spent=completion,
        )
    return completion.parsed


def _spend_of(completion: BilledCall) -> Spend:
    """One call's spend."""
    return Spend(
        calls=1,
        prompt_tokens=completion.usage.prompt_tokens,
        completion_tokens=completion.usage.completion_tokens,
        cost=completion.cost,
    )


# The steps by name (run/_graph.py routes between them).
Step = Callable[[SupportState, Deps], Awaitable[StateUpdate]]

STEPS: dict[str, Step] = {
    "load_customer": load_customer,
    "prepare_context": prepare_context,
    "classify": classify,
    "retrieve": retrieve,
    "act": act,
    "draft": draft,
    "check": check,
    "approval": approval,
    "respond": respond,
    "finalize": finalize,
    "handoff": handoff,
}
