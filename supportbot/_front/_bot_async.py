"""SupportBot: the public entry point. Opens tickets, takes messages and approvals, shows memory."""

from __future__ import annotations

import asyncio  # sync: import threading
import hashlib
import time
import warnings
from collections.abc import Callable
from datetime import UTC, datetime
from decimal import Decimal
from types import TracebackType
from typing import Literal, overload

from .._aio import AsyncOpening  # sync: -
from .._records import ApprovalDecision
from .._reports import DeletionReport, KeepMode, Pruned, ResetReport
from .._state import Fact, Outcome, SupportState, TicketStatus, Turn
from ..backend.base_async import AsyncBackend
from ..config import Settings
from ..errors import InvalidInput, UnknownCustomer, WaitTimeout
from ..llm.base import AsyncLLM
from ..memory import _facts as facts
from ..memory import _ledger as ledger
from ..memory import _tokens as tokens
from ..memory._profile import ENTRIES, Profile
from ..memory._tokens import turn_tokens, with_tokens
from ..reply import _context as context
from ..run import _corrections_async as corrections
from ..run import _forks_async as forks
from ..run import _metrics_async as metrics
from ..run import _results_async as round_results
from ..run import _retention_async as retention
from ..run import _sla_async as sla
from ..run import _takeover_async as takeover
from ..run import _waiting as waiting
from ..run._aio_waiting import AsyncAnswers  # sync: from ..run._waiting import Answers
from ..run._aio_worker import AsyncWorker  # sync: from ..run._worker import Worker
from ..run._deps_async import Deps
from ..run._engine_async import AsyncEngine
from ..run._rounds import RoundResult
from ..run._values import RetentionPolicy, RetentionReport, ServiceClock, Submitted, WorkerStats
from ..store._handles import AsyncTx
from ..store._rows import (
    AuditEntry,
    LeaseRequest,
    LeaseTaken,
    PendingApproval,
    PruneReport,
    QueueEntry,
    QueueStats,
    StepRecord,
    StoredMessage,
    TicketRow,
)
from ..store._store_async import AsyncStore
from . import _lifecycle_async as lifecycle
from . import _open_async as opening
from . import _validate as validate


def _utcnow() -> datetime:
    return datetime.now(UTC)


class AsyncSupportBot:
    """A support agent's memory and state engine over one PostgreSQL database.

    One instance is safe to share between threads (``AsyncSupportBot``: between the tasks of its
    event loop): rounds of different tickets run side by side, rounds of one ticket take turns
    (the ticket's lease), and a round holds a pooled connection only while it talks to the
    database, never while it waits on a model.
    """

    def __init__(self, store: AsyncStore, deps: Deps) -> None:
        self._store = store
        self._deps = deps
        self._engine = AsyncEngine(store, deps)
        self._answers = AsyncAnswers(waiting.listen_url(deps.settings, store.url), store.connect_kwargs)
        self._worker: AsyncWorker | None = None
        self._own_models: tuple[object, ...] = ()

    @classmethod
    def open(
        cls,
        database_url: str | None = None,
        *,
        llm: AsyncLLM | None = None,
        small_llm: AsyncLLM | None = None,
        backend: AsyncBackend | str | None = None,
        settings: Settings | None = None,
        clock: Callable[[], datetime] = _utcnow,
    ) -> AsyncOpening[AsyncSupportBot]:  # sync: ) -> SupportBot:
        """Connect (starting the embedded PostgreSQL when no URL is configured) and migrate.
        ``AsyncSupportBot.open()`` is awaited (``await AsyncSupportBot.open(...)``) or entered
        (``async with AsyncSupportBot.open(...) as bot``, closed at the end of the block).

        ``backend`` is the business system: your implementation of the ``Backend`` protocol
        (``AsyncBackend`` for ``AsyncSupportBot``), ``"demo"`` for the demo business system that
        lives in the same database (its tables are created then, and only then), or
        ``"package.module:factory"`` (``factory(settings)`` returns one). Without it,
        ``SUPPORTBOT_BACKEND`` names one; with neither, ConfigError.
        """
        opened = cls._open(database_url, llm, small_llm, backend, settings, clock)
        return AsyncOpening(opened)  # sync: return opened

    @classmethod
    async def _open(
        cls,
        database_url: str | None,
        llm: AsyncLLM | None,
        small_llm: AsyncLLM | None,
        backend: AsyncBackend | str | None,
        settings: Settings | None,
        clock: Callable[[], datetime],
    ) -> AsyncSupportBot:
        store, deps = await opening.store_and_deps(
            database_url,
            llm=llm,
            small_llm=small_llm,
            backend=backend,
            settings=settings or Settings.from_env(),
            clock=clock,
        )
        bot = cls(store, deps)
        # The model clients built here from the settings are the bot's to close; given ones are not.
        bot._own_models = tuple(
            {id(m): m for m in (deps.llm, deps.small_llm) if m is not llm and m is not small_llm}.values()
        )
        return bot

    async def close(self) -> None:
        await self._answers.close()
        await self._store.close()
        for model in self._own_models:
            close = getattr(model, "close", None)
            if callable(close):
                await close()  # the HTTP client's connections to the model server

    async def __aenter__(self) -> AsyncSupportBot:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    @property
    def backend(self) -> AsyncBackend:
        """The business system this bot reads and acts on."""
        return self._deps.backend

    @property
    def settings(self) -> Settings:
        return self._deps.settings

    # -- conversations ---------------------------------------------------------------------

    @overload
    async def open_ticket(self, email: str, *, subject: str = "", body: str) -> RoundResult: ...
    @overload
    async def open_ticket(
        self, email: str, *, subject: str = "", body: str, wait: Literal[True]
    ) -> RoundResult: ...
    @overload
    async def open_ticket(
        self, email: str, *, subject: str = "", body: str, wait: Literal[False]
    ) -> Submitted: ...

    async def open_ticket(
        self, email: str, *, subject: str = "", body: str, wait: bool = True
    ) -> RoundResult | Submitted:
        """Create a ticket whose first customer message is ``body``, and run its first round.

        ``subject`` defaults to the start of ``body``. Both are keyword-only: two strings side by
        side are too easy to swap. ``wait=False``: return once the ticket is stored; a worker
        runs the round (``wait()`` gets its result).
        """
        email = validate.email(email)
        body = self._check_message(body)
        given = validate.optional_text("subject", subject, limit=validate.SUBJECT_CHARS)
        subject = (given or "").strip() or body[:30]
        wait = validate.flag("wait", wait)
        now = self._deps.clock()
        owner = self._engine.new_owner() if wait else None
        lease = (
            LeaseRequest(owner, self._deps.settings.lease_seconds, self._store.tracks_holders)
            if owner
            else None
        )
        async with self._store.transaction() as tx:
            # Queued either way: should this process die before the round ends, a worker runs it.
            ticket = await self._store.tickets.create_ticket(
                tx, email=email, subject=subject, body=body, now=now, due=True, lease=lease
            )
            await self._store.tickets.lock_turn_count(tx, ticket.id)
            first = with_tokens(Turn("customer", body, round=1, created_at=now, idx=0))
            await self._store.tickets.insert_turns(tx, ticket.id, [first])
        if owner is None:
            return Submitted(ticket_id=ticket.id, idx=0)
        self._store.remember_turn(ticket.id, first)
        return await round_results.answer(self._engine, ticket.id, 0, owner=owner, taken=LeaseTaken(0, 1))

    async def send(self, ticket_id: str, message: str, *, message_id: str | None = None) -> RoundResult:
        """Add a customer message and run the round that answers it.

        The message is committed before any work starts. With ``message_id``, sending the same
        id again stores nothing new and returns the result for the first copy.

        A live round of another thread or process that holds the ticket answers the message
        before it lets go: this call waits for that answer (up to ``send_wait_seconds``), and runs
        the round itself should the holder die or let go first; a holder that died is replaced at
        once where the server can tell (a direct connection), else when its lease expires.
        ``queued`` means the message is stored and will be answered later: the ticket waits for a
        refund decision (the round after it answers), or the live round did not answer within the
        bound. ``resume()`` then runs what is pending once the ticket is free.
        """
        ticket_id = validate.ticket_id(ticket_id)
        owner = self._engine.new_owner()
        # Storing the message also takes the ticket if it is free (or its holder is gone): the round
        # needs no lease statement.
        turn, _, taken = await self._store_message(ticket_id, message, message_id, owner=owner)
        assert turn.idx is not None
        if taken is None and await self._owned_by(ticket_id):
            return await round_results.with_human(self._store, ticket_id, turn.idx)
        result = await round_results.answer(self._engine, ticket_id, turn.idx, owner=owner, taken=taken)
        if result.outcome != "queued":
            return result
        # A live round of another process holds the ticket: it answers this message before it
        # lets go (Engine.drive looks again after releasing). Wait for that answer, taking the
        # ticket over should its holder die meanwhile, up to send_wait_seconds.
        return (
            await self._answer_when_free(ticket_id, turn.idx, self._deps.settings.send_wait_seconds) or result
        )

    # -- without waiting: submit, wait, workers ----------------------------------------------

    async def submit(self, ticket_id: str, message: str, *, message_id: str | None = None) -> Submitted:
        """Store a customer message for the workers to answer, and return at once.

        The message is committed before this returns, as with ``send``; the same ``message_id``
        again stores nothing (``stored`` False). ``wait()`` returns the round that answers it.
        """
        turn, stored, _ = await self._store_message(ticket_id, message, message_id, owner=None)
        assert turn.idx is not None
        return Submitted(
            ticket_id=validate.ticket_id(ticket_id), idx=turn.idx, message_id=message_id, stored=stored
        )

    async def wait(self, ticket_id: str, submitted: Submitted | int, *, timeout: float = 60.0) -> RoundResult:
        """The result of the round that answers ``submitted`` (or of round number ``submitted``),
        once it ended or paused for approval; WaitTimeout after ``timeout`` seconds.

        A ticket whose rounds failed ``worker_max_attempts`` times went to a human instead: its
        result is ``escalated`` with no reply (``queue()`` shows the reason). A message to a ticket
        a person has taken over is theirs to answer: ``with_human`` at once. With no worker
        running (no heartbeat) a sweep (``worker_sweep_seconds``) after the call, this caller runs
        the round itself once the ticket is free; an error of that round is raised here.
        """
        ticket_id = validate.ticket_id(ticket_id)
        if isinstance(submitted, Submitted):
            if submitted.ticket_id != ticket_id:
                raise InvalidInput(
                    f"the submitted message belongs to ticket {submitted.ticket_id}, not {ticket_id}",
                    ticket_id=ticket_id,
                )
            idx, round_ = submitted.idx, None
        else:
            idx, round_ = None, validate.round_number(submitted)
        timeout = validate.seconds("timeout", timeout)
        sweep = self._deps.settings.worker_sweep_seconds
        # A worker claims a due ticket within a sweep; after one, a waiter with no live worker to
        # rely on runs the round itself.
        unclaimed_after = time.monotonic() + sweep

        async def check() -> RoundResult | None:
            if time.monotonic() >= unclaimed_after and not await self._workers_alive():
                for result in await self._engine.drive(ticket_id) or []:  # takes the ticket if it is free
                    if (idx is not None and result.handled_upto > idx) or result.round == round_:
                        return result
            return await round_results.finished(self._store, ticket_id, idx, round_)

        return await self._answers.wait(ticket_id, check, timeout)

    async def _workers_alive(self) -> bool:
        alive = max(5.0, 3 * self._deps.settings.worker_sweep_seconds)
        async with self._store.connection() as conn:
            return await self._store.queue.live_workers(conn, alive_within=alive) > 0

    async def _answer_when_free(self, ticket_id: str, idx: int, timeout: float) -> RoundResult | None:
        """The round that answers turn ``idx`` once the live round holding the ticket lets go, or
        this caller's own round should the holder die or let go first; None after ``timeout`` s,
        or at once when the ticket waits for a refund decision (its messages are answered after)."""

        async def check() -> RoundResult | None:
            for result in await self._engine.drive(ticket_id) or []:  # takes the ticket if it is free
                if result.handled_upto > idx:
                    return result
            done = await round_results.finished(self._store, ticket_id, idx, None)
            if done is None and (await self.ticket(ticket_id)).status == "waiting_approval":
                return RoundResult(ticket_id=ticket_id, round=0, outcome="queued")
            return done

        try:
            return await self._answers.wait(ticket_id, check, timeout)
        except WaitTimeout:
            return None

    async def work(
        self, *, threads: int | None = None, stop: asyncio.Event | None = None, until_idle: bool = False
    ) -> WorkerStats:
        """Answer queued tickets in this thread until ``stop`` is set (or, with ``until_idle``,
        until nothing is left to claim); ``threads`` rounds at a time (default
        ``Settings.worker_threads``). Any number of processes may work on one database.
        Raises ConfigError, before claiming anything, when the tokenizer cannot be loaded.
        """
        settings = self._deps.settings
        count = validate.count("threads", threads if threads is not None else settings.worker_threads)
        worker = AsyncWorker(
            self._engine,
            self._store,
            settings,
            threads=count,
            listen_url=waiting.listen_url(settings, self._store.url),
            stop=stop,
        )
        self._worker = worker
        try:
            return await worker.run(until_idle=until_idle)
        finally:
            self._worker = None

    def stop_work(self) -> None:
        """Make ``work()`` (running in another thread) stop taking tickets and return."""
        if self._worker is not None:
            self._worker.stop()

    async def stats(self) -> QueueStats:
        """The work queue (depth, oldest wait, retries, hand-offs) and the running workers' counters."""
        async with self._store.connection() as conn:
            return await self._store.queue.stats(
                conn, alive_within=max(5.0, 3 * self._deps.settings.worker_sweep_seconds)
            )

    async def metrics(self) -> str:
        """Prometheus metrics in the text format (run/_metrics.py): the queue, approvals waiting,
        tickets with people, the live workers' counters and the last hour's rounds, context usage
        and model spend, read from the database; while this bot works, its worker's counters."""
        worker = self._worker
        stats = worker.stats() if worker is not None else None
        return await metrics.exposition(self._store, self._deps.settings, self._deps.clock(), worker=stats)

    async def queue(self, *, limit: int = 100) -> list[QueueEntry]:
        """The queued tickets, the longest-waiting first, then those handed to a human after failing."""
        limit = validate.count("limit", limit)
        async with self._store.connection() as conn:
            return await self._store.queue.entries(conn, limit=limit)

    async def _store_message(
        self, ticket_id: str, message: str, message_id: str | None, *, owner: str | None
    ) -> StoredMessage:
        ticket_id = validate.ticket_id(ticket_id)
        message = self._check_message(message)
        if message_id is not None:
            validate.text("message_id", message_id, limit=validate.MESSAGE_ID_CHARS, empty=False)
        return await self._store.append_message(
            ticket_id,
            message,
            message_id=message_id,
            now=self._deps.clock(),
            tokens=turn_tokens(Turn("customer", message)),
            lease=(owner, self._deps.settings.lease_seconds) if owner is not None else None,
        )

    async def resume(self, ticket_id: str) -> RoundResult | None:
        """Finish whatever the ticket has pending (after a crash, say); None if nothing was."""
        ticket_id = validate.ticket_id(ticket_id)
        async with self._store.connection() as conn:
            await self._store.tickets.get_ticket(conn, ticket_id)
        results = await self._engine.drive(ticket_id)
        if results is None:
            outcome: Outcome = "with_human" if await self._owned_by(ticket_id) else "queued"
            return RoundResult(ticket_id=ticket_id, round=0, outcome=outcome)
        return results[-1] if results else None

    async def approve(
        self,
        ticket_id: str,
        *,
        approver: str,
        note: str = "",
        amount: Decimal | None = None,
        approved: bool | None = None,
        source: str = "api",
    ) -> RoundResult:
        """Approve the pending refund as ``approver`` and finish the paused round.

        ``amount``: approve less than the request asked (an edited approval; at most what was
        asked, else AmountRefused before anything is written); the business system must still
        allow it, and the reply states the amount approved and the one asked. Raises
        ApprovalNotPending when the ticket does not wait for a decision (final), and TicketBusy
        while another worker runs a round of it (retry after ``retry_after`` s). ``approved=`` is
        deprecated: ``approved=False`` rejects, use :meth:`reject` instead.
        """
        if approved is not None:
            approved = validate.flag("approved", approved)
            warnings.warn(
                "approve(approved=...) is deprecated; call approve() to approve and reject() to reject",
                DeprecationWarning,
                stacklevel=2,
            )
            if not approved:
                return await self.reject(ticket_id, approver=approver, note=note, source=source)
        edited = validate.amount("amount", amount) if amount is not None else None
        return await self._decide(
            ticket_id, approved=True, approver=approver, note=note, amount=edited, source=source
        )

    async def reject(
        self, ticket_id: str, *, approver: str, note: str = "", source: str = "api"
    ) -> RoundResult:
        """Reject the pending refund as ``approver`` (``note`` is told to the customer); finish the round."""
        return await self._decide(
            ticket_id, approved=False, approver=approver, note=note, amount=None, source=source
        )

    async def respond(self, ticket_id: str, note: str, *, by: str, source: str = "api") -> RoundResult:
        """Send ``note`` to the agent on the pending refund without deciding it, as reviewer ``by``:
        the agent answers the customer from it (asks for the invoice number, say) and the refund
        still waits (``outcome == "waiting_approval"``, ``reply`` the answer sent).

        The answer passes the same checks as any draft, else RespondRefused and nothing is sent or
        recorded. Raises ApprovalNotPending when the ticket does not wait for a decision, and
        TicketBusy while another worker runs a round of it.
        """
        ticket_id = validate.ticket_id(ticket_id)
        by = validate.approver(by, ticket_id=ticket_id)
        note = validate.text("note", note, limit=validate.NOTE_CHARS, empty=False)
        source = validate.source(source)

        async def record(tx: AsyncTx, state: SupportState) -> None:
            refund = state.refund_request
            detail: dict[str, object] = {"round": state.round, "note": note}
            if refund is not None:
                detail.update(refund=refund.id, invoice=refund.invoice_id, amount=str(refund.amount))
            await self._store.audit.record(
                tx,
                actor=by,
                action="respond",
                source=source,
                ticket_id=ticket_id,
                customer_email=state.ticket.customer_email,
                detail=detail,
            )

        results = await self._engine.respond(ticket_id, note, audit=record)
        paused = [r for r in results if r.outcome == "waiting_approval"]
        return paused[0] if paused else results[-1]

    async def _decide(
        self,
        ticket_id: str,
        *,
        approved: bool,
        approver: str,
        note: str,
        amount: Decimal | None,
        source: str,
    ) -> RoundResult:
        """Record a human's decision on the pending refund and finish the paused round."""
        ticket_id = validate.ticket_id(ticket_id)
        approver = validate.approver(approver, ticket_id=ticket_id)
        note = validate.text("note", note, limit=validate.NOTE_CHARS)
        source = validate.source(source)

        async def record(tx: AsyncTx, state: SupportState, decision: ApprovalDecision) -> None:
            refund = state.refund_request
            detail: dict[str, object] = {"round": state.round, "approved": decision.approved}
            if refund is not None:
                detail.update(refund=refund.id, invoice=refund.invoice_id, amount=str(refund.amount))
            if decision.amount is not None:  # an edited approval: the amount asked and the one approved
                detail["approved_amount"] = str(decision.amount)
            if decision.note:
                detail["note"] = decision.note
            await self._store.audit.record(
                tx,
                actor=approver,
                action="approve" if decision.approved else "reject",
                source=source,
                ticket_id=ticket_id,
                customer_email=state.ticket.customer_email,
                detail=detail,
            )

        decision = ApprovalDecision(approved=approved, approver=approver, note=note, amount=amount)
        paused_round, results = await self._engine.decide(ticket_id, decision, audit=record)
        for result in results:
            if result.round == paused_round:
                return result
        return await round_results.of_round(self._store, ticket_id, paused_round)

    async def profile(self, email: str) -> Profile:
        """The customer's current profile (rebuilt only if their records changed)."""
        email = validate.email(email)
        customer = await self._deps.backend.get_customer(email)
        if customer is None:
            raise UnknownCustomer(
                f"no customer with email {email!r} in the business system", step="profile", email=email
            )
        profiles = self._deps.profiles
        assert profiles is not None  # opening gives every bot its profiles
        return await profiles.for_customer(customer)

    async def service_clocks(self) -> list[ServiceClock]:
        """The running service-level clocks of tickets waiting on a person (a refund decision, a
        hand-off, a customer message on a ticket a person owns), the soonest due first; a clock
        with ``breached`` is past its target (Settings.sla_*_minutes)."""
        async with self._store.connection() as conn:
            rows = await self._store.sla.waiting(conn)
        return sla.clocks(rows, self._deps.settings, self._deps.clock())

    async def pending_approvals(self) -> list[PendingApproval]:
        async with self._store.connection() as conn:
            return await self._store.tickets.pending_approvals(conn)

    # -- memory ----------------------------------------------------------------------------

    async def state(self, ticket_id: str) -> SupportState:
        """The ticket's latest state, with every stored turn (also those no round has taken up yet)."""
        return (await self._engine.latest(validate.ticket_id(ticket_id))).state

    async def state_at(self, ticket_id: str, seq: int) -> SupportState:
        """The state right after step ``seq`` (numbered from 1, as ``history`` lists them)."""
        ticket_id, seq = validate.ticket_id(ticket_id), validate.step_number(seq)
        async with self._store.connection() as conn:
            return (await self._store.load(conn, ticket_id, at=seq)).state

    async def history(self, ticket_id: str) -> list[StepRecord]:
        ticket_id = validate.ticket_id(ticket_id)
        async with self._store.connection() as conn:
            await self._store.tickets.get_ticket(conn, ticket_id)
            return await self._store.history.history(conn, ticket_id)

    async def ticket(self, ticket_id: str) -> TicketRow:
        """The ticket's row: customer, subject, status, turn count, when it was created and updated."""
        ticket_id = validate.ticket_id(ticket_id)
        async with self._store.connection() as conn:
            return await self._store.tickets.get_ticket(conn, ticket_id)

    async def tickets(
        self, *, email: str | None = None, status: TicketStatus | None = None
    ) -> list[TicketRow]:
        email = validate.optional_text("email", email, limit=validate.EMAIL_CHARS)
        if status is not None:
            status = validate.choice("status", status, validate.STATUSES)
        async with self._store.connection() as conn:
            return await self._store.tickets.list_tickets(conn, email=email, status=status)

    async def fork(self, ticket_id: str, seq: int, *, actor: str | None = None, source: str = "api") -> str:
        """A new ticket whose history is this one's up to step ``seq``; returns its id.

        The fork's status is the one the ticket had right after that step: ``in_progress`` from
        inside a round (the next ``resume`` or message finishes that round, on the fork), else
        what the round ended with. Forking inside a round that holds a refund request (from the
        step that filed it until the round ends) raises ForkRefused: the request is one row of the
        business system, and two tickets deciding it would decide one refund twice.
        """
        ticket_id, seq = validate.ticket_id(ticket_id), validate.step_number(seq)
        actor, source = validate.actor(actor), validate.source(source)
        return await forks.fork(self._store, ticket_id, seq, actor=actor, source=source)

    # -- human takeover and the audit log (run/_takeover.py, store/_audit.py) ---------------------------

    async def take_over(self, ticket_id: str, *, agent: str, source: str = "api") -> SupportState:
        """Make ``agent`` the ticket's owner: the bot answers nothing until they hand it back.

        Returns the ticket's state with every stored turn. Raises TicketBusy while a round runs
        (retry after ``retry_after`` s) and TakeoverRefused when another person owns the ticket
        or it is inside a round (waiting for a refund decision: decide it first).
        """
        ticket_id, agent = validate.ticket_id(ticket_id), validate.agent(agent)
        source = validate.source(source)
        return await takeover.take_over(self._engine, ticket_id, agent=agent, source=source)

    async def reply_as_human(self, ticket_id: str, text: str, *, agent: str, source: str = "api") -> Turn:
        """Store ``agent``'s reply to the customer (an agent turn, ``author=agent``); returns the turn.

        Raises NotTakenOver unless ``agent`` owns the ticket (take_over() first).
        """
        ticket_id, agent = validate.ticket_id(ticket_id), validate.agent(agent)
        source = validate.source(source)
        text = self._check_message(text)
        return await takeover.reply_as_human(self._engine, ticket_id, text, agent=agent, source=source)

    async def hand_back(
        self, ticket_id: str, *, agent: str, note: str = "", source: str = "api"
    ) -> RoundResult | None:
        """Give the ticket back to the bot; if customer messages wait unanswered, a round answers them
        now (its result is returned), else None and the next message starts a round.

        ``note`` is for colleagues (the audit log), never shown to the model or the customer.
        """
        ticket_id, agent = validate.ticket_id(ticket_id), validate.agent(agent)
        source = validate.source(source)
        note = validate.text("note", note, limit=validate.NOTE_CHARS)
        return await takeover.hand_back(self._engine, ticket_id, agent=agent, note=note, source=source)

    async def audit(
        self, ticket_id: str | None = None, *, since: datetime | None = None, limit: int = 1000
    ) -> list[AuditEntry]:
        """Audit rows, oldest first: the ticket's, or all; from ``since`` on; the latest ``limit``."""
        if ticket_id is not None:
            ticket_id = validate.ticket_id(ticket_id)
        if since is not None:
            since = validate.moment("since", since)
        limit = validate.count("limit", limit, limit=validate.INT32_MAX)
        async with self._store.connection() as conn:
            return await self._store.audit.entries(conn, ticket_id=ticket_id, since=since, limit=limit)

    async def _owned_by(self, ticket_id: str) -> str | None:
        async with self._store.connection() as conn:
            return await self._store.tickets.human_agent(conn, ticket_id)

    # -- lifecycle ---------------------------------------------------------------------------

    # -- correcting memory (run/_corrections.py) ------------------------------------------------

    async def correct_fact(
        self,
        ticket_id: str,
        position: int,
        *,
        value: str | None,
        reason: str,
        actor: str,
        source: str = "api",
    ) -> Fact:
        """Correct (``value``) or retract (``value=None``) the current pinned fact at ledger
        ``position`` (``state(ticket_id).facts``), as ``actor``, for ``reason``; audited.

        Append-only: the fact recorded supersedes the old one, which history keeps. The next
        prompt shows the corrected value, or the retracted one marked as wrong. Raises
        CorrectionRefused (nothing recorded) for a position with no current fact, an unchanged
        value, or a ticket inside a round; TicketBusy while a round runs.
        """
        ticket_id, actor, source = (
            validate.ticket_id(ticket_id),
            validate.agent(actor),
            validate.source(source),
        )
        position = validate.position("position", position)
        if value is not None:
            value = validate.text("value", value, limit=validate.NOTE_CHARS, empty=False).strip()
        reason = validate.text("reason", reason, limit=validate.NOTE_CHARS, empty=False).strip()
        return await corrections.correct_fact(
            self._engine, ticket_id, position, value=value, reason=reason, actor=actor, source=source
        )

    async def correct_profile(
        self,
        email: str,
        entry: str,
        key: str,
        *,
        value: str | None,
        reason: str,
        actor: str,
        source: str = "api",
    ) -> Profile:
        """Correct or retract one entry of the customer's profile (``entry``: issue, request,
        promise or contact; ``key``: the issue's code or category, the request's or promise's
        text, the contact's slot, as ``profile(email)`` shows them); returns the profile after.
        Audited; every later profile applies it. Raises CorrectionRefused for an entry the
        profile does not show, or a value for an entry that can only be retracted.
        """
        email, actor, source = validate.email(email), validate.agent(actor), validate.source(source)
        entry = validate.choice("entry", entry, ENTRIES)
        key = validate.text("key", key, limit=validate.NOTE_CHARS, empty=False)
        if value is not None:
            value = validate.text("value", value, limit=validate.NOTE_CHARS, empty=False).strip()
        reason = validate.text("reason", reason, limit=validate.NOTE_CHARS, empty=False).strip()
        customer = await self._deps.backend.get_customer(email)
        if customer is None:
            raise UnknownCustomer(f"no customer with email {email!r} in the business system", email=email)
        profiles = self._deps.profiles
        assert profiles is not None
        return await corrections.correct_profile(
            self._store,
            profiles,
            customer,
            entry,
            key,
            value=value,
            reason=reason,
            actor=actor,
            source=source,
        )

    async def forget_customer(
        self, email: str, *, force: bool = False, actor: str | None = None, source: str = "api"
    ) -> DeletionReport:
        """Delete the customer's tickets, memory, profile and business rows in one transaction.

        Raises CustomerBusy (deleting nothing) while one of their tickets is mid-round or waits
        for an approval; ``force=True`` cancels those and deletes anyway. The audit log keeps its
        rows about the customer (who did what, when, on which ticket id) but loses their address
        notes and invoice ids in the same transaction; the row that records the forgetting holds
        a SHA-256 digest of the address and the number of tickets deleted (no row when nothing
        was found to delete).
        """
        email, actor, source = validate.email(email), validate.actor(actor), validate.source(source)

        async def record(tx: AsyncTx, tickets: list[str]) -> None:
            await self._store.audit.redact_customer(tx, email, tickets)
            # A digest, not the address: it can answer "was this address forgotten?", given the address.
            digest = hashlib.sha256(email.lower().encode()).hexdigest()
            detail = {"customer_sha256": digest, "tickets": len(tickets)}
            await self._store.audit.record(
                tx, actor=actor, action="forget_customer", source=source, detail=detail
            )

        report = await lifecycle.forget_customer(
            self._store, self._deps.backend, email, force=force, audit=record
        )
        self._drop_cached(report.tickets)
        return report

    async def prune(self, *, closed_before: datetime, keep: KeepMode = "last") -> PruneReport:
        """Drop step records and checkpoints closed tickets no longer need; state() is unchanged."""
        return await lifecycle.prune(self._store, closed_before=closed_before, keep=keep)

    async def retention(self, *, apply: bool = False) -> RetentionReport:
        """What the retention policy (Settings.retention_*_days) would remove now from resolved,
        quiet tickets and the audit log; ``apply=True`` removes it (workers do so every
        retention_sweep_seconds). Open tickets and pending approvals are never touched."""
        policy, now = RetentionPolicy.of(self._deps.settings), self._deps.clock()
        if validate.flag("apply", apply):
            report = await retention.apply(self._store, policy, now)
            for ticket_id in report.tickets:
                self._engine.forget(ticket_id)
            return report
        return await retention.due(self._store, policy, now)

    async def pruned(self, ticket_id: str) -> Pruned | None:
        """What ``prune`` removed from the ticket's history (steps before ``kept_from``), if anything."""
        ticket_id = validate.ticket_id(ticket_id)
        async with self._store.connection() as conn:
            await self._store.tickets.get_ticket(conn, ticket_id)
            return await lifecycle.pruned(self._store, conn, ticket_id)

    async def reset(self) -> ResetReport:
        """Empty every engine table and the demo data in one transaction; ticket numbers go on."""
        report = await lifecycle.reset(self._store, self._deps.backend)
        self._drop_cached(report.tickets)
        return report

    def _drop_cached(self, tickets: list[str]) -> None:
        # This process's copies of deleted tickets, profiles and texts: they would keep personal data
        # in memory.
        if self._deps.profiles is not None:
            self._deps.profiles.clear()
        self._deps.caches.clear()
        tokens.forget_cached()  # the token counter's memo of the texts it counted
        facts.forget_cached()  # the memo of scanned summary lines
        ledger.forget_cached()  # the memo of ledgers shown, which holds their facts
        context.forget_cached()  # the memo of ticket languages, which holds their turns
        for ticket_id in tickets:
            self._engine.forget(ticket_id)

    # -- internals ---------------------------------------------------------------------------

    def _check_message(self, message: str) -> str:
        return validate.message(message, limit=self._deps.settings.max_message_chars)
