# Generated from _claims_async.py by scripts/async_to_sync.py: edit that file and run the script.
"""What a worker does with the tickets it claims, written once for both workers: claim them with
their customers' records, drive each (``Engine.drive``), count the rounds, give a ticket back in a
model outage or record its failure, beat the heart, sweep retention, release leases.

How the work is scheduled is the worker's own: threads in ``run/_worker.py``, tasks in
``run/_aio_worker.py``. Both read their module docstrings' rules from here: the outage (claiming
paused, then one probe at a time, for ``model_outage_grace``), the retry backoff, the counters.
"""

from __future__ import annotations

import logging
import random
import threading
import time
import uuid
from collections.abc import Callable

from .._records import CustomerRecords
from ..backend.base import ReadsCustomerRecords
from ..config import Settings
from ..errors import ModelError, StoreError
from ..store._rows import Claim, LeaseTaken
from ..store._store import Store
from . import _retention as retention
from ._engine import Engine
from ._models import OUTAGE_REASONS
from ._rounds import RoundDeferred, RoundResult
from ._values import RetentionPolicy, RetentionReport, WorkerStats

log = logging.getLogger("supportbot.worker")

MAX_PAUSE = 30.0  # seconds: the longest a worker stops claiming in a model outage


class Claims:
    """The claimed tickets' side of a worker, and the engine's ModelWatch (``answered``, ``defer``).

    ``on_answer`` is called when the model answers again after an outage (the worker wakes its
    dispatcher). Counters are guarded by a lock: the thread worker's rounds end on many threads.
    """

    def __init__(
        self, engine: Engine, store: Store, settings: Settings, *, on_answer: Callable[[], None]
    ) -> None:
        self.engine, self.store, self.settings = engine, store, settings
        self.id = f"{engine.worker_id}-{uuid.uuid4().hex[:6]}"
        self._on_answer = on_answer
        self.lock = threading.Lock()
        self.active: dict[str, str] = {}  # ticket -> lease owner, from its claim until its round ends
        self._rounds = self._failures = self._handed_off = 0
        self._max_wait = 0.0
        # The model outage this worker is in: since when (monotonic; None: the model answers),
        # how many rounds it failed, and until when claiming pauses.
        self._outage_since: float | None = None
        self._outage_failures = self._deferred = 0
        self._pause_until = 0.0
        self._rng = random.Random()

    def stats(self) -> WorkerStats:
        with self.lock:
            return WorkerStats(
                self._rounds,
                self._failures,
                self._handed_off,
                len(self.active),
                self._max_wait,
                self._deferred,
            )

    def probing(self, free: int) -> int:
        """How many of ``free`` places a claim may fill in an outage: none while claiming is
        paused, then one ticket at a time (a probe, not a batch that would all wait); hold ``lock``."""
        if self._outage_since is not None and self.within_grace():
            return 0 if time.monotonic() < self._pause_until or self.active else min(free, 1)
        return free

    def claim(self, free: int) -> list[tuple[Claim, CustomerRecords | None]]:
        """Claim up to ``free`` due tickets, with their customers' records read in one call."""
        # The claim and the read of its customers share one connection: under load a round
        # waits its turn for the pool, and rounds that finish meanwhile find no work.
        with self.store.keep_connection():
            try:
                with self.store.statement() as conn:
                    claims = self.store.queue.claimed(
                        self.store.queue.claim_cursor(
                            conn,
                            f"{self.id}:",
                            free,
                            self.settings.lease_seconds,
                            track=self.store.tracks_holders,
                        )
                    )
            except StoreError as exc:
                log.warning("claiming work failed (%s); trying again at the next sweep", type(exc).__name__)
                return []
            customers = self._customer_records(claims)
        for c in claims:
            self.store.remember_turns(c.ticket_id, c.waiting)
            with self.lock:
                self.active[c.ticket_id] = c.owner
        return list(zip(claims, customers, strict=True))

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

    def drive(self, task: Claim, records: CustomerRecords | None) -> None:
        """Run the claimed ticket's rounds; a failure is counted and retried or handed over."""
        started = last = time.monotonic()
        waited = max(0.0, time.time() - task.due.timestamp())
        with self.lock:
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
            with self.lock:
                self._rounds += 1

        try:
            self.engine.drive(
                task.ticket_id,
                owner=task.owner,
                taken=LeaseTaken(task.last_seq, task.turn_count),
                records=records,
                row=task.ticket,
                on_round=finished,
                watch=self,
            )
        except RoundDeferred as exc:
            self._wait_for_model(task, exc)
        except Exception as exc:  # noqa: BLE001 - any round failure: counted, retried or handed over
            self._failed(task, exc, time.monotonic() - started)

    # -- a model outage (the thread worker's module docstring): the engine's ModelWatch -------

    def answered(self) -> None:
        if self._outage_since is None:  # read without the lock: the common case costs nothing
            return
        with self.lock:
            if self._outage_since is not None:
                log.info("worker %s: the model answers again", self.id)
            self._outage_since, self._outage_failures, self._pause_until = None, 0, 0.0
        self._on_answer()

    def defer(self, exc: ModelError) -> bool:
        if exc.reason not in OUTAGE_REASONS:
            return False  # a bad answer, a refusal of this request: the ticket's own problem
        with self.lock:
            if self._outage_since is None:
                self._outage_since = time.monotonic()
            return self.within_grace()

    def within_grace(self) -> bool:
        """Whether the outage is younger than ``model_outage_grace``; hold ``lock``."""
        since = self._outage_since
        return since is not None and time.monotonic() - since < self.settings.model_outage_grace

    def _wait_for_model(self, task: Claim, exc: RoundDeferred) -> None:
        """The round gave its ticket back: pause claiming; the ticket waits as long, uncounted."""
        with self.lock:
            self._outage_failures += 1
            self._deferred += 1
            base = self.settings.worker_retry_seconds * 2 ** min(self._outage_failures - 1, 10)
            pause = min(MAX_PAUSE, base) * self._rng.uniform(0.5, 1.0)  # workers out of step
            self._pause_until = max(self._pause_until, time.monotonic() + pause)
            since = self._outage_since or time.monotonic()
        reason = f"waiting for the model ({exc.reason}): {(str(exc).strip().splitlines() or [''])[0]}"
        try:
            with self.store.transaction() as tx:
                self.store.queue.wait_for_model(tx, task.ticket_id, reason, retry_in=pause)
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
                attempts, gave_up = self.store.queue.record_failure(
                    tx,
                    task.ticket_id,
                    reason,
                    max_attempts=self.settings.worker_max_attempts,
                    backoff=self.settings.worker_retry_seconds,
                )
        except StoreError:
            attempts, gave_up = 0, False  # the lease expires and the ticket is retried anyway
        with self.lock:
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

    def heartbeat(self, threads: int) -> None:
        stats = self.stats()
        try:
            with self.store.statement() as conn:
                self.store.queue.heartbeat(
                    conn,
                    self.id,
                    threads=threads,
                    rounds=stats.rounds,
                    failures=stats.failures,
                    running=stats.running,
                )
        except StoreError:
            pass  # counters only; the next beat tries again

    def release(self, owners: list[str]) -> None:
        """Give back claims no round has started (claimed ahead), so that other workers run them."""
        if not owners:
            return
        try:
            with self.store.transaction(durable=False) as tx:
                self.store.queue.release_all(tx, owners)
        except StoreError:
            log.warning(
                "could not release %d claims of worker %s; they expire by themselves", len(owners), self.id
            )

    def sign_off(self, owners: list[str]) -> None:
        """The worker stops: release the leases it still holds, and say it is gone."""
        try:
            with self.store.transaction(durable=False) as tx:
                if owners:
                    released = self.store.queue.release_all(tx, owners)
                    log.warning(
                        "worker %s stopped with %d tickets claimed and unfinished; released them",
                        self.id,
                        released,
                    )
                self.store.queue.sign_off(tx, self.id)
        except StoreError:
            log.warning("could not release the leases of worker %s; they expire by themselves", self.id)
