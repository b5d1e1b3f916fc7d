"""Workers: answer every queued ticket without a caller waiting on it.

One dispatcher thread claims due tickets (store/_queue.py) and hands each to a thread that
drives it (``Engine.drive``). It claims as many as it has free threads, plus half as many
again (``lookahead``: half the threads, rounded down): a claim is a database transaction that
waits for a pooled connection and for the interpreter lock like every other thread, and under
hundreds of threads it takes tens to hundreds of milliseconds, during which threads that finish
would otherwise sit idle (with an eighth ahead, three in ten threads that finished a round found
no ticket waiting). While tickets claimed ahead still wait for a thread, it claims again only
once half the lookahead is free, so claims come in batches rather than one per finished round.
A ticket claimed ahead waits here at most until this process's next round ends; its lease covers
the wait.

A round holds a pooled connection only while it talks to the database, so many threads share a
small pool while they wait on the model. A claim brings each ticket's row and waiting messages
(a new ticket's state is its row: nothing to read back), and with a backend that reads customers
in batches (``ReadsCustomerRecords``) the dispatcher then reads the customers of all the tickets
it claimed in one call: a round that continues a ticket this process saw before talks to the
database only for its reply, which keeps the small pool from becoming the queue that every round
waits in.

The dispatcher wakes on a notification (a message stored without a caller, a thread finished)
when a claim would take work, and at least every ``worker_sweep_seconds``, which also finds
rounds whose worker died (their lease expired) and tickets whose retry time came. Stopping: no
new claims; tickets claimed ahead and not started are released at once; running rounds get up to
``worker_shutdown_seconds`` to end; leases still held after that are released.

A model outage (connection refused, timeouts, 429, 5xx, 401/403 after the client's own retries)
counts against the worker, not the ticket: the round gives its ticket back (``RoundDeferred``; the
steps done are kept, no attempt is counted, the ticket is tried again after the pause) and the
worker pauses claiming, ``worker_retry_seconds`` doubling with each outage failure up to
``_MAX_PAUSE``. While the outage lasts it claims one ticket at a time, a probe; the first model
answer ends the outage. Only once the worker has gone ``model_outage_grace`` seconds without a
model do the rounds hand their tickets to people, as ``send()`` does at once (a customer is
waiting there).
"""

from __future__ import annotations

import logging
import queue
import random
import threading
import time
import uuid
from dataclasses import dataclass

from .._records import CustomerRecords
from ..backend.base import ReadsCustomerRecords
from ..config import Settings
from ..errors import ModelError, StoreError
from ..memory import _tokens as tokens
from ..store import _queue as work_queue
from ..store._channels import WORK_CHANNEL
from ..store._listen import Listener
from ..store._rows import Claim
from ..store._store import Store
from . import _retention as retention
from ._engine import Engine
from ._models import OUTAGE_REASONS
from ._rounds import RoundDeferred, RoundResult
from ._values import RetentionPolicy, RetentionReport

log = logging.getLogger("supportbot.worker")

_MAX_PAUSE = 30.0  # seconds: the longest a worker stops claiming in a model outage


@dataclass(frozen=True, slots=True)
class _Task:
    """A claimed ticket on its way to a thread, with its customer's records when read ahead."""

    claim: Claim
    records: CustomerRecords | None


@dataclass(frozen=True, slots=True)
class WorkerStats:
    """This process's worker counters since it started."""

    rounds: int
    failures: int  # failed rounds (each retried, or handed to a human after the last attempt)
    handed_off: int
    running: int  # tickets claimed and not finished: being driven, or claimed ahead
    max_wait: float  # the longest a claimed ticket had waited, in seconds
    deferred: int = 0  # rounds that gave their ticket back in a model outage (none handed off)


class Worker:
    def __init__(
        self,
        engine: Engine,
        store: Store,
        settings: Settings,
        *,
        threads: int,
        listen_url: str | None,
        stop: threading.Event | None = None,
    ) -> None:
        self.engine, self.store, self.settings = engine, store, settings
        self.threads = threads
        self.lookahead = threads // 2  # see the module docstring
        self.id = f"{engine.worker_id}-{uuid.uuid4().hex[:6]}"
        self._listen_url = listen_url
        self.stopping = stop or threading.Event()
        self._wake = threading.Event()
        self._lock = threading.Lock()
        self._idle = threading.Condition(self._lock)
        self._active: dict[str, str] = {}  # ticket -> lease owner, from its claim until its round ends
        self._unstarted: list[str] = []  # lease owners of claims a thread took only after the stop
        self._tasks: queue.SimpleQueue[_Task | None] = queue.SimpleQueue()
        self._rounds = self._failures = self._handed_off = 0
        self._max_wait = 0.0
        # The model outage this worker is in: since when (monotonic; None: the model answers),
        # how many rounds it failed, and until when claiming pauses.
        self._outage_since: float | None = None
        self._outage_failures = self._deferred = 0
        self._pause_until = 0.0
        self._rng = random.Random()

    def stats(self) -> WorkerStats:
        with self._lock:
            return WorkerStats(
                self._rounds,
                self._failures,
                self._handed_off,
                len(self._active),
                self._max_wait,
                self._deferred,
            )

    def stop(self) -> None:
        """Take no more work; ``run`` returns once running rounds end (or the shutdown timeout)."""
        self.stopping.set()
        self._wake.set()

    def run(self, *, until_idle: bool = False) -> WorkerStats:
        """Work until ``stop()`` (or, with ``until_idle``, until nothing is claimable and nothing runs).

        Raises ConfigError before claiming anything when the tokenizer cannot be loaded: every
        round counts tokens, so each claimed ticket would fail its attempts and go to a human.
        """
        # Loaded now, not by the first round: parsing the ranks takes a tenth of a second or more
        # of one thread holding the interpreter lock, just when the first claims start their rounds.
        tokens.encoder()
        listener = None
        if self._listen_url is not None:
            listener = Listener(self._listen_url, [WORK_CHANNEL], lambda _c, _p: self._nudge()).start()
        pool = [
            threading.Thread(target=self._serve, name=f"supportbot-worker-{i}", daemon=True)
            for i in range(self.threads)
        ]
        for thread in pool:
            thread.start()
        log.info("worker %s started: %d threads", self.id, self.threads)
        try:
            self._dispatch(until_idle)
        finally:
            self._shut_down(pool)
            if listener is not None:
                listener.stop()
        stats = self.stats()
        log.info("worker %s stopped: %d rounds, %d failed", self.id, stats.rounds, stats.failures)
        return stats

    def _dispatch(self, until_idle: bool) -> None:
        sweep = self.settings.worker_sweep_seconds
        last_sweep = last_beat = 0.0
        last_retention = time.monotonic()  # the first sweep one period after start, not at once
        while not self.stopping.is_set():
            woken = self._wake.wait(timeout=min(sweep, 0.25))
            self._wake.clear()
            now = time.monotonic()
            if self.stopping.is_set():
                return
            if not woken and now - last_sweep < sweep:
                continue
            last_sweep = now
            claimed = self._claim()
            if now - last_beat >= 1.0:
                self._heartbeat()
                last_beat = now
            if now - last_retention >= self.settings.retention_sweep_seconds:
                self.retain()
                last_retention = now
            if claimed:
                self._wake.set()  # there may be more: claim again at once if threads are free
            elif until_idle:
                with self._lock:  # tickets given back within the outage's grace are work still to do
                    if not self._active and not self._within_grace():
                        return

    def _room(self) -> int:
        """How many tickets a claim would take now (0: claim nothing yet); hold ``_lock``.

        While claimed tickets still wait for a thread, none is idle: claim when half the
        lookahead is free instead of once per finished round (a claim and the read of its
        customers cost the same for one ticket as for sixteen).
        """
        free = self.threads + self.lookahead - len(self._active)
        if free <= 0 or (free < self.lookahead // 2 and not self._tasks.empty()):
            return 0
        return free

    def _nudge(self) -> None:
        """Wake the dispatcher if a claim would take work now. Under load most rounds end, and
        most messages arrive, while it would not; each wake costs a trip through the interpreter
        lock, which hundreds of threads are queueing for."""
        with self._lock:
            room = self._room()
        if room:
            self._wake.set()

    def _claim(self) -> int:
        with self._lock:
            free = self._room()
            if self._outage_since is not None and self._within_grace():
                # Paused, then one ticket at a time: a probe, not a batch that would all wait.
                free = 0 if time.monotonic() < self._pause_until or self._active else min(free, 1)
        if not free:
            return 0
        # The claim and the read of its customers share one connection: under load a thread
        # waits its turn for the pool, and threads that finish meanwhile find no work.
        with self.store.keep_connection():
            try:
                with self.store.statement() as conn:
                    claims = work_queue.claimed(
                        work_queue.claim_cursor(
                            conn,
                            f"{self.id}:",
                            free,
                            self.settings.lease_seconds,
                            track=self.store.tracks_holders,
                        )
                    )
            except StoreError as exc:
                log.warning("claiming work failed (%s); trying again at the next sweep", type(exc).__name__)
                return 0
            customers = self._customer_records(claims)
        for c, records in zip(claims, customers, strict=True):
            self.store.remember_turns(c.ticket_id, c.waiting)
            with self._lock:
                self._active[c.ticket_id] = c.owner
            self._tasks.put(_Task(c, records))
        return len(claims)

    def _customer_records(self, claims: list[Claim]) -> list[CustomerRecords | None]:
        """The claimed tickets' customers with their records, in one read of the backend, so that
        their rounds start without one each (None where the round reads its own)."""
        backend = self.engine.deps.backend
        if not claims or not isinstance(backend, ReadsCustomerRecords):
            return [None] * len(claims)
        try:
            return backend.customer_records([c.ticket.customer_email for c in claims])
        except Exception as exc:  # noqa: BLE001 - the rounds read their customers themselves
            log.warning(
                "reading the claimed tickets' customers failed (%s); each round reads its own",
                type(exc).__name__,
            )
            return [None] * len(claims)

    def _release_unstarted(self) -> None:
        """Give back the claims no thread has taken (claimed ahead), so that other workers can run
        them while this one's rounds end."""
        owners = []
        while True:
            try:
                task = self._tasks.get_nowait()
            except queue.Empty:
                break
            if task is not None:
                owners.append(task.claim.owner)
                with self._lock:
                    self._active.pop(task.claim.ticket_id, None)
        if not owners:
            return
        try:
            with self.store.transaction(durable=False) as tx:
                work_queue.release_all(tx, owners)
        except StoreError:
            log.warning(
                "could not release %d claims of worker %s; they expire by themselves", len(owners), self.id
            )

    def _skip(self, task: Claim) -> None:
        with self._lock:
            self._active.pop(task.ticket_id, None)
            self._unstarted.append(task.owner)
            self._idle.notify_all()

    def _serve(self) -> None:
        while (task := self._tasks.get()) is not None:
            if self.stopping.is_set():
                self._skip(task.claim)  # taken as the stop came: released with the running rounds' leases
                continue
            try:
                self._drive(task.claim, task.records)
            finally:
                with self._lock:
                    self._active.pop(task.claim.ticket_id, None)
                    self._idle.notify_all()
                    room = self._room()
                if room:
                    self._wake.set()

    def _drive(self, task: Claim, records: CustomerRecords | None) -> None:
        started = last = time.monotonic()
        waited = max(0.0, time.time() - task.due.timestamp())
        with self._lock:
            self._max_wait = max(self._max_wait, waited)

        def finished(result: RoundResult) -> None:
            nonlocal last
            now = time.monotonic()
            log.info(
                "round ticket=%s round=%d outcome=%s ms=%d",
                result.ticket_id,
                result.round,
                result.outcome,
                (now - last) * 1000,
            )
            last = now
            with self._lock:
                self._rounds += 1

        try:
            self.engine.drive(
                task.ticket_id,
                owner=task.owner,
                taken=(task.last_seq, task.turn_count),
                records=records,
                row=task.ticket,
                on_round=finished,
                watch=self,
            )
        except RoundDeferred as exc:
            self._wait_for_model(task, exc)
        except Exception as exc:  # noqa: BLE001 - any round failure: counted, retried or handed over
            self._failed(task, exc, time.monotonic() - started)

    # -- a model outage (the module docstring): the engine's ModelWatch ----------------------

    def answered(self) -> None:
        if self._outage_since is None:  # read without the lock: the common case costs nothing
            return
        with self._lock:
            if self._outage_since is not None:
                log.info("worker %s: the model answers again", self.id)
            self._outage_since, self._outage_failures, self._pause_until = None, 0, 0.0
        self._wake.set()

    def defer(self, exc: ModelError) -> bool:
        if exc.reason not in OUTAGE_REASONS:
            return False  # a bad answer, a refusal of this request: the ticket's own problem
        with self._lock:
            if self._outage_since is None:
                self._outage_since = time.monotonic()
            return self._within_grace()

    def _within_grace(self) -> bool:
        """Whether the outage is younger than ``model_outage_grace``; hold ``_lock``."""
        since = self._outage_since
        return since is not None and time.monotonic() - since < self.settings.model_outage_grace

    def _wait_for_model(self, task: Claim, exc: RoundDeferred) -> None:
        """The round gave its ticket back: pause claiming; the ticket waits as long, uncounted."""
        with self._lock:
            self._outage_failures += 1
            self._deferred += 1
            base = self.settings.worker_retry_seconds * 2 ** min(self._outage_failures - 1, 10)
            pause = min(_MAX_PAUSE, base) * self._rng.uniform(0.5, 1.0)  # workers out of step
            self._pause_until = max(self._pause_until, time.monotonic() + pause)
            since = self._outage_since or time.monotonic()
        reason = f"waiting for the model ({exc.reason}): {(str(exc).strip().splitlines() or [''])[0]}"
        try:
            with self.store.transaction() as tx:
                work_queue.wait_for_model(tx, task.ticket_id, reason, retry_in=pause)
        except StoreError:
            pass  # its lease is already free: it is simply tried again sooner
        log.warning(
            "model unavailable (%s) in %s of ticket=%s; claiming paused %.1fs, %.0fs of %.0fs grace used",
            exc.reason,
            exc.step,
            task.ticket_id,
            pause,
            time.monotonic() - since,
            self.settings.model_outage_grace,
        )

    def _failed(self, task: Claim, exc: Exception, seconds: float) -> None:
        # The stored reason is for operators; the log line names only the error's type.
        first = (str(exc).strip().splitlines() or [""])[0]
        reason = f"{type(exc).__name__}: {first}" if first else type(exc).__name__
        try:
            with self.store.transaction() as tx:
                attempts, gave_up = work_queue.record_failure(
                    tx,
                    task.ticket_id,
                    reason,
                    max_attempts=self.settings.worker_max_attempts,
                    backoff=self.settings.worker_retry_seconds,
                )
        except StoreError:
            attempts, gave_up = 0, False  # the lease expires and the ticket is retried anyway
        with self._lock:
            self._failures += 1
            self._handed_off += gave_up
        log.warning(
            "round failed ticket=%s attempt=%d/%d error=%s ms=%d%s",
            task.ticket_id,
            attempts,
            self.settings.worker_max_attempts,
            type(exc).__name__,
            seconds * 1000,
            " -> handed to a human" if gave_up else "",
        )

    def retain(self) -> RetentionReport | None:
        """Apply the retention policy once; None if the database was away (the next period tries
        again)."""
        try:
            report = retention.apply(self.store, RetentionPolicy.of(self.settings), self.engine.deps.clock())
        except StoreError as exc:
            log.warning("the retention sweep failed (%s); the next one tries again", type(exc).__name__)
            return None
        for ticket_id in report.tickets:
            self.engine.forget(ticket_id)
        return report

    def _heartbeat(self) -> None:
        stats = self.stats()
        try:
            with self.store.statement() as conn:
                work_queue.heartbeat(
                    conn,
                    self.id,
                    threads=self.threads,
                    rounds=stats.rounds,
                    failures=stats.failures,
                    running=stats.running,
                )
        except StoreError:
            pass  # counters only; the next beat tries again

    def _shut_down(self, pool: list[threading.Thread]) -> None:
        deadline = time.monotonic() + self.settings.worker_shutdown_seconds
        self._release_unstarted()
        with self._lock:
            while self._active and (left := deadline - time.monotonic()) > 0:
                self._idle.wait(timeout=left)
            owners = self._unstarted + list(self._active.values())
        for _ in pool:
            self._tasks.put(None)
        try:
            with self.store.transaction(durable=False) as tx:
                if owners:
                    released = work_queue.release_all(tx, owners)
                    log.warning(
                        "worker %s stopped with %d tickets claimed and unfinished; released them",
                        self.id,
                        released,
                    )
                work_queue.sign_off(tx, self.id)
        except StoreError:
            log.warning("could not release the leases of worker %s; they expire by themselves", self.id)
