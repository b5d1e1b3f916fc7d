"""What the console does, once, for both the pages and the JSON API.

Everything goes through SupportBot's public API; the only SQL is the console's own rows
(claims, notes, assignments and the search, supportbot/store/_console.py), and the audit row of an
assignment, written in the assignment's transaction. Read models are frozen dataclasses, so
the JSON API serializes the same objects the templates render.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from decimal import Decimal
from typing import Any, Literal, get_args

from pydantic_core import to_jsonable_python

from .._front import _validate as validate
from .._front._bot import SupportBot
from .._records import RefundBasis
from .._reports import DeletionReport
from .._state import Fact, SupportState, TicketStatus, Turn
from ..backend.base import Backend
from ..errors import ApprovalNotPending, ClaimConflict, InvalidInput, UnknownCustomer
from ..memory._facts import current_facts
from ..memory._profile import Profile, ProfileEntry, profile_entries
from ..reply import _guardrails as guardrails
from ..run._rounds import RoundResult
from ..run._values import ServiceClock
from ..store._console import Assignment, Claim, Found, Note, SavedReply
from ..store._rows import AuditEntry, PendingApproval, StepRecord, TicketRow
from ..store._store import Store
from ._users import Operator

Kind = Literal["approval", "handoff"]
View = Literal["all", "mine", "team"]
VIEWS: tuple[View, ...] = ("all", "mine", "team")
Action = Literal["approve", "reject", "respond"]  # what a reviewer does with a pending refund
ACTIONS: tuple[Action, ...] = ("approve", "reject", "respond")
KINDS: tuple[Kind, ...] = ("approval", "handoff")
STATUSES: tuple[TicketStatus, ...] = get_args(TicketStatus)
CLAIM_SECONDS = 15 * 60
LATEST_TURNS = 6
SEARCH_PAGE = 25
SEARCH_CHARS = 200
SAVED_REPLY_CHARS = 4000
_PLACEHOLDER = re.compile(r"\{(name|ticket|amount|invoice|date)\}")


@dataclass(frozen=True, slots=True)
class InboxItem:
    kind: Kind
    ticket_id: str
    customer_email: str
    subject: str
    waiting_since: datetime
    waiting_seconds: int
    amount: str = ""
    currency: str = ""
    claimed_by: str | None = None
    owner: str | None = None  # the person who took a handed-off ticket over
    assignee: str | None = None  # the operator it is assigned to (sql/024_console_assignments.sql)
    team: str | None = None
    clock: ServiceClock | None = None  # None: a person answered, the customer has the turn


@dataclass(frozen=True, slots=True)
class Quote:
    """The policy computation: at filing time (from the round's tool log) and now (live)."""

    invoice_id: str
    currency: str
    paid: str
    entitled: str
    committed_at_filing: str  # other refunds of the invoice, approved or pending, when this one was filed
    basis: RefundBasis  # worded in the operator's language by the page (reply._findings.basis_text)
    committed_now: str | None = None  # the same now, this request included


@dataclass(frozen=True, slots=True)
class ApprovalView:
    ticket: TicketRow
    round: int
    requested_at: datetime
    refund: dict[str, Any]
    quote: Quote | None
    summary: str
    summarized_upto: int
    facts: list[dict[str, Any]]
    latest_turns: list[Turn]
    claim: Claim | None


@dataclass(frozen=True, slots=True)
class TicketView:
    ticket: TicketRow
    state: SupportState
    at: int | None  # the step shown; None for the latest state
    next_step: str | None
    steps: list[StepRecord]
    notes: list[Note]
    pending: PendingApproval | None
    claim: Claim | None
    audit: list[AuditEntry]
    assignment: Assignment | None = None
    clock: ServiceClock | None = None  # the service-level clock, while a person has the turn


@dataclass(frozen=True, slots=True)
class SearchPage:
    found: list[Found]
    page: int  # from 1
    more: bool  # a next page exists


@dataclass(frozen=True, slots=True)
class CustomerView:
    email: str
    profile: Profile | None
    tickets: list[TicketRow]
    busy: list[str]  # tickets in a round or waiting for a decision: forget is refused while any
    entries: list[ProfileEntry]


def _utcnow() -> datetime:
    return datetime.now(UTC)


class Console:
    def __init__(
        self,
        bot: SupportBot,
        store: Store,
        backend: Backend,
        *,
        claim_seconds: int = CLAIM_SECONDS,
        clock: Callable[[], datetime] = _utcnow,
    ) -> None:
        self.bot, self.store, self.backend = bot, store, backend
        self.claim_seconds = claim_seconds
        self.clock = clock

    # -- inbox ------------------------------------------------------------------------------

    def inbox(
        self, *, kind: Kind | None = None, customer: str = "", view: View = "all", who: Who | None = None
    ) -> list[InboxItem]:
        """Pending approvals and handed-off tickets, the longest waiting first; ``view`` "mine"
        (assigned to, owned or claimed by ``who``) or "team" (assigned to their teams or to a
        colleague in one)."""
        now = self.clock()
        with self.store.connection() as conn:
            claims = self.store.console.live_claims(conn)
            assigned = self.store.console.assignments(conn)
        clocks = {c.ticket_id: c for c in self.bot.service_clocks()}
        items: list[InboxItem] = []
        if kind in (None, "approval"):
            for p in self.bot.pending_approvals():
                refund = p.request.get("refund_request") or {}
                held = claims.get(p.ticket_id)
                items.append(
                    InboxItem(
                        "approval",
                        p.ticket_id,
                        p.customer_email,
                        p.subject,
                        p.requested_at,
                        _seconds(now, p.requested_at),
                        amount=str(refund.get("amount", "")),
                        currency=str(refund.get("currency", "")),
                        claimed_by=held.reviewer if held and held.round == p.round else None,
                    )
                )
        if kind in (None, "handoff"):
            handed = self.bot.tickets(status="escalated") + self.bot.tickets(status="with_human")
            for t in handed:
                items.append(
                    InboxItem(
                        "handoff",
                        t.id,
                        t.customer_email,
                        t.subject,
                        t.updated_at,
                        _seconds(now, t.updated_at),
                        owner=t.human_agent,
                    )
                )
        items = [_with_owners(i, assigned.get(i.ticket_id), clocks.get(i.ticket_id)) for i in items]
        wanted = customer.strip().lower()
        items = [i for i in items if wanted in i.customer_email.lower() and _in_view(i, view, who)]
        return sorted(items, key=lambda i: (i.waiting_since, i.ticket_id))

    def assign(
        self, ticket_id: str, by: Operator, *, operator: str | None, team: str | None, source: str
    ) -> Assignment:
        """Give the ticket to ``operator`` and/or ``team`` (names the caller checked); the hand-over
        from whoever had it is audited in the same transaction."""
        ticket_id = validate.ticket_id(ticket_id)
        row = self.bot.ticket(ticket_id)
        if operator is None and team is None:
            raise InvalidInput("assign a ticket to an operator, a team, or both")
        with self.store.transaction() as tx:
            before = self.store.console.assignment(tx, ticket_id, lock=True)
            after = self.store.console.assign(tx, ticket_id, operator=operator, team=team, by=by.name)
            detail = {"from": _holder(before), "to": _holder(after)}
            self.store.audit.record(
                tx, actor=by.name, action="assign", source=source, ticket_id=ticket_id,
                customer_email=row.customer_email, detail=detail,
            )  # fmt: skip
        return after

    # -- search -----------------------------------------------------------------------------

    def search(
        self,
        *,
        text: str = "",
        customer: str = "",
        status: str | None = None,
        since: date | None = None,
        until: date | None = None,
        page: int = 1,
    ) -> SearchPage:
        """Tickets open and closed by text (id, subject, any turn; Chinese or English), customer,
        status and the days they were opened (``until`` included, in the server's time zone),
        ``SEARCH_PAGE`` per page. A forgotten customer's tickets are deleted, so never found."""
        text = validate.text("text", text, limit=SEARCH_CHARS).strip()
        customer = validate.text("customer", customer, limit=validate.EMAIL_CHARS).strip()
        page = max(1, min(page, 10_000))
        with self.store.connection() as conn:
            found = self.store.console.search(
                conn,
                text=text,
                customer=customer,
                status=status,
                since=_start_of(since),
                until=_start_of(until + timedelta(days=1) if until else None),
                limit=SEARCH_PAGE + 1,
                offset=(page - 1) * SEARCH_PAGE,
            )
        return SearchPage(found[:SEARCH_PAGE], page, len(found) > SEARCH_PAGE)

    # -- approvals --------------------------------------------------------------------------

    def pending(self, ticket_id: str) -> PendingApproval:
        ticket_id = validate.ticket_id(ticket_id)
        row = self.bot.ticket(ticket_id)  # an unknown ticket says so
        for p in self.bot.pending_approvals():
            if p.ticket_id == ticket_id:
                return p
        raise ApprovalNotPending(
            f"ticket {ticket_id} is not waiting for approval (status {row.status})", ticket_id=ticket_id
        )

    def approval(self, ticket_id: str) -> ApprovalView:
        p = self.pending(ticket_id)
        state = self.bot.state(p.ticket_id)
        with self.store.connection() as conn:
            held = self.store.console.current_claim(conn, p.ticket_id, p.round)
        refund = dict(p.request.get("refund_request") or {})
        return ApprovalView(
            ticket=self.bot.ticket(p.ticket_id),
            round=p.round,
            requested_at=p.requested_at,
            refund=refund,
            quote=self._quote(state, refund),
            summary=state.summary,
            summarized_upto=state.summarized_upto,
            facts=[{"kind": f.kind, "value": f.value, "turn": f.turn} for f in state.facts],
            latest_turns=list(state.turns[-LATEST_TURNS:]),
            claim=held,
        )

    def _quote(self, state: SupportState, refund: dict[str, Any]) -> Quote | None:
        filed = None
        for call in reversed(state.round_calls):
            if call.name == "quote_refund" and isinstance(call.result, dict):
                filed = call.result
                break
        if filed is None:
            return None
        now: str | None = None
        customer = self.backend.get_customer(state.ticket.customer_email)
        if customer is not None:
            live = self.backend.quote_refund(customer_id=customer.id, invoice_id=str(filed["invoice_id"]))
            now = None if live is None else f"{live.committed:.2f}"
        return Quote(
            invoice_id=str(filed["invoice_id"]),
            currency=str(filed.get("currency", refund.get("currency", ""))),
            paid=f"{Decimal(str(filed['paid'])):.2f}",
            entitled=f"{Decimal(str(filed['entitled'])):.2f}",
            committed_at_filing=f"{Decimal(str(filed['committed'])):.2f}",
            basis=_basis(filed.get("basis")),
            committed_now=now,
        )

    def claim(self, ticket_id: str, operator: Operator) -> Claim:
        p = self.pending(ticket_id)
        with self.store.transaction() as tx:
            won, held = self.store.console.claim(
                tx, p.ticket_id, p.round, operator.name, seconds=self.claim_seconds
            )
        if not won:
            raise ClaimConflict(
                f"{held.reviewer} is reviewing ticket {p.ticket_id}",
                ticket_id=p.ticket_id,
                holder=held.reviewer,
            )
        return held

    def release(self, ticket_id: str, operator: Operator) -> bool:
        ticket_id = validate.ticket_id(ticket_id)
        with self.store.transaction() as tx:
            return self.store.console.release(tx, ticket_id, operator.name)

    def decide(
        self,
        ticket_id: str,
        operator: Operator,
        *,
        action: Action,
        note: str,
        source: str,
        amount: Decimal | None = None,
    ) -> RoundResult:
        """Approve (``amount``: less than asked), reject, or respond to the agent without deciding,
        as ``operator``, who must hold a live claim; a decision finishes the paused round, a
        response sends the agent's answer and leaves the refund waiting. The claim is let go after."""
        p = self.pending(ticket_id)
        with self.store.connection() as conn:
            held = self.store.console.current_claim(conn, p.ticket_id, p.round)
        if held is None or held.reviewer != operator.name:
            raise ClaimConflict(
                f"claim ticket {p.ticket_id} before deciding",
                ticket_id=p.ticket_id,
                holder=None if held is None else held.reviewer,
            )
        if action == "approve":
            result = self.bot.approve(
                p.ticket_id, approver=operator.name, note=note, amount=amount, source=source
            )
        elif action == "reject":
            result = self.bot.reject(p.ticket_id, approver=operator.name, note=note, source=source)
        else:
            result = self.bot.respond(p.ticket_id, note, by=operator.name, source=source)
        self.release(p.ticket_id, operator)
        return result

    # -- tickets ----------------------------------------------------------------------------

    def ticket(self, ticket_id: str, *, at: int | None = None) -> TicketView:
        ticket_id = validate.ticket_id(ticket_id)
        row = self.bot.ticket(ticket_id)
        steps = self.bot.history(ticket_id)
        state = self.bot.state(ticket_id) if at is None else self.bot.state_at(ticket_id, at)
        shown = [s for s in steps if s.seq == at]
        next_step = shown[0].next_step if shown else (steps[-1].next_step if steps else None)
        pending = next((p for p in self.bot.pending_approvals() if p.ticket_id == ticket_id), None)
        with self.store.connection() as conn:
            notes = self.store.console.notes(conn, ticket_id)
            held = self.store.console.current_claim(conn, ticket_id, pending.round) if pending else None
            assigned = self.store.console.assignment(conn, ticket_id)
        clock = next((c for c in self.bot.service_clocks() if c.ticket_id == ticket_id), None)
        audit = self.bot.audit(ticket_id)
        return TicketView(row, state, at, next_step, steps, notes, pending, held, audit, assigned, clock)

    def correct_fact(
        self,
        ticket_id: str,
        position: int,
        operator: Operator,
        *,
        value: str | None,
        reason: str,
        source: str,
    ) -> Fact:
        return self.bot.correct_fact(
            ticket_id, position, value=value, reason=reason, actor=operator.name, source=source
        )

    def correct_profile(
        self,
        email: str,
        entry: str,
        key: str,
        operator: Operator,
        *,
        value: str | None,
        reason: str,
        source: str,
    ) -> Profile:
        return self.bot.correct_profile(
            email, entry, key, value=value, reason=reason, actor=operator.name, source=source
        )

    def fork(self, ticket_id: str, seq: int, operator: Operator, *, source: str) -> str:
        return self.bot.fork(ticket_id, seq, actor=operator.name, source=source)

    # -- human takeover ---------------------------------------------------------------------

    def take_over(self, ticket_id: str, operator: Operator, *, source: str) -> SupportState:
        return self.bot.take_over(ticket_id, agent=operator.name, source=source)

    def reply(self, ticket_id: str, operator: Operator, text: str, *, source: str) -> Turn:
        return self.bot.reply_as_human(ticket_id, text, agent=operator.name, source=source)

    def hand_back(self, ticket_id: str, operator: Operator, *, note: str, source: str) -> RoundResult | None:
        """Give the ticket back; a round answers the customer's waiting messages now, if any."""
        return self.bot.hand_back(ticket_id, agent=operator.name, note=note, source=source)

    def reply_problems(self, ticket_id: str, text: str) -> list[tuple[str, list[str]]]:
        """What a person's reply states that appears nowhere in the ticket or the customer's
        records in the business system: amounts, dates, time limits, identifiers (the check the
        bot's drafts get; a person is warned, not stopped)."""
        state = self.bot.state(validate.ticket_id(ticket_id))
        return guardrails.unsupported(text, lambda: self._evidence(state))

    def _evidence(self, state: SupportState) -> str:
        ticket = state.ticket
        parts = [
            ticket.customer_email,
            ticket.subject,
            ticket.body,
            state.summary,
            state.profile,
            state.findings,
        ]
        parts += [turn.content for turn in state.turns]
        parts += [f"{fact.value}\n{fact.key}" for fact in state.facts]
        parts += [json.dumps(call.result, ensure_ascii=False, default=str) for call in state.tool_log]
        customer = self.backend.get_customer(ticket.customer_email)
        if customer is not None:  # the records: the customer, their subscriptions and invoices
            records = [
                customer,
                *self.backend.list_subscriptions(customer.id),
                *self.backend.list_invoices(customer.id),
            ]
            parts += [json.dumps(to_jsonable_python(r), ensure_ascii=False) for r in records]
        return "\n".join(part for part in parts if part)

    # -- saved replies ----------------------------------------------------------------------

    def saved_replies(self, teams: frozenset[str]) -> list[SavedReply]:
        with self.store.connection() as conn:
            return self.store.console.saved_replies(conn, sorted(teams))

    def save_reply(self, operator: Operator, *, team: str, name: str, body: str) -> None:
        name = validate.text("name", name, limit=200, empty=False).strip()
        body = validate.text("body", body, limit=SAVED_REPLY_CHARS, empty=False).strip()
        with self.store.transaction() as tx:
            self.store.console.save_reply(tx, team, name, body, operator.name)

    def delete_reply(self, *, team: str, name: str) -> bool:
        with self.store.transaction() as tx:
            return self.store.console.delete_reply(tx, team, name)

    def filled(self, reply: SavedReply, ticket_id: str) -> str:
        """The saved reply with its placeholders filled from the ticket: {name} (the customer's
        name in the business system), {ticket}, and the latest current {amount}, {invoice} and
        {date} of its pinned facts. A placeholder with no value stays as written, for the person
        to fill."""
        state = self.bot.state(validate.ticket_id(ticket_id))
        customer = self.backend.get_customer(state.ticket.customer_email)
        current = [f for _, f in current_facts(state.facts) if f.value]
        latest = {
            kind: next((f for f in reversed(current) if f.kind == kind), None) for kind in ("amount", "date")
        }
        invoice = next(
            (f for f in reversed(current) if f.kind == "id" and f.key.upper().startswith("INV")), None
        )
        values = {
            "name": customer.name if customer else None,
            "ticket": state.ticket.id,
            "amount": latest["amount"].key if latest["amount"] else None,
            "date": latest["date"].key if latest["date"] else None,
            "invoice": invoice.value if invoice else None,
        }
        return _PLACEHOLDER.sub(lambda m: values.get(m.group(1)) or m.group(0), reply.body)

    def add_note(self, ticket_id: str, operator: Operator, body: str) -> Note:
        ticket_id = validate.ticket_id(ticket_id)
        body = validate.text("note", body, limit=validate.NOTE_CHARS, empty=False).strip()
        self.bot.ticket(ticket_id)
        with self.store.transaction() as tx:
            return self.store.console.add_note(tx, ticket_id, operator.name, body)

    # -- customers --------------------------------------------------------------------------

    def customer(self, email: str) -> CustomerView:
        email = validate.email(email)
        try:
            profile: Profile | None = self.bot.profile(email)
        except UnknownCustomer:
            profile = None
        tickets = self.bot.tickets(email=email)
        busy = [t.id for t in tickets if t.status in ("in_progress", "waiting_approval")]
        return CustomerView(email, profile, tickets, busy, profile_entries(profile) if profile else [])

    def forget(self, email: str, operator: Operator, *, source: str) -> DeletionReport:
        # Never force: a ticket in a round or waiting for a decision makes it refuse (CustomerBusy).
        return self.bot.forget_customer(validate.email(email), actor=operator.name, source=source)


@dataclass(frozen=True, slots=True)
class Who:
    """The operator an inbox view is for: their name, their teams and their teams' members."""

    name: str
    teams: frozenset[str]
    colleagues: frozenset[str]


def _with_owners(item: InboxItem, assigned: Assignment | None, clock: ServiceClock | None) -> InboxItem:
    return dataclasses.replace(
        item,
        assignee=assigned.operator if assigned else None,
        team=assigned.team if assigned else None,
        clock=clock,
    )


def _in_view(item: InboxItem, view: View, who: Who | None) -> bool:
    if view == "all" or who is None:
        return True
    if view == "mine":
        return who.name in (item.assignee, item.owner, item.claimed_by)
    return (item.team is not None and item.team in who.teams) or (
        item.assignee is not None and item.assignee in who.colleagues
    )


def _holder(assigned: Assignment | None) -> str:
    if assigned is None:
        return "—"
    return " / ".join(part for part in (assigned.operator, assigned.team) if part)


def _start_of(day: date | None) -> datetime | None:
    return None if day is None else datetime.combine(day, time()).astimezone()


def _seconds(now: datetime, since: datetime) -> int:
    return max(0, int((now - since).total_seconds()))


def _basis(logged: object) -> RefundBasis:
    """A quote's basis as the tool log keeps it: a kind and its values, or (a round of 0.2) the
    business system's words."""
    if isinstance(logged, dict):
        values = logged.get("values")
        return RefundBasis.of(str(logged.get("kind", "text")), **(values if isinstance(values, dict) else {}))
    return RefundBasis.text("" if logged is None else str(logged))
