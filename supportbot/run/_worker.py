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
import threading
import time
from dataclasses import dataclass

from .._records import CustomerRecords
from ..config import Settings
from ..memory import _tokens as tokens
from ..store._channels import WORK_CHANNEL
from ..store._listen import Listener
from ..store._rows import Claim
from ..store._store import Store
from ._claims import Claims
from ._engine import Engine
from ._values import RetentionReport, WorkerStats

log = logging.getLogger("supportbot.worker")


@dataclass(frozen=True, slots=True)
class _Task:
    """A claimed ticket on its way to a thread, with its customer's records when read ahead."""

    claim: Claim
    records: CustomerRecords | None


def claim_room(threads: int, lookahead: int, active: int, *, waiting: bool) -> int:
    """How many tickets a claim takes with ``active`` claimed and not finished (0: none yet).

    While claimed tickets still wait for a thread (``waiting``), none is idle: claim when half the
    lookahead is free instead of once per finished round (a claim and the read of its customers
    cost the same for one ticket as for sixteen).
    """
    free = threads + lookahead - active
    if free <= 0 or (free < lookahead // 2 and waiting):
        return 0
    return free


class Worker:
    """The thread worker: one dispatcher thread claims, ``threads`` threads drive (``Claims`` says
    what is done with each claim; the task worker, ``run/_aio_worker.py``, schedules the same)."""

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
        self._listen_url = listen_url
        self.stopping = stop or threading.Event()
        self._wake = threading.Event()
        self.claims = Claims(engine, store, settings, on_answer=self._wake.set)
        self.id = self.claims.id
        self._idle = threading.Condition(self.claims.lock)
        self._unstarted: list[str] = []  # lease owners of claims a thread took only after the stop
        self._tasks: queue.SimpleQueue[_Task | None] = queue.SimpleQueue()

    def stats(self) -> WorkerStats:
        return self.claims.stats()

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
                self.claims.heartbeat(self.threads)
                last_beat = now
            if now - last_retention >= self.settings.retention_sweep_seconds:
                self.retain()
                last_retention = now
            if claimed:
                self._wake.set()  # there may be more: claim again at once if threads are free
            elif until_idle:
                with self.claims.lock:  # tickets given back within the outage's grace are work still to do
                    if not self.claims.active and not self.claims.within_grace():
                        return

    def _room(self) -> int:
        """How many tickets a claim would take now (0: claim nothing yet); hold the claims' lock."""
        waiting = not self._tasks.empty()
        return claim_room(self.threads, self.lookahead, len(self.claims.active), waiting=waiting)

    def _nudge(self) -> None:
        """Wake the dispatcher if a claim would take work now. Under load most rounds end, and
        most messages arrive, while it would not; each wake costs a trip through the interpreter
        lock, which hundreds of threads are queueing for."""
        with self.claims.lock:
            room = self._room()
        if room:
            self._wake.set()

    def _claim(self) -> int:
        with self.claims.lock:
            free = self.claims.probing(self._room())
        if not free:
            return 0
        claimed = self.claims.claim(free)
        for claim, records in claimed:
            self._tasks.put(_Task(claim, records))
        return len(claimed)

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
                with self.claims.lock:
                    self.claims.active.pop(task.claim.ticket_id, None)
        self.claims.release(owners)

    def _skip(self, task: Claim) -> None:
        with self.claims.lock:
            self.claims.active.pop(task.ticket_id, None)
            self._unstarted.append(task.owner)
            self._idle.notify_all()

    def _serve(self) -> None:
        while (task := self._tasks.get()) is not None:
            if self.stopping.is_set():
                self._skip(task.claim)  # taken as the stop came: released with the running rounds' leases
                continue
            try:
                self.claims.drive(task.claim, task.records)
            finally:
                with self.claims.lock:
                    self.claims.active.pop(task.claim.ticket_id, None)
                    self._idle.notify_all()
                    room = self._room()
                if room:
                    self._wake.set()

    def retain(self) -> RetentionReport | None:
        """Apply the retention policy once; None if the database was away (the next period tries
        again)."""
        return self.claims.retain()

    def _shut_down(self, pool: list[threading.Thread]) -> None:
        deadline = time.monotonic() + self.settings.worker_shutdown_seconds
        self._release_unstarted()
        with self.claims.lock:
            while self.claims.active and (left := deadline - time.monotonic()) > 0:
                self._idle.wait(timeout=left)
            owners = self._unstarted + list(self.claims.active.values())
        for _ in pool:
            self._tasks.put(None)
        self.claims.sign_off(owners)
