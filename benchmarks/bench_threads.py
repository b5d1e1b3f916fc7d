"""How many rounds one CPython process can keep in flight on threads, as a function of CPU per round.

    python benchmarks/bench_threads.py                          # 256 threads, 2 to 7 ms (about 2 min)
    python benchmarks/bench_threads.py --threads 64 --cpu 4,8 --seconds 10
    python benchmarks/bench_threads.py --asyncio                # the same rounds as asyncio tasks

No database and no supportbot code: each thread runs synthetic rounds shaped like a worker's
(bench_workers.py): 1.2 s of sleeping in three model calls (0.3, 0.6, 0.3 s), C ms of Python CPU
spread around them, and K short waits that release the interpreter lock, as a database round trip
does. Only one thread runs Python at a time, so once the threads' CPU nears one core the rate falls
well below ideal (threads / 1.2 s) however few of them compute at any moment. bench_workers.py
prints the real worker's CPU per round, to place it on this curve.

``--asyncio`` runs the same rounds as tasks on one event loop (the waits yield to the loop): what
an async core would gain with the same CPU per round. One core bounds both: at C ms per round no
model of concurrency passes 1000 / C rounds/s.
"""

from __future__ import annotations

import argparse
import asyncio
import select
import socket
import sys
import threading
import time
from collections.abc import Callable, Sequence

MODEL_CALLS = (0.3, 0.6, 0.3)  # seconds; the draft takes two calls' time
ROUND_SECONDS = sum(MODEL_CALLS)


def burn(seconds: float) -> None:
    """Spend this thread's CPU time in Python bytecode (holding the interpreter lock)."""
    end = time.thread_time() + seconds
    x = 0
    while time.thread_time() < end:
        for i in range(200):
            x += i


# CPU and lock-releasing waits come in four bursts: before each model call and after the last.
BURSTS = (*MODEL_CALLS, 0.0)


def _slices(cpu_ms: float, releases: int) -> tuple[float, int]:
    """Seconds of CPU between two waits, and waits per burst (each burst: waits + 1 slices)."""
    waits = releases // len(BURSTS)
    return cpu_ms / 1000 / len(BURSTS) / (waits + 1), waits


def _measure(
    concurrency: int, cpu_ms: float, releases: int, rounds_done: Callable[[], int]
) -> dict[str, float]:
    """Time ``rounds_done`` (which runs the rounds and returns how many ended) and report the rate."""
    started, cpu = time.monotonic(), time.process_time()
    done = rounds_done()
    rate = done / (time.monotonic() - started)
    return {
        "threads": concurrency,
        "cpu_ms": cpu_ms,
        "releases": releases,
        "rounds_per_s": round(rate, 1),
        "of_ideal": round(100 * rate / (concurrency / ROUND_SECONDS), 1),
        "process_cpu_ms_per_round": round(1000 * (time.process_time() - cpu) / max(done, 1), 2),
    }


def run(threads: int, cpu_ms: float, releases: int, seconds: float) -> dict[str, float]:
    done = 0
    lock = threading.Lock()
    stop = time.monotonic() + seconds
    slice_, waits = _slices(cpu_ms, releases)

    def rounds() -> None:
        nonlocal done
        ours, peer = socket.socketpair()
        peer.send(b"x")  # always readable: select returns at once, but releases the lock to do so
        try:
            while time.monotonic() < stop:
                for nap in BURSTS:
                    for _ in range(waits):
                        burn(slice_)
                        select.select([ours], [], [], 0)
                    burn(slice_)
                    if nap:
                        time.sleep(nap)
                with lock:
                    done += 1
        finally:
            ours.close()
            peer.close()

    def all_rounds() -> int:
        pool = [threading.Thread(target=rounds) for _ in range(threads)]
        for thread in pool:
            thread.start()
        for thread in pool:
            thread.join()
        return done

    return _measure(threads, cpu_ms, releases, all_rounds)


def run_tasks(tasks: int, cpu_ms: float, releases: int, seconds: float) -> dict[str, float]:
    """``run`` with asyncio tasks on one loop instead of threads."""
    done = 0
    slice_, waits = _slices(cpu_ms, releases)

    async def rounds(stop: float) -> None:
        nonlocal done
        while time.monotonic() < stop:
            for nap in BURSTS:
                for _ in range(waits):
                    burn(slice_)
                    await asyncio.sleep(0)
                burn(slice_)
                if nap:
                    await asyncio.sleep(nap)
            done += 1

    async def all_rounds() -> None:
        stop = time.monotonic() + seconds
        await asyncio.gather(*(rounds(stop) for _ in range(tasks)))

    def run_loop() -> int:
        asyncio.run(all_rounds())
        return done

    return _measure(tasks, cpu_ms, releases, run_loop)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--threads", type=int, default=256)
    parser.add_argument("--cpu", default="2,3,4,5,6,7", help="Python CPU per round, ms, comma-separated")
    parser.add_argument("--releases", default="12,48", help="lock-releasing waits per round, comma-separated")
    parser.add_argument("--seconds", type=float, default=10.0, help="per configuration (default 10)")
    parser.add_argument("--asyncio", action="store_true", help="asyncio tasks on one loop instead of threads")
    args = parser.parse_args(argv)
    releases = [int(r) for r in args.releases.split(",")]
    rows = []
    for cpu_ms in (float(c) for c in args.cpu.split(",")):
        for k in releases:
            rows.append((run_tasks if args.asyncio else run)(args.threads, cpu_ms, k, args.seconds))
            print(rows[-1], flush=True)
    print()
    print(
        f"| CPU per round | {' | '.join(f'{k} waits: of ideal (process CPU per round)' for k in releases)} |"
    )
    print(f"| --- |{' --- |' * len(releases)}")
    for i in range(0, len(rows), len(releases)):
        cells = [
            f"{r['of_ideal']}% ({r['process_cpu_ms_per_round']} ms)" for r in rows[i : i + len(releases)]
        ]
        print(f"| {rows[i]['cpu_ms']:g} ms | {' | '.join(cells)} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
