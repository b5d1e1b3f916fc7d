"""The asyncio bot against the thread worker: rounds in flight on one event loop versus threads.

    python benchmarks/bench_async.py [--in-flight 64,256] [--waves 2] [--model-seconds 0.3]

Workload: the demo business system with a customer per ticket (bench_workers.py's), and the offline
model's answers, each model call delayed by
``--model-seconds`` (three calls per round: triage, draft, review; 0.9 s of model time a round).
For each number of rounds in flight N, in one run on one PostgreSQL server:

* ``threads``: SupportBot's worker with N threads answers N submitted tickets (``work(until_idle)``);
* ``asyncio``: AsyncSupportBot's worker with N tasks answers N submitted tickets on one loop, while
  a probe task measures the event loop's lag (how late a 10 ms sleep wakes).

Each mode runs in a process of its own (so its peak RSS is its own), ``--waves`` times on fresh
tickets; reported: rounds/s (median over waves) against the ideal N / 0.9 s, the loop's lag p99 and
the peak RSS. The pool is the same for both (``--pool``). JSON on stdout.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_workers import email, seed
from common import fresh_database

from supportbot import AsyncOfflineModel, AsyncSupportBot, OfflineModel, Settings, SupportBot
from supportbot.llm.base import Completion, Message


class SlowModel:
    """The offline model's answers, each ``delay`` seconds late (a thread sleeps)."""

    def __init__(self, delay: float) -> None:
        self.delay, self.inner = delay, OfflineModel()

    def chat(self, messages: Sequence[Message], **kwargs: Any) -> Completion:
        time.sleep(self.delay)
        return self.inner.chat(messages, **kwargs)


class AsyncSlowModel:
    """The offline model's answers, each ``delay`` seconds late (a task awaits)."""

    def __init__(self, delay: float) -> None:
        self.delay, self.inner = delay, AsyncOfflineModel()

    async def chat(self, messages: Sequence[Message], **kwargs: Any) -> Completion:
        await asyncio.sleep(self.delay)
        return await self.inner.chat(messages, **kwargs)


def _settings(url: str, pool: int) -> Settings:
    return Settings(
        database_url=url, pool_max_size=pool, pool_timeout=60, worker_sweep_seconds=0.2, listen=False
    )


def run_threads(url: str, in_flight: int, waves: int, delay: float, pool: int) -> dict[str, Any]:
    rates: list[float] = []
    model, settings = SlowModel(delay), _settings(url, pool)
    with SupportBot.open(url, llm=model, settings=settings, backend="demo") as bot:
        for wave in range(waves):
            for i in range(in_flight):
                bot.open_ticket(email(wave * in_flight + i), body=f"E3001 同步失败 {wave}-{i}", wait=False)
            started = time.monotonic()
            stats = bot.work(threads=in_flight, until_idle=True)
            rates.append(stats.rounds / (time.monotonic() - started) if stats.rounds else 0.0)
    return {"rounds_per_s": statistics.median(rates), "peak_rss_mb": _peak_rss_mb()}


def run_asyncio(url: str, in_flight: int, waves: int, delay: float, pool: int) -> dict[str, Any]:
    async def main() -> dict[str, Any]:
        rates: list[float] = []
        lags: list[float] = []
        model, settings = AsyncSlowModel(delay), _settings(url, pool)
        async with AsyncSupportBot.open(url, llm=model, settings=settings, backend="demo") as bot:
            for wave in range(waves):
                for i in range(in_flight):
                    customer = email(wave * in_flight + i)
                    await bot.open_ticket(customer, body=f"E3001 同步失败 {wave}-{i}", wait=False)
                stop = asyncio.Event()
                probe = asyncio.create_task(_lag(stop, lags))
                started = time.monotonic()
                stats = await bot.work(threads=in_flight, until_idle=True)
                rates.append(stats.rounds / (time.monotonic() - started) if stats.rounds else 0.0)
                stop.set()
                await probe
        lags.sort()
        p99 = lags[min(len(lags) - 1, int(len(lags) * 0.99))] if lags else 0.0
        return {"rounds_per_s": statistics.median(rates), "loop_lag_p99_ms": p99 * 1000}

    found = asyncio.run(main())
    return {**found, "peak_rss_mb": _peak_rss_mb()}


async def _lag(stop: asyncio.Event, lags: list[float]) -> None:
    while not stop.is_set():
        asked = time.monotonic()
        await asyncio.sleep(0.01)
        lags.append(max(0.0, time.monotonic() - asked - 0.01))


def _peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--in-flight", default="64,256")
    parser.add_argument("--waves", type=int, default=2)
    parser.add_argument("--model-seconds", type=float, default=0.3)
    parser.add_argument("--pool", type=int, default=8)
    parser.add_argument("--child", nargs=3, metavar=("MODE", "URL", "N"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        mode, url, n = args.child
        run = run_threads if mode == "threads" else run_asyncio
        print(json.dumps(run(url, int(n), args.waves, args.model_seconds, args.pool)))
        return 0
    report: dict[str, Any] = {"model_seconds_per_call": args.model_seconds, "calls_per_round": 3}
    with fresh_database("supportbot_bench_async") as url:
        seed(url)  # a customer per ticket, as bench_workers.py: a profile reads its customer's history
        for n in (int(x) for x in args.in_flight.split(",")):
            ideal = n / (3 * args.model_seconds)
            row: dict[str, Any] = {"ideal_rounds_per_s": round(ideal, 1)}
            for mode in ("threads", "asyncio"):
                child = subprocess.run(
                    [sys.executable, __file__, "--waves", str(args.waves), "--model-seconds",
                     str(args.model_seconds), "--pool", str(args.pool), "--child", mode, url, str(n)],
                    capture_output=True, text=True, check=True, env={**os.environ},
                )  # fmt: skip
                found = json.loads(child.stdout.strip().splitlines()[-1])
                found["share_of_ideal"] = round(found["rounds_per_s"] / ideal, 3)
                row[mode] = {k: round(v, 2) if isinstance(v, float) else v for k, v in found.items()}
                print(f"{n} in flight, {mode}: {row[mode]}", file=sys.stderr, flush=True)
            report[f"in_flight_{n}"] = row
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
