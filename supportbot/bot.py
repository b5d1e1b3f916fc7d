"""SupportBot: the public entry point. Opens tickets, takes messages and approvals, shows memory."""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import UTC, datetime
from types import TracebackType

from . import lifecycle
from .backend.base import Backend
from .backend.demo import DemoBackend
from .config import Settings
from .deps import Deps
from .engine import INTERRUPTS, Engine, RoundResult
from .errors import EmptyMessage, InvalidEmail, InvalidInput, MessageTooLong, UnknownCustomer
from .lifecycle import DeletionReport, Pruned, PruneReport
from .llm.base import LLM
from .llm.factory import models_from_settings
from .memory import tokens
from .memory.profile import Profile
from .memory.tokens import turn_tokens, with_tokens
from .profiles import Profiles
from .state import SupportState, Turn
from .store import repo
from .store.repo import PendingApproval, StepRecord, TicketRow
from .store.store import Store

_EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$")


def _utcnow() -> datetime:
    return datetime.now(UTC)


class SupportBot:
    """A support agent's memory and state engine over one PostgreSQL database.

    One instance is safe to share between threads: rounds of different tickets run side by side,
    rounds of one ticket take turns (the ticket's lease), and a round holds a pooled connection
    only while it talks to the database, never while it waits on a model.
    """

    def __init__(self, store: Store, deps: Deps) -> None:
        self._store = store
        self._deps = deps
        self._engine = Engine(store, deps)

    @classmethod
    def open(
        cls,
        database_url: str | None = None,
        *,
        llm: LLM | None = None,
        small_llm: LLM | None = None,
        backend: Backend | None = None,
        settings: Settings | None = None,
        clock: Callable[[], datetime] = _utcnow,
    ) -> SupportBot:
        """Connect (starting the embedded PostgreSQL when no URL is configured) and migrate."""
        settings = settings or Settings.from_env()
        url = database_url or settings.database_url
        if url is None:
            from .store.embedded import embedded_url

            url = embedded_url(settings.data_dir)
        store = Store(
            url,
            max_size=settings.pool_max_size,
            pool_timeout=settings.pool_timeout,
            db_timeout=settings.db_timeout,
            prepared_statements=settings.prepared_statements,
        )
        if llm is None:
            llm, default_small = models_from_settings(settings)
            small_llm = small_llm or default_small
        model = llm
        backend = backend or DemoBackend(store.pool)
        profiles = Profiles(store, backend, clock=clock, mask=settings.mask_pii)
        deps = Deps(
            llm=model,
            small_llm=small_llm or model,
            backend=backend,
            settings=settings,
            clock=clock,
            profiles=profiles,
        )
        return cls(store, deps)

    def close(self) -> None:
        self._store.close()

    def __enter__(self) -> SupportBot:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    @property
    def settings(self) -> Settings:
        return self._deps.settings

    # -- conversations ---------------------------------------------------------------------

    def open_ticket(self, email: str, subject: str, body: str) -> RoundResult:
        """Create a ticket whose first customer message is ``body``, and run its first round."""
        email = _check_email(email)
        body = self._check_message(body)
        subject = (subject or "").strip() or body[:30]
        _check_text("subject", subject)
        now = self._deps.clock()
        with self._store.transaction() as tx:
            ticket = repo.create_ticket(tx, email=email, subject=subject, body=body, now=now)
            repo.lock_turn_count(tx, ticket.id)
            first = with_tokens(Turn("customer", body, round=1, created_at=now, idx=0))
            repo.insert_turns(tx, ticket.id, [first])
        return self._answer(ticket.id, 0)

    def send(self, ticket_id: str, message: str, *, message_id: str | None = None) -> RoundResult:
        """Add a customer message and run the round that answers it.

        The message is committed before any work starts. With ``message_id``, sending the same
        id again stores nothing new and returns the result for the first copy.
        """
        message = self._check_message(message)
        if message_id is not None:
            _check_text("message_id", message_id)
        owner = self._engine.new_owner()
        with self._store.connection() as conn:
            # Storing the message also takes the ticket if it is free: the round needs no lease statement.
            turn, _, taken = repo.append_customer_message(
                conn,
                ticket_id,
                message,
                message_id=message_id,
                now=self._deps.clock(),
                tokens=turn_tokens(Turn("customer", message)),
                lease=(owner, self._deps.settings.lease_seconds),
            )
        self._store.remember_turn(ticket_id, turn)
        assert turn.idx is not None
        return self._answer(ticket_id, turn.idx, owner=owner, taken=taken)

    def resume(self, ticket_id: str) -> RoundResult | None:
        """Finish whatever the ticket has pending (after a crash, say); None if nothing was."""
        with self._store.connection() as conn:
            repo.get_ticket(conn, ticket_id)
        results = self._engine.drive(ticket_id)
        if results is None:
            return RoundResult(ticket_id=ticket_id, round=0, outcome="queued")
        return results[-1] if results else None

    def approve(self, ticket_id: str, *, approved: bool, approver: str, note: str = "") -> RoundResult:
        """Record a human's decision on the pending refund and finish the paused round."""
        approver = approver.strip() if approver else ""
        if not approver:
            raise InvalidInput("approve() needs the approver's name (approver='...')", ticket_id=ticket_id)
        _check_text("note", note)
        paused_round, results = self._engine.decide(
            ticket_id, approved=approved, approver=approver, note=note
        )
        for result in results:
            if result.round == paused_round:
                return result
        return self._round_result(ticket_id, paused_round)

    def profile(self, email: str) -> Profile:
        """The customer's current profile (rebuilt only if their records changed)."""
        customer = self._deps.backend.get_customer(_check_email(email))
        if customer is None:
            raise UnknownCustomer(f"no customer with email {email!r} in the business system", step="profile")
        return self._deps.profiles.for_customer(customer)  # type: ignore[no-any-return]

    def pending_approvals(self) -> list[PendingApproval]:
        with self._store.connection() as conn:
            return repo.pending_approvals(conn)

    # -- memory ----------------------------------------------------------------------------

    def state(self, ticket_id: str) -> SupportState:
        return self._engine.latest(ticket_id).state

    def state_at(self, ticket_id: str, seq: int) -> SupportState:
        with self._store.connection() as conn:
            return self._store.load(conn, ticket_id, at=seq).state

    def history(self, ticket_id: str) -> list[StepRecord]:
        with self._store.connection() as conn:
            repo.get_ticket(conn, ticket_id)
            return repo.history(conn, ticket_id)

    def tickets(self, *, email: str | None = None, status: str | None = None) -> list[TicketRow]:
        with self._store.connection() as conn:
            return repo.list_tickets(conn, email=email, status=status)

    def fork(self, ticket_id: str, seq: int) -> str:
        """A new ticket whose history is this one's up to step ``seq``; returns its id."""
        with self._store.transaction() as tx:
            loaded = self._store.load(tx, ticket_id, at=seq)
            source = loaded.state.ticket
            new = repo.create_ticket(
                tx,
                email=source.customer_email,
                subject=source.subject,
                body=source.body,
                now=source.created_at,
            )
            repo.copy_history(
                tx,
                ticket_id,
                new.id,
                seq=seq,
                turn_count=len(loaded.state.turns),
                tool_call_count=len(loaded.state.tool_log),
                fact_count=len(loaded.state.facts),
                status=loaded.status,
            )
            interrupt = INTERRUPTS.get(loaded.next_step or "")
            if interrupt is not None and not interrupt(loaded.state):
                repo.copy_approval_request(tx, ticket_id, new.id, loaded.state.round)
        return new.id

    # -- lifecycle ---------------------------------------------------------------------------

    def forget_customer(self, email: str, *, force: bool = False) -> DeletionReport:
        """Delete the customer's tickets, memory, profile and business rows in one transaction.

        Raises CustomerBusy (deleting nothing) while one of their tickets is mid-round or waits
        for an approval; ``force=True`` cancels those and deletes anyway.
        """
        report = lifecycle.forget_customer(self._store, self._deps.backend, _check_email(email), force=force)
        self._drop_cached(report.tickets)
        return report

    def prune(self, *, closed_before: datetime, keep: str = "last") -> PruneReport:
        """Drop step records and checkpoints closed tickets no longer need; state() is unchanged."""
        return lifecycle.prune(self._store, closed_before=closed_before, keep=keep)

    def pruned(self, ticket_id: str) -> Pruned | None:
        """What ``prune`` removed from the ticket's history (steps before ``kept_from``), if anything."""
        with self._store.connection() as conn:
            repo.get_ticket(conn, ticket_id)
            return lifecycle.pruned(conn, ticket_id)

    def reset(self) -> dict[str, int]:
        """Empty every engine table and the demo data in one transaction; ticket numbers go on."""
        rows, tickets = lifecycle.reset(self._store, self._deps.backend)
        self._drop_cached(tickets)
        return rows

    def _drop_cached(self, tickets: list[str]) -> None:
        # This process's copies of deleted tickets, profiles and texts: they would keep personal data in memory.
        if self._deps.profiles is not None:
            self._deps.profiles.clear()
        tokens.forget_cached()  # and every cache of customer text registered with it
        for ticket_id in tickets:
            self._engine.forget(ticket_id)

    # -- internals ---------------------------------------------------------------------------

    def _answer(
        self, ticket_id: str, idx: int, *, owner: str | None = None, taken: tuple[int, int] | None = None
    ) -> RoundResult:
        for result in self._engine.drive(ticket_id, owner=owner, taken=taken) or []:
            if result.handled_upto > idx:
                return result
        with self._store.connection() as conn:
            round_ = repo.round_of_message(conn, ticket_id, idx)
        if round_ is None:
            return RoundResult(ticket_id=ticket_id, round=0, outcome="queued")
        return self._round_result(ticket_id, round_)

    def _round_result(self, ticket_id: str, round_: int) -> RoundResult:
        with self._store.connection() as conn:
            seq = repo.last_seq_of_round(conn, ticket_id, round_)
            if seq is None:
                return RoundResult(ticket_id=ticket_id, round=round_, outcome="queued")
            loaded = self._store.load(conn, ticket_id, at=seq)
        state = loaded.state
        if loaded.next_step is None:
            outcome = state.outcome or "resolved"
        elif state.outcome == "waiting_approval":
            outcome = "waiting_approval"
        else:
            outcome = "queued"
        reply = state.reply if loaded.next_step is None else ""
        return RoundResult(
            ticket_id=ticket_id, round=round_, outcome=outcome, reply=reply, handled_upto=state.handled_upto
        )

    def _check_message(self, message: str) -> str:
        if not isinstance(message, str):
            raise InvalidInput(f"a message must be text, not {type(message).__name__}")
        _check_text("message", message)
        stripped = message.strip()
        if not stripped:
            raise EmptyMessage("the message is empty; send the customer's words")
        limit = self._deps.settings.max_message_chars
        if len(stripped) > limit:
            raise MessageTooLong(
                f"the message has {len(stripped)} characters, more than the limit of {limit}; "
                "split it, or raise SUPPORTBOT_MAX_MESSAGE_CHARS"
            )
        return stripped


def _check_email(email: str) -> str:
    email = (email or "").strip()
    if not _EMAIL.match(email) or "\x00" in email:
        raise InvalidEmail(f"{email!r} is not an email address like name@example.com")
    return email


def _check_text(name: str, value: str) -> None:
    if "\x00" in value:
        raise InvalidInput(f"the {name} contains a NUL byte, which cannot be stored; remove it")
