"""The rows the store's SQL reads and writes, as typed values: shared by the synchronous and the
asynchronous store (their modules are generated one from the other; a class must exist once)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal, NamedTuple, TypedDict

from .._records import ToolCall
from .._state import Fact, SupportState, Ticket, TicketStatus, Turn


@dataclass(frozen=True, slots=True)
class TicketRow:
    id: str
    customer_email: str
    subject: str
    body: str
    status: TicketStatus
    turn_count: int
    created_at: datetime
    updated_at: datetime
    human_agent: str | None = None  # the person who owns the ticket; None while the bot does

    def ticket(self) -> Ticket:
        return Ticket(self.id, self.customer_email, self.subject, self.body, self.created_at)


@dataclass(frozen=True, slots=True)
class PendingApproval:
    ticket_id: str
    round: int
    customer_email: str
    subject: str
    request: dict[str, Any]
    requested_at: datetime


@dataclass(frozen=True, slots=True)
class StepRecord:
    seq: int
    round: int
    step: str
    next_step: str | None
    created_at: datetime


@dataclass(frozen=True, slots=True)
class StepRow:
    seq: int
    round: int
    step: str
    next_step: str | None
    turn_count: int
    tool_call_count: int
    update: dict[str, Any]
    fact_count: int = 0


@dataclass(frozen=True, slots=True)
class StepWrite:
    """One step record and everything it adds, ready to be written with others in one call."""

    row: StepRow
    created_at: datetime
    turns: Sequence[Turn] = ()  # new turns, idx assigned
    tool_calls: Sequence[ToolCall] = ()  # new tool calls, idx assigned
    facts_start: int = 0
    facts: Sequence[Fact] = ()  # new facts, stored from position facts_start
    checkpoint: dict[str, Any] | None = None
    status: str | None = None  # the ticket's new status, if it changed
    approval: dict[str, Any] | None = None  # an approval request for this round


class EffectRecord(TypedDict):
    """A side effect on the business system, recorded with the step that ran it (run/_deps.Effects)."""

    key: str  # ticket:round:step:kind, the key the business system was given
    round: int
    step: str
    kind: str
    result: object  # what the business system returned, as JSON


@dataclass(frozen=True, slots=True)
class Claim:
    """A ticket a worker leased from the queue: the lease owner and what ``Engine.drive`` needs."""

    ticket_id: str
    owner: str
    last_seq: int
    turn_count: int
    due: datetime  # when its oldest waiting message (or decision) was stored
    # The ticket's row as the claim found it: a ticket with no step yet starts its first round
    # from it, and its customer's records are read for all the claimed tickets at once.
    ticket: TicketRow
    # The turns stored since its latest step (the messages its round answers, at most _WAITING of
    # them): the worker caches them, so the round need not read them back one ticket at a time.
    waiting: tuple[Turn, ...]


@dataclass(frozen=True, slots=True)
class QueueEntry:
    ticket_id: str
    status: str
    due: datetime | None
    waited: float  # seconds since ``due`` (0 when not queued)
    running: bool  # a worker holds its lease now
    attempts: int
    retry_at: datetime | None
    error: str | None  # why its last round failed; with ``due`` None: why it went to a human


@dataclass(frozen=True, slots=True)
class QueueStats:
    queued: int  # tickets that need a worker, running ones included (not those a person took over)
    running: int  # of those, leased by a worker now
    retrying: int  # waiting out a backoff after a failed round
    handed_off: int  # given to a human after their last attempt failed
    oldest_wait: float  # seconds the oldest queued ticket has waited (0: none)
    workers: int  # worker processes whose heartbeat is recent
    rounds: int  # rounds finished by those workers since they started
    failures: int  # failed rounds of those workers


@dataclass(frozen=True, slots=True)
class Loaded:
    """A state as of step ``seq`` and where the loop goes from there."""

    state: SupportState
    seq: int  # 0 when no step was recorded yet
    next_step: str | None
    status: str

    @staticmethod
    def unstarted(row: TicketRow) -> Loaded:
        """A ticket no step was recorded for: its state is the ticket itself."""
        return Loaded(state=SupportState(ticket=row.ticket()), seq=0, next_step=None, status=row.status)


@dataclass(frozen=True, slots=True)
class AuditEntry:
    """One audit row. ``detail`` holds ids, numbers and flags; free text only under ``note``.

    ``detail`` by action: approve/reject ``round, approved, refund, invoice, amount[, note]``;
    take_over ``seq``; human_reply ``seq, turn, chars`` (the text is the turn's, not copied);
    hand_back ``seq[, note]``; fork ``seq, fork`` (the new ticket); forget_customer
    ``customer_sha256, tickets`` (a count). Redacted rows carry ``redacted: true``.
    """

    id: int
    at: datetime
    actor: str
    action: AuditAction
    ticket_id: str | None
    customer_email: str | None  # None once the customer was forgotten
    source: str
    detail: dict[str, Any]


@dataclass(frozen=True, slots=True)
class Waiting:
    """A ticket a person has to act on, and the turns that decide its clock."""

    ticket_id: str
    customer_email: str
    subject: str
    status: str
    human_agent: str | None
    updated_at: datetime
    requested_at: datetime | None  # when a pending approval was asked for
    handed_off_at: datetime | None  # the bot's last reply (the hand-off notice)
    human_replied: bool  # a person has answered since the hand-off
    unanswered_since: datetime | None  # the first customer message after the last reply


@dataclass(frozen=True, slots=True)
class Reading:
    queue_depth: int
    oldest_wait: float  # seconds
    approvals_waiting: int
    escalated: int
    with_human: int
    workers: dict[str, list[int]]  # worker id -> [rounds, failures, running], live ones
    context_quantiles: list[float] | None  # prompt tokens at the 0.5, 0.9 and 0.99 quantiles
    context_samples: int
    prompt_tokens: int  # of the last hour's model calls
    completion_tokens: int
    cost: float
    rounds_finished: int  # rounds that ended in the last hour (answered)
    handoffs: int  # rounds that handed off in the last hour


@dataclass(frozen=True, slots=True)
class PruneReport:
    """What ``prune`` removed; ``bytes_freed`` is the net ``pg_column_size`` of the rows."""

    tickets: list[str]
    rows: dict[str, int]
    bytes_freed: int


@dataclass(frozen=True, slots=True)
class HeldTicket:
    id: str
    status: str
    leased_until: datetime | None  # set while a worker holds the ticket
    awaiting_approval: bool


@dataclass(frozen=True, slots=True)
class PruneTotals:
    """What was pruned of one ticket's history, summed over every prune."""

    kept_from: int | None
    steps: int | None
    checkpoints: int | None
    bytes: int | None
    pruned_at: datetime | None


AuditAction = Literal[
    "approve",
    "reject",
    "respond",
    "take_over",
    "human_reply",
    "hand_back",
    "fork",
    "forget_customer",
    "correct_fact",
    "correct_profile",
    "assign",
]


@dataclass(frozen=True, slots=True)
class ApiKey:
    """An integration's key of the HTTP API, as stored: never its secret, only the secret's digest."""

    id: str
    name: str
    secret_sha256: str
    customers: list[str]  # addresses, "@domain" entries, or "*": whom the key may act for
    rate_per_minute: int
    created_by: str
    created_at: datetime
    revoked_at: datetime | None

    def __repr__(self) -> str:  # the digest is no secret, but a log has no use for it either
        return f"ApiKey(id={self.id!r}, name={self.name!r}, revoked={self.revoked_at is not None})"


# Small results of single statements: named, and still unpacked like the tuples they were.


class TicketHead(NamedTuple):
    seq: int  # the ticket's latest step
    status: str
    turn_count: int  # turns stored


class LeaseTaken(NamedTuple):
    seq: int  # the ticket's latest step when the lease was taken
    turn_count: int


class StoredMessage(NamedTuple):
    turn: Turn  # the customer's turn as stored (a repeated message_id: the first one)
    stored_now: bool  # False: a retry of a message stored before
    taken: LeaseTaken | None  # the lease the same statement took, if it was asked for and free


class LeaseRequest(NamedTuple):
    owner: str
    seconds: float
    track_holder: bool  # name the holder's server process (direct connections only)


class FailureCount(NamedTuple):
    attempts: int  # failed rounds so far
    handed_off: bool  # the ticket went to a human now


class ProfileCorrection(NamedTuple):
    entry: str
    key: str
    value: str | None  # None: the entry was removed


class Truncated(NamedTuple):
    ticket_ids: list[str]  # the tickets there were
    rows: dict[str, int]  # per ``schema.table``


class RetentionDue(NamedTuple):
    steps: int
    summaries: int
    facts: int
    audit: int


class RetentionRemoved(NamedTuple):
    summaries: int
    facts: int
    audit: int
