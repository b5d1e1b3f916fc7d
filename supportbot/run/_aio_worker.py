"""The task worker of ``AsyncSupportBot.work()``: the thread worker's rules (``run/_worker.py``'s
docstring) on one event loop.

One dispatcher task claims due tickets and starts a task per claimed ticket, at most ``threads``
at a time (the name is the thread worker's, for the same argument: rounds at a time). A round
waiting on a model holds no connection and no thread, so one process keeps hundreds in flight.
What is done with each claim (claiming with the customers' records, driving, the model outage,
failures, the heartbeat, retention, releasing) is ``Claims``, written once for both workers
(``run/_claims_async.py``). Claims cost a round trip each, so unlike the thread worker this one
claims nothing ahead: a task starts the moment its ticket is claimed.

Stopping: no new claims; running rounds get ``worker_shutdown_seconds`` to end, then are
cancelled (like a crash: what they recorded stays, the ticket stays due and a worker resumes it);
leases still held are released.
"""

from __future__ import annotations

import asyncio
import logging
import time

from .._records import CustomerRecords
from ..config import Settings
from ..memory import _tokens as tokens
from ..store._aio_listen import AsyncListener
from ..store._channels import WORK_CHANNEL
from ..store._rows import Claim
from ..store._store_async import AsyncStore
from ._claims_async import AsyncClaims
from ._engine_async import AsyncEngine
from ._values import RetentionReport, WorkerStats

log = logging.getLogger("supportbot.worker")


class AsyncWorker:
    def __init__(
        self,
        engine: AsyncEngine,
        store: AsyncStore,
        settings: Settings,
        *,
        threads: int,
        listen_url: str | None,
        stop: asyncio.Event | None = None,
    ) -> None:
        self.engine, self.store, self.settings = engine, store, settings
        self.threads = threads
        self._listen_url = listen_url
        self.stopping = stop or asyncio.Event()
        self._wake = asyncio.Event()
        self.claims = AsyncClaims(engine, store, settings, on_answer=self._wake.set)
        self.id = self.claims.id
        self._running: set[asyncio.Task[None]] = set()

    def stats(self) -> WorkerStats:
        return self.claims.stats()

    def stop(self) -> None:
        """Take no more work; ``run`` returns once running rounds end (or the shutdown timeout)."""
        self.stopping.set()
        self._wake.set()

    async def run(self, *, until_idle: bool = False) -> WorkerStats:
        """Work until ``stop()`` (or, with ``until_idle``, until nothing is claimable and nothing runs).

        Raises ConfigError before claiming anything when the tokenizer cannot be loaded.
        """
        tokens.encoder()
        listener = None
        if self._listen_url is not None:
            listener = AsyncListener(
                self._listen_url, [WORK_CHANNEL], lambda _c, _p: self._wake.set()
            ).start()
        log.info("worker %s started: %d rounds at a time (tasks)", self.id, self.threads)
        try:
            await self._dispatch(until_idle)
        finally:
            await self._shut_down()
            if listener is not None:
                await listener.stop()
        stats = self.stats()
        log.info("worker %s stopped: %d rounds, %d failed", self.id, stats.rounds, stats.failures)
        return stats

    async def _woken(self, timeout: float) -> bool:
        """Wait for a wake (a notification, a round that ended, a stop) or ``timeout`` seconds."""
        try:
            await asyncio.wait_for(self._wake.wait(), timeout)
            return True
        except TimeoutError:
            return self.stopping.is_set()
        finally:
            self._wake.clear()

    async def _dispatch(self, until_idle: bool) -> None:
        sweep = self.settings.worker_sweep_seconds
        last_sweep = last_beat = 0.0
        last_retention = time.monotonic()  # the first sweep one period after start, not at once
        while not self.stopping.is_set():
            woken = await self._woken(min(sweep, 0.25))
            now = time.monotonic()
            if self.stopping.is_set():
                return
            if not woken and now - last_sweep < sweep:
                continue
            last_sweep = now
            claimed = await self._claim()
            if now - last_beat >= 1.0:
                await self.claims.heartbeat(self.threads)
                last_beat = now
            if now - last_retention >= self.settings.retention_sweep_seconds:
                await self.retain()
                last_retention = now
            if claimed:
                self._wake.set()  # there may be more: claim again at once if places are free
            elif until_idle:
                with self.claims.lock:  # tickets given back within the outage's grace are work still to do
                    if not self.claims.active and not self.claims.within_grace():
                        return

    async def _claim(self) -> int:
        with self.claims.lock:
            free = self.claims.probing(max(0, self.threads - len(self.claims.active)))
        if not free:
            return 0
        claimed = await self.claims.claim(free)
        for claim, records in claimed:
            task = asyncio.create_task(
                self._serve(claim, records), name=f"supportbot-round-{claim.ticket_id}"
            )
            self._running.add(task)
            task.add_done_callback(self._running.discard)
        return len(claimed)

    async def _serve(self, claim: Claim, records: CustomerRecords | None) -> None:
        try:
            await self.claims.drive(claim, records)
        finally:
            with self.claims.lock:
                self.claims.active.pop(claim.ticket_id, None)
            self._wake.set()

    async def retain(self) -> RetentionReport | None:
        """Apply the retention policy once; None if the database was away."""
        return await self.claims.retain()

    async def _shut_down(self) -> None:
        running = set(self._running)
        if running:
            _, late = await asyncio.wait(running, timeout=self.settings.worker_shutdown_seconds)
            with self.claims.lock:
                owners = list(self.claims.active.values())  # before the cancelled rounds forget theirs
            for task in late:
                task.cancel()
            await asyncio.gather(*late, return_exceptions=True)
        else:
            owners = []
        await self.claims.sign_off(owners)
