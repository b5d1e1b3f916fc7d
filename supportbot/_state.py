"""The ticket state, which of its fields live across rounds, and the one reducer that changes it."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal, TypedDict

from pydantic import BaseModel, ConfigDict, Field

from ._records import ApprovalDecision, Customer, Finding, Hit, RefundRequest, Spend, ToolCall
from .errors import AppendOnlyViolation, UnknownStateField

Role = Literal["customer", "agent"]
Outcome = Literal["resolved", "waiting_approval", "escalated", "queued", "with_human"]
"""How a round ended: answered, paused for an approval, handed to a human, or left to another worker;
``with_human``: no round ran, a person owns the ticket (see SupportBot.take_over)."""
TicketStatus = Literal["open", "in_progress", "waiting_approval", "resolved", "escalated", "with_human"]
"""A ticket row's status: between rounds (open), mid-round, paused for approval, closed either way,
or owned by a person (no round runs until they hand it back)."""
Category = Literal["billing", "refund", "invoice", "account", "technical", "plan_change", "api", "other"]


@dataclass(frozen=True, slots=True)
class Ticket:
    id: str
    customer_email: str
    subject: str
    body: str
    created_at: datetime


@dataclass(frozen=True, slots=True)
class Turn:
    """One message in a ticket's conversation. Stored once, never changed."""

    role: Role
    content: str
    round: int = 0
    message_id: str | None = None
    tokens: int | None = None
    created_at: datetime | None = None
    idx: int | None = None  # position in the ticket; None until the reducer appends it
    author: str | None = None  # who wrote an agent turn: None for the bot, else the person's name


@dataclass(frozen=True, slots=True)
class Fact:
    """An exact fact pinned outside the summary (a bill number, an amount, a promise).

    The ledger is append-only: a corrected value is a new fact whose ``supersedes`` is the
    position of the fact it replaces (see ``memory.facts``).
    """

    kind: str
    value: str  # the words as written
    key: str  # the canonical value ("CNY 3500.00", "2026-03-27"); current facts are unique by (kind, key)
    turn: int  # index of the turn the fact first appeared in
    subject: str = ""  # what the fact is about ("升级费", "收到退款"); same kind and subject supersede
    role: str = ""  # who said it: "customer" or "agent" ("" in ledgers written before roles were kept)
    supersedes: int | None = None  # ledger position of the fact this one replaces


class Triage(BaseModel):
    model_config = ConfigDict(frozen=True)

    category: Category
    needs_account_data: bool
    needs_human: bool
    urgency: Literal["low", "normal", "high"] = "normal"
    summary: str = Field(default="", description="the customer's request in one sentence")
    search_query: str = Field(default="", description="help-center query: error codes and product terms")


class Review(BaseModel):
    model_config = ConfigDict(frozen=True)

    passed: bool
    problems: list[str] = Field(default_factory=list)


@dataclass(frozen=True, slots=True)
class SupportState:
    # -- persistent: carried from round to round --------------------------------------------
    ticket: Ticket
    turns: tuple[Turn, ...] = ()
    summary: str = ""
    summarized_upto: int = 0  # turns[:summarized_upto] are covered by the summary
    facts: tuple[Fact, ...] = ()
    profile: str = ""
    tool_log: tuple[ToolCall, ...] = ()
    cost: float = 0.0
    round: int = 0
    handled_upto: int = 0  # customer turns before this index have been taken up by a round
    facts_upto: int = 0  # turns before this index have been scanned into the facts ledger
    topic: str = ""  # the category the ticket's first round was triaged as: what the ticket is about
    human_agent: str = ""  # the person who owns the ticket ("" while the bot does); no round runs meanwhile
    # -- per round: reset at the start of every round ----------------------------------------
    customer: Customer | None = None
    triage: Triage | None = None
    hits: tuple[Hit, ...] = ()
    findings: str = ""  # the account lookup's findings, as the prompt shows them
    account_findings: tuple[Finding, ...] = ()  # the same, as records (supportbot.findings)
    refund_request: RefundRequest | None = None
    draft: str = ""
    review: Review | None = None
    revisions: int = 0
    approval: ApprovalDecision | None = None
    # A reviewer's note to the agent on the paused refund (SupportBot.respond): the respond step
    # answers the customer from it, and the refund still waits for its decision.
    reviewer_note: str = ""
    reviewer_answer: str = ""  # the agent's answer to it, checked, which the respond step sends
    outcome: Outcome | None = None
    handoff_reason: str = ""
    context_usage: dict[str, int] = field(
        default_factory=dict
    )  # the reply prompt's tokens per section, "total", "budget"
    summary_error: str = ""  # why this round's compression was skipped, if it was
    # Model calls, tokens and cost of this round (``cost`` is the ticket's). Spend is frozen, so one
    # shared default instance is safe.
    round_spend: Spend = Spend()  # noqa: RUF009

    @property
    def reply(self) -> str:
        """What the agent answered in this round: its turn, stored once (not also as a field)."""
        for turn in reversed(self.turns):
            if turn.role == "agent" and turn.author is None:  # a person's reply is not the round's
                return turn.content if turn.round == self.round else ""
        return ""

    @property
    def round_calls(self) -> tuple[ToolCall, ...]:
        """This round's tool calls, in order; read from the end, so it costs the round, not the ticket."""
        calls = self.tool_log
        start = len(calls)
        while start > 0 and calls[start - 1].round == self.round:
            start -= 1
        return calls[start:]

    @property
    def latest_customer_message(self) -> Turn | None:
        for turn in reversed(self.turns):
            if turn.role == "customer":
                return turn
        return None


class StateUpdate(TypedDict, total=False):
    """A step's partial update: the fields of SupportState it changes, each of its field's type,
    but for the fields the reducer adds to (see ``reduce``): ``turns``, ``tool_log`` and ``facts``
    list the new items only, ``cost`` and ``round_spend`` what the step spent.

    Its keys are SupportState's fields (a test holds the two lists together).
    """

    ticket: Ticket
    turns: Sequence[Turn]
    summary: str
    summarized_upto: int
    facts: Sequence[Fact]
    profile: str
    tool_log: Sequence[ToolCall]
    cost: float
    round: int
    handled_upto: int
    facts_upto: int
    topic: str
    human_agent: str
    customer: Customer | None
    triage: Triage | None
    hits: tuple[Hit, ...]
    findings: str
    account_findings: tuple[Finding, ...]
    refund_request: RefundRequest | None
    draft: str
    review: Review | None
    revisions: int
    approval: ApprovalDecision | None
    reviewer_note: str
    reviewer_answer: str
    outcome: Outcome | None
    handoff_reason: str
    context_usage: dict[str, int]
    summary_error: str
    round_spend: Spend


# The one list of what survives a round. Everything else is reset when a round starts, or last
# round's review, findings or refund request would leak into this one.
PERSISTENT_FIELDS: frozenset[str] = frozenset(
    {
        "ticket",
        "turns",
        "summary",
        "summarized_upto",
        "facts",
        "facts_upto",
        "profile",
        "tool_log",
        "cost",
        "round",
        "handled_upto",
        "topic",
        "human_agent",
    }
)
APPEND_ONLY_FIELDS: frozenset[str] = frozenset({"turns", "tool_log"})
# The facts ledger only grows too; an update lists just the facts it adds.
EXTEND_FIELDS: frozenset[str] = frozenset({"facts"})
# Fields kept in their own append-only tables, not in step records or checkpoints.
LOG_FIELDS: frozenset[str] = APPEND_ONLY_FIELDS | EXTEND_FIELDS
# A step's update holds what it adds: its model calls' cost and spend, not running totals.
ADDITIVE_FIELDS: frozenset[str] = frozenset({"cost", "round_spend"})
ENGINE_FIELDS: frozenset[str] = frozenset({"ticket", "round", "handled_upto", "human_agent"})

FIELD_NAMES: tuple[str, ...] = tuple(f.name for f in dataclasses.fields(SupportState))
ROUND_FIELDS: tuple[str, ...] = tuple(name for name in FIELD_NAMES if name not in PERSISTENT_FIELDS)


# The engine's record of a round starting. Replaying it clears the per-round fields first, so the
# record itself holds only the new round number and the turns it takes up.
ROUND_START = "start_round"


def field_defaults(names: Iterable[str]) -> dict[str, Any]:
    """The default value of each named field; a fresh one where the default is made by a factory."""
    wanted = set(names)
    return {
        f.name: f.default_factory() if f.default_factory is not dataclasses.MISSING else f.default
        for f in dataclasses.fields(SupportState)
        if f.name in wanted
    }


def round_reset() -> dict[str, Any]:
    """Every per-round field with its default value."""
    return field_defaults(ROUND_FIELDS)


def new_round(state: SupportState) -> SupportState:
    """The state with every per-round field back at its default (replaced, never added to)."""
    return _evolve(state, round_reset())


_set_field = object.__setattr__


def _evolve(state: SupportState, changes: Mapping[str, Any]) -> SupportState:
    """``dataclasses.replace`` for the reducer's hot path, with the names already checked.

    Every step of every round goes through here (and replace() re-checks each name and runs the
    generated __init__), so the copy is made directly; SupportState has no __post_init__ to skip.
    """
    new = object.__new__(SupportState)
    for name in FIELD_NAMES:
        _set_field(new, name, changes[name] if name in changes else getattr(state, name))
    return new


def reduce(state: SupportState, update: StateUpdate) -> SupportState:
    """Apply a step's partial update: turns and tool_log append, cost and spend add, the rest replaces."""
    changes: dict[str, Any] = {}
    for name, value in update.items():
        if name not in FIELD_NAMES:
            raise UnknownStateField(
                f"step wrote unknown state field {name!r};"
                " declare it on SupportState or drop it from the update"
            )
        current = getattr(state, name)
        if name in APPEND_ONLY_FIELDS:
            changes[name] = current + _fresh_items(name, value, start=len(current))
        elif name in EXTEND_FIELDS:
            if not isinstance(value, (list, tuple)) or not all(isinstance(item, Fact) for item in value):
                raise AppendOnlyViolation(f"{name} only grows: return a list of the new Facts to add")
            changes[name] = current + tuple(value)
        elif name in ADDITIVE_FIELDS:
            changes[name] = current + value
        else:
            changes[name] = value
    return _evolve(state, changes) if changes else state


def _fresh_items(name: str, items: Any, *, start: int) -> tuple[Any, ...]:
    expected = Turn if name == "turns" else ToolCall
    if not isinstance(items, (list, tuple)):
        raise AppendOnlyViolation(f"{name} is append-only: return a list of new {expected.__name__}s to add")
    fresh = []
    for offset, item in enumerate(items):
        if not isinstance(item, expected):
            raise AppendOnlyViolation(f"{name} takes {expected.__name__} items, got {type(item).__name__}")
        if item.idx is not None:
            raise AppendOnlyViolation(
                f"{name} is append-only: item {item.idx} is already stored; return only new items"
            )
        fresh.append(dataclasses.replace(item, idx=start + offset))
    return tuple(fresh)
