"""The loop: run a ticket's steps one by one, record each, pause for humans, resume anywhere."""

from __future__ import annotations

import dataclasses
import logging
import time
import uuid
from collections.abc import Awaitable, Callable, Iterator
from contextlib import AsyncExitStack, contextmanager
from dataclasses import dataclass, field

from .._records import ApprovalDecision, CustomerRecords
from .._state import ENGINE_FIELDS, StateUpdate, SupportState
from ..backend.base_async import AsyncReadsEnginePool
from ..errors import (
    AmountRefused,
    ApprovalNotPending,
    ContextBudgetExceeded,
    LeaseLost,
    ModelError,
    ReplayMismatch,
    StateError,
    TicketBusy,
)
from ..store._handles import AsyncCursor, AsyncTx
from ..store._recent import RECENT_TICKETS, LastWritten
from ..store._rows import LeaseTaken, Loaded, StepWrite, TicketRow
from ..store._store_async import AsyncStore
from . import _refunds_async as refunds
from . import _steps_async as steps
from ._deps_async import Deps, Effects, ModelTime, ModelWatch, with_placeholders
from ._graph import (
    DECISION,
    EFFECT_STEPS,
    REPLY_STEPS,
    REVIEWER_NOTE,
    ROUTES,
    START,
    pauses_before,
)
from ._record import ROUTED_BY_STATE, NextStep, record_step
from ._rounds import (
    READS_ONLY,
    RoundDeferred,
    RoundResult,
    RoundResults,
    ends_round,
    result_of,
    unanswered,
)
from ._speech import failure_reason

log = logging.getLogger(__name__)


@dataclass(slots=True)
class ActiveRound:
    """One round in progress under this worker's lease: what the loop carries from step to step."""

    loaded: Loaded  # the state after the last step run
    owner: str  # the lease's owner
    turn_count: int  # the ticket's stored turns when the lease was taken
    results: list[RoundResult]  # the drive's results, this round's added as it ends or pauses
    held: AsyncExitStack = field(default_factory=AsyncExitStack)  # the connection of the round's first steps
    records: CustomerRecords | None = None  # the customer's records, read before the round (Engine.drive)
    # The step records written behind, with the round's next transaction (Engine._execute).
    pending: list[StepWrite] = field(default_factory=list)
    renewed: float = field(default_factory=time.monotonic)  # when the lease was last renewed
    model_time: ModelTime | None = None  # the model time it used (Settings.llm_round_seconds)
    released: bool = False  # the round's last record freed the lease ...
    stored_at_release: int | None = None  # ... and said how many turns the ticket had by then

    def note_release(self, stored: int | None) -> None:
        """Note the lease freed by the round's last record, and the turns stored by then (read
        from that record's cursor after the commit: no round trip)."""
        self.released = True
        self.stored_at_release = stored


class AsyncEngine:
    def __init__(self, store: AsyncStore, deps: Deps, *, worker_id: str | None = None) -> None:
        self.store = store
        self.deps = deps
        self.worker_id = worker_id or f"worker-{uuid.uuid4().hex[:12]}"
        # The last state this process saw per ticket. Valid while the ticket's latest seq is
        # unchanged, which acquiring the lease reports, so a round starts without re-reading it.
        self._seen: LastWritten[str, Loaded] = LastWritten(RECENT_TICKETS)
        # Checked once: a runtime protocol check walks the class on every call.
        self._shared_start = isinstance(deps.backend, AsyncReadsEnginePool)
        # Who follows a ticket's rounds step by step in this process (``watching``): the HTTP API's
        # event streams. Looked up once per step; empty, it costs a dictionary miss.
        self._watchers: dict[str, list[Callable[[str], None]]] = {}

    def remembered(self) -> int:
        """How many tickets' last states this process keeps (at most RECENT_TICKETS)."""
        return len(self._seen)

    @contextmanager
    def watching(self, ticket_id: str, on_step: Callable[[str], None]) -> Iterator[None]:
        """Within the block, ``on_step(step)`` is called as each step of the ticket's rounds in this
        process starts (before it runs); it must not block."""
        self._watchers.setdefault(ticket_id, []).append(on_step)
        try:
            yield
        finally:
            watchers = self._watchers.get(ticket_id, [])
            watchers.remove(on_step)
            if not watchers:
                self._watchers.pop(ticket_id, None)

    async def latest(self, ticket_id: str) -> Loaded:
        """The ticket's latest state: this process's copy while the ticket's row says no step was
        recorded since (one small read), else rebuilt from storage.

        Its turns are every stored turn: customer messages stored after the latest step record
        (waiting for a round, or taken up by a round whose worker died before recording it) are
        shown too, though no step has taken them up yet.
        """
        async with self.store.connection() as conn:
            seq, status, stored = await self.store.tickets.ticket_head(conn, ticket_id)
            seen = self._seen.get(ticket_id)
            if seen is not None and seen.seq == seq:
                loaded = dataclasses.replace(seen, status=status) if seen.status != status else seen
            else:
                loaded = await self.store.load(conn, ticket_id)
                # A stale copy is harmless: every use compares its seq with the row's first.
                self._seen[ticket_id] = loaded
            if stored > len(loaded.state.turns):  # shown, never cached: rounds start from the record
                turns = await self.store.turns(conn, ticket_id, stored)
                loaded = dataclasses.replace(loaded, state=dataclasses.replace(loaded.state, turns=turns))
        return loaded

    def forget(self, ticket_id: str) -> None:
        """Drop this process's copy of a ticket's state (after it was deleted or reset)."""
        self._seen.pop(ticket_id)
        self.store.forget_cached(ticket_id)

    # -- entry points ---------------------------------------------------------------------

    def new_owner(self) -> str:
        """A lease owner name; unique per call, so threads of one process exclude each other too."""
        return f"{self.worker_id}:{uuid.uuid4().hex[:8]}"

    async def drive(
        self,
        ticket_id: str,
        *,
        owner: str | None = None,
        taken: LeaseTaken | None = None,
        on_round: Callable[[RoundResult], None] | None = None,
        records: CustomerRecords | None = None,
        row: TicketRow | None = None,
        watch: ModelWatch | None = None,
    ) -> list[RoundResult] | None:
        """Run every round the ticket has work for; None when another worker holds it.

        ``taken``: the caller's own statement already took the lease for ``owner`` (storing a
        message does), and returned the ticket's latest seq and turn count; ``row``: the ticket's
        row read with the lease (a claim), from which a ticket without steps starts. ``on_round`` is
        called with each round's result as it ends (a worker logs it). ``records``: the
        customer's records, read after the lease was taken, for the first round's load_customer.
        ``watch``: told of each model answer, and asked whether a model outage should give the
        ticket back (``RoundDeferred``) instead of handing it to a person; without one (a caller
        waiting) it is handed off at once.
        """
        results: list[RoundResult] = RoundResults(on_round)
        owner = owner or self.new_owner()
        # No connection is held across the loop: each database call takes one from the pool and
        # gives it back, so a round waiting on a model holds none (see the store). Except at the
        # start of a round, where everything up to the first model call reads only this database
        # (the lease, the state, new turns, and the customer's records from a backend that
        # queries it): those reads share one connection instead of queueing for the pool once each.
        # It is taken by the first read that needs it (a worker that claimed the ticket, with
        # the state and turns cached, has none until the customer's records), and given back as
        # soon as the records are read, before the round's Python work on them: under hundreds of
        # threads, each millisecond of Python costs a held connection many more while the thread
        # waits its turn for the interpreter lock.
        while True:
            held = AsyncExitStack()
            if self._shared_start:
                await held.enter_async_context(self.store.keep_connection())
            async with held:
                acquired = await self._acquire(ticket_id, owner, taken, row)
                taken = row = None
                if acquired is None:
                    return results or None
                loaded, turn_count = acquired
                run = ActiveRound(loaded, owner, turn_count, results, held=held, records=records)
                run.model_time = ModelTime(self.deps.settings.llm_round_seconds, watch=watch)
                records = None  # a later round reads them again
                known: int | None = None  # set when the round ended: the ticket may leave the work queue
                try:
                    await self._run(run)
                    loaded = run.loaded
                    known = len(loaded.state.turns)
                except LeaseLost:
                    log.warning("lost the lease on %s mid-round; the new owner finishes it", ticket_id)
                    self._seen.pop(ticket_id)
                    return results or None
                except BaseException:
                    self._seen.pop(ticket_id)
                    raise
                finally:
                    await held.aclose()
                    stored = (
                        run.stored_at_release
                        if run.released
                        else await self._release(ticket_id, owner, known)
                    )
            # Checked after releasing: a message stored while we held the lease saw the lease
            # taken and left its round to us, so look once more before leaving.
            if stored is None or ends_round(loaded, stored):
                return results

    # A lease change is one statement that is its own transaction and commits without waiting
    # for the disk (store/_lease.py's NOWAIT): one round trip, with no BEGIN, SET LOCAL or COMMIT.
    async def _acquire(
        self, ticket_id: str, owner: str, taken: LeaseTaken | None = None, row: TicketRow | None = None
    ) -> tuple[Loaded, int] | None:
        if taken is None:
            async with self.store.statement() as conn:
                cur = await self.store.lease.queue_acquire_lease(
                    conn, ticket_id, owner, self.deps.settings.lease_seconds, track=self.store.tracks_holders
                )
            taken = await self.store.lease.acquired(cur)  # read after the commit
        if taken is None:
            return None
        latest, turn_count = taken
        seen = self._seen.get(ticket_id)
        if seen is not None and seen.seq == latest:
            return seen, turn_count
        if latest == 0 and row is not None:  # no step yet: the ticket as the lease found it
            return Loaded.unstarted(row), turn_count
        async with self.store.connection() as conn:
            return await self.store.load(conn, ticket_id), turn_count

    async def _release(self, ticket_id: str, owner: str, known: int | None = None) -> int | None:
        async with self.store.statement() as conn:
            cur = await self.store.lease.queue_release_lease(conn, ticket_id, owner, known=known)
        return await self.store.lease.released(cur)

    async def decide(
        self,
        ticket_id: str,
        decision: ApprovalDecision,
        *,
        audit: Callable[[AsyncTx, SupportState, ApprovalDecision], Awaitable[None]] | None = None,
    ) -> tuple[int, list[RoundResult]]:
        """Record the decision on the paused round and run on: (that round, the rounds' results).

        ``decision.amount``: an edited approval, never more than the request asked (AmountRefused,
        before anything is written). ``audit`` writes the decision's audit row in the transaction
        that records it.
        """
        owner, loaded, turn_count = await self._paused(ticket_id)
        try:
            refund = loaded.state.refund_request
            if decision.amount is not None and refund is not None and decision.amount > refund.amount:
                raise AmountRefused(
                    f"{decision.amount} is more than refund request {refund.id} asked ({refund.amount} "
                    f"{refund.currency}); approve at most that, or reject it",
                    ticket_id=ticket_id,
                    amount=f"{decision.amount:.2f}",
                    asked=f"{refund.amount:.2f}",
                    currency=refund.currency,
                )
            now = self.deps.clock()
            decision = dataclasses.replace(decision, decided_at=now)
            async with self.store.transaction() as tx:
                # The business system applies the decision in this transaction, so a refund is
                # approved if and only if the decision recorded here says so.
                deps = self._decision_deps(tx, loaded)
                update = await refunds.decide(loaded.state, deps, decision)
                recorded = update["approval"]
                assert recorded is not None  # decide() returns the decision it applied
                decision = recorded
                if not await self.store.tickets.decide_approval(
                    tx,
                    ticket_id,
                    loaded.state.round,
                    approved=decision.approved,
                    approver=decision.approver,
                    note=decision.note,
                    amount=decision.amount,
                    now=now,
                ):
                    raise ApprovalNotPending(
                        f"the refund on {ticket_id} was already decided",
                        ticket_id=ticket_id,
                        reason="decided",
                    )
                if audit is not None:
                    await audit(tx, loaded.state, decision)
                decided, write, _ = self._record(loaded, DECISION, update, "approval")
                await self._flush(tx, [write], ticket_id, owner, effects=deps.effects)
                await self.store.queue.mark_due(
                    tx, ticket_id
                )  # should this process die now, a worker finishes the round
                self._seen[ticket_id] = decided
        except BaseException:
            await self._release(ticket_id, owner)
            raise
        # The lease is still ours: the round goes on under it instead of freeing and retaking the ticket.
        return decided.state.round, await self.drive(
            ticket_id, owner=owner, taken=LeaseTaken(decided.seq, turn_count)
        ) or []

    async def respond(
        self,
        ticket_id: str,
        note: str,
        *,
        audit: Callable[[AsyncTx, SupportState], Awaitable[None]] | None = None,
    ) -> list[RoundResult]:
        """A reviewer's note to the agent on the paused refund: the agent's answer to the customer is
        drafted and checked first (RespondRefused, nothing recorded, when it fails the checks), then
        the note and the answer are recorded and the round pauses again, undecided."""
        owner, loaded, turn_count = await self._paused(ticket_id)
        try:
            noted = dataclasses.replace(loaded.state, reviewer_note=note)
            deps = dataclasses.replace(self.deps, round=noted.round, step=REVIEWER_NOTE)
            if deps.settings.pii_placeholders:
                deps = with_placeholders(deps, noted)
            drafted = await steps.answer_note(noted, deps)  # a model call under the lease, no connection held
            async with self.store.transaction() as tx:
                if audit is not None:
                    await audit(tx, loaded.state)
                noted_loaded, write, _ = self._record(loaded, REVIEWER_NOTE, drafted, "respond")
                await self._flush(tx, [write], ticket_id, owner)
                await self.store.queue.mark_due(tx, ticket_id)
                self._seen[ticket_id] = noted_loaded
        except BaseException:
            await self._release(ticket_id, owner)
            raise
        return await self.drive(ticket_id, owner=owner, taken=LeaseTaken(noted_loaded.seq, turn_count)) or []

    async def _paused(self, ticket_id: str) -> tuple[str, Loaded, int]:
        """Take the lease of a ticket whose round waits for a refund decision: (owner, its state,
        its stored turn count). ApprovalNotPending when it does not wait; TicketBusy while a round runs."""
        owner = self.new_owner()
        acquired = await self._acquire(ticket_id, owner)
        if acquired is None:
            async with self.store.connection() as conn:
                person = await self.store.tickets.human_agent(conn, ticket_id)  # an unknown ticket says so
            if person is not None:
                raise ApprovalNotPending(
                    f"ticket {ticket_id} is not waiting for approval: {person} has taken it over",
                    ticket_id=ticket_id,
                )
            raise await self._busy(ticket_id)
        loaded, turn_count = acquired
        if loaded.next_step != "approval" or not pauses_before(loaded.next_step, loaded.state):
            await self._release(ticket_id, owner)
            raise ApprovalNotPending(
                f"ticket {ticket_id} is not waiting for approval (status {loaded.status}); "
                "pending_approvals() lists the tickets that are",
                ticket_id=ticket_id,
                status=loaded.status,
            )
        return owner, loaded, turn_count

    async def _busy(self, ticket_id: str) -> TicketBusy:
        async with self.store.connection() as conn:
            wait = await self.store.lease.lease_remaining(conn, ticket_id)  # an unknown ticket says so
        return TicketBusy(
            f"ticket {ticket_id} is busy: another worker is running a round of it. Nothing was "
            f"recorded; retry in a moment (at the latest in {wait:.1f} s, when that worker's "
            "lease ends)",
            ticket_id=ticket_id,
            retry_after=wait,
        )

    # -- a person's actions between rounds (run/_takeover.py) ---------------------------------

    async def hold(self, ticket_id: str) -> tuple[str, Loaded, int]:
        """Take the ticket's lease for a person's action: (owner, latest state, stored turn count).

        Raises TicketBusy while a round runs: a person's action never waits on a model call.
        """
        owner = self.new_owner()
        async with self.store.statement() as conn:
            cur = await self.store.lease.queue_acquire_lease(
                conn,
                ticket_id,
                owner,
                self.deps.settings.lease_seconds,
                person=True,
                track=self.store.tracks_holders,
            )
        taken = await self.store.lease.acquired(cur)
        if taken is None:
            raise await self._busy(ticket_id)
        acquired = await self._acquire(ticket_id, owner, taken)
        assert acquired is not None
        return owner, *acquired

    async def record_action(
        self,
        tx: AsyncTx,
        loaded: Loaded,
        owner: str,
        step: str,
        update: StateUpdate,
        *,
        stored_turns: int | None = None,
    ) -> Loaded:
        """Record a person's action as a step between rounds (next step None), in ``tx``."""
        after, write, _ = self._record(loaded, step, update, None, stored_turns=stored_turns)
        await self._flush(tx, [write], loaded.state.ticket.id, owner)
        self._seen[loaded.state.ticket.id] = after
        return after

    async def release(self, ticket_id: str, owner: str) -> None:
        await self._release(ticket_id, owner)

    def _decision_deps(self, tx: AsyncTx, loaded: Loaded) -> Deps:
        round_ = loaded.state.round
        effects = Effects(tx, loaded.state.ticket.id, round_, DECISION)
        return dataclasses.replace(self.deps, round=round_, step=DECISION, effects=effects)

    # -- the loop ---------------------------------------------------------------------------

    async def _run(self, run: ActiveRound) -> None:
        """Run the round's steps until it ends or pauses; ``run.loaded`` is where it stopped."""
        ticket_id = run.loaded.state.ticket.id
        while True:
            step = run.loaded.next_step
            if step is None:
                if not unanswered(run.loaded.state, run.turn_count):
                    return
                step = START
            if step not in READS_ONLY:
                await run.held.aclose()  # gives the round's first connection back before any model call
            if step not in ROUTES:
                raise ReplayMismatch(
                    f"ticket {ticket_id} stopped before step {step!r}, which this version does not have; "
                    "run it with the version that started it, or fork it from an earlier step",
                    ticket_id=ticket_id,
                    step=step,
                )
            if pauses_before(step, run.loaded.state):
                run.results.append(result_of(run.loaded.state, "waiting_approval"))
                return
            for on_step in self._watchers.get(ticket_id, ()):
                on_step(step)
            run.loaded = await self._execute(run, step)
            self._seen[ticket_id] = run.loaded
            if run.loaded.next_step is None:
                run.results.append(result_of(run.loaded.state, run.loaded.state.outcome or "resolved"))
            if run.released:  # the lease went with the round's last record
                if pauses_before(run.loaded.next_step, run.loaded.state):
                    run.results.append(result_of(run.loaded.state, "waiting_approval"))
                return
            if time.monotonic() - run.renewed > self.deps.settings.lease_seconds / 3:
                async with self.store.statement() as conn:
                    await self.store.lease.renew_lease(
                        conn,
                        ticket_id,
                        run.owner,
                        self.deps.settings.lease_seconds,
                        track=self.store.tracks_holders,
                    )
                run.renewed = time.monotonic()

    async def _execute(self, run: ActiveRound, step: str) -> Loaded:
        """Run one step and record it.

        Records of steps that neither act on the business system nor add turns are written
        behind: they are queued and go to the database with the next record that must commit
        (an effect, a reply, a pause; every round ends with one). A crash before that loses only
        steps that are re-run from the customer's message, which was committed before the round
        began; nothing the customer or the business system saw is ever lost or repeated.

        Only a step that acts on the business system holds a connection while it runs (its
        transaction), and the round's first steps (see ``drive``); those steps call no model.
        """
        loaded, state, pending, owner = run.loaded, run.loaded.state, run.pending, run.owner
        if step == START:
            loaded, write = await self._start_round(loaded, run.turn_count)
            pending.append(write)
            return loaded
        deps = dataclasses.replace(
            self.deps, round=state.round, step=step, records=run.records, model_time=run.model_time
        )
        if step not in EFFECT_STEPS:
            try:
                update, next_step = await self._call(step, state, deps)
            except RoundDeferred:
                if pending:  # the steps done are kept: the retry starts at the one that failed
                    async with self.store.transaction() as tx:
                        await self._flush(tx, pending, state.ticket.id, owner)
                raise
            if step in READS_ONLY:
                await (
                    run.held.aclose()
                )  # its reads are done: the rest of the round needs no shared connection
            loaded, write, must_commit = self._record(loaded, step, update, next_step)
            pending.append(write)
            if must_commit:
                release = ends_round(loaded, run.turn_count)  # a pause frees the ticket with its record
                async with self.store.transaction() as tx:
                    cur = await self._flush(
                        tx, pending, state.ticket.id, owner, release=release, after=loaded
                    )
                if release:
                    run.note_release(await self.store.lease.released(cur))
            return loaded
        release = False
        # Step records commit without waiting for the disk, except those that carry new turns, a
        # human decision or a side effect: losing any other step to a database crash only means
        # running it again. A reply always commits durably, so its transaction starts that way.
        # Steps that reply lock the ticket row before they act, with the BEGIN: a message stored
        # from now on waits for the reply's record, and those stored before are read below.
        opening = (
            self.store.tickets.lock_turn_count_statement(state.ticket.id) if step in REPLY_STEPS else None
        )
        async with self.store.transaction_with(opening, durable=step in REPLY_STEPS) as (tx, lock_cur):
            deps = dataclasses.replace(deps, effects=Effects(tx, state.ticket.id, state.round, step))
            update, next_step = await self._call(step, state, deps)
            stored = None
            if update.get("turns"):
                # Customer messages may have arrived mid-round; they take their place before our reply.
                stored = (
                    await self.store.tickets.locked_turn_count(lock_cur, state.ticket.id)
                    if lock_cur is not None
                    else await self.store.tickets.lock_turn_count(tx, state.ticket.id)
                )
                arrived = (await self.store.turns(tx, state.ticket.id, stored))[len(state.turns) :]
                update = {
                    **update,
                    "turns": [*(dataclasses.replace(t, idx=None) for t in arrived), *update["turns"]],
                }
            loaded, write, must_commit = self._record(loaded, step, update, next_step, stored_turns=stored)
            pending.append(write)
            release = ends_round(loaded, run.turn_count)  # the round ends here: its record frees the ticket
            cur = await self._flush(
                tx, pending, state.ticket.id, owner, effects=deps.effects, release=release, after=loaded
            )
            if (must_commit or deps.effects.ran) and step not in REPLY_STEPS:  # type: ignore[union-attr]
                await self.store.history.make_durable(
                    tx
                )  # a reply the customer may see, or an effect, survives any crash
        if release:
            run.note_release(await self.store.lease.released(cur))
        for turn in loaded.state.turns[len(state.turns) :]:  # committed now, so safe to cache
            self.store.remember_turn(state.ticket.id, turn)
        return loaded

    async def _flush(
        self,
        tx: AsyncTx,
        pending: list[StepWrite],
        ticket_id: str,
        owner: str,
        *,
        effects: Effects | None = None,
        release: bool = False,
        after: Loaded | None = None,
    ) -> AsyncCursor:
        """Write the queued records, fenced by the lease: a worker that lost the ticket writes nothing.
        The side effects the transaction ran (``effects``) are recorded by the same statement.

        A release ends this worker's part of the round: ``after`` (the state after the records)
        says which turns it saw, so the ticket leaves the work queue unless a message came since.
        """
        turns = len(after.state.turns) if release and after is not None else None
        ran = effects.records if effects is not None else ()
        cur = await self.store.history.record_steps(
            tx, ticket_id, owner, pending, effects=ran, release=release, known=turns
        )
        pending.clear()
        return cur

    async def _call(self, step: str, state: SupportState, deps: Deps) -> tuple[StateUpdate, NextStep]:
        if deps.settings.pii_placeholders:
            deps = with_placeholders(deps, state)
        try:
            update = await steps.STEPS[step](state, deps)
        except (ModelError, ContextBudgetExceeded) as exc:
            if step == "handoff":
                raise
            watch = deps.model_time.watch if deps.model_time is not None else None
            if isinstance(exc, ModelError) and watch is not None and watch.defer(exc):
                log.info("model unavailable in %s of %s; the ticket waits for it", step, state.ticket.id)
                raise RoundDeferred(
                    str(exc), ticket_id=state.ticket.id, step=step, reason=exc.reason, spent=exc.spent
                ) from exc
            # A model fault or a prompt that cannot fit must not lose the ticket: a human takes it.
            log.warning("%s in %s of %s: %s", type(exc).__name__, step, state.ticket.id, exc)
            handoff: StateUpdate = {"handoff_reason": failure_reason(state, step, exc)}
            if isinstance(exc, ModelError) and exc.spent is not None:  # the provider still billed it
                handoff.update(steps.spent(exc.spent))
            return handoff, "handoff"
        if bad := sorted(ENGINE_FIELDS & update.keys()):
            raise StateError(f"step {step!r} wrote {bad}, which only the engine sets", step=step)
        return update, ROUTED_BY_STATE  # record_step reads the route off the state after the step

    async def _start_round(self, loaded: Loaded, turn_count: int) -> tuple[Loaded, StepWrite]:
        state = loaded.state
        # The round takes up every message stored when the lease was taken, and any that arrived
        # during the last round (already in state.turns). Those are committed (send() stores them
        # first) and never change, so they come from the store's cache, without a lock.
        count = max(turn_count, len(state.turns))
        new_turns = (await self.store.turns(None, state.ticket.id, count))[len(state.turns) :]
        update: StateUpdate = {
            "round": state.round + 1,
            "handled_upto": count,
            "turns": [dataclasses.replace(t, idx=None) for t in new_turns],
        }
        loaded, write, _ = self._record(loaded, START, update, "load_customer", stored_turns=count)
        return loaded, write

    def _record(
        self,
        loaded: Loaded,
        step: str,
        update: StateUpdate,
        next_step: NextStep,
        *,
        stored_turns: int | None = None,
    ) -> tuple[Loaded, StepWrite, bool]:
        """``record_step`` with this engine's settings."""
        return record_step(
            loaded,
            step,
            update,
            next_step,
            max_revisions=self.deps.settings.max_revisions,
            stored_turns=stored_turns,
        )
