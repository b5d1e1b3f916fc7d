"""The worker commands of the CLI: `worker` answers queued tickets, `queue` shows what waits."""

from __future__ import annotations

import argparse
import dataclasses
import logging
import os
import signal
import sys
import threading
from collections.abc import Callable
from types import FrameType
from typing import Any

from pydantic_core import to_jsonable_python

from .bot import SupportBot
from .config import Settings

# Connections per worker process: a round holds one only while it talks to the database, so a
# quarter of the threads is plenty; the cap keeps many workers inside PostgreSQL's ~100.
MAX_POOL = 10


def add_worker_commands(command: Callable[..., argparse.ArgumentParser]) -> None:
    p = command("worker", worker, "处理排队的工单(可在多台机器上同时运行多个);SIGTERM/Ctrl-C 优雅退出")
    p.add_argument(
        "--threads", type=_positive, default=None, help="同时处理的轮数(默认 SUPPORTBOT_WORKER_THREADS=8)"
    )
    p.add_argument("--stats", action="store_true", help="只显示队列和各 worker 的计数,然后退出")
    p.set_defaults(adjust_settings=_pool_for_threads)

    p = command("queue", queue, "列出等待处理的工单和已等待的时间")
    p.add_argument("--limit", type=_positive, default=100, help="最多列出几张(默认 100)")


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if not 1 <= value <= 10_000:
        raise argparse.ArgumentTypeError(f"{text!r} 不是 1 到 10000 之间的整数")
    return value


def _pool_for_threads(settings: Settings, args: argparse.Namespace) -> Settings:
    if "SUPPORTBOT_POOL_MAX_SIZE" in os.environ or args.stats:
        return settings
    threads = args.threads or settings.worker_threads
    return dataclasses.replace(
        settings, pool_max_size=min(MAX_POOL, max(settings.pool_max_size, threads // 4))
    )


def worker(bot: SupportBot, args: argparse.Namespace) -> int:
    if args.stats:
        return _print_stats(bot, args)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    stop = threading.Event()

    def on_signal(signum: int, _frame: FrameType | None) -> None:
        if stop.is_set():  # the second signal: leave now; the leases expire by themselves
            os._exit(128 + signum)
        print("正在停止:不再接新工单,等待进行中的轮次结束(再按一次立即退出)", file=sys.stderr, flush=True)
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    stats = bot.work(threads=args.threads, stop=stop)
    print(
        f"已停止:完成 {stats.rounds} 轮,失败 {stats.failures} 次,转人工 {stats.handed_off} 张",
        file=sys.stderr,
    )
    return 0


def _print_stats(bot: SupportBot, args: argparse.Namespace) -> int:
    stats = bot.stats()
    if args.json:
        print_json(stats)
        return 0
    print(f"排队工单      {stats.queued}(其中正在处理 {stats.running},等待重试 {stats.retrying})")
    print(f"最久等待      {stats.oldest_wait:.1f} 秒")
    print(f"已转人工      {stats.handed_off}(多次失败后)")
    print(f"运行中 worker {stats.workers}:共完成 {stats.rounds} 轮,失败 {stats.failures} 次")
    return 0


def queue(bot: SupportBot, args: argparse.Namespace) -> int:
    entries = bot.queue(limit=args.limit)
    if args.json:
        print_json(entries)
        return 0
    for e in entries:
        if e.due is None:
            state = f"已转人工:{e.error}"
        elif e.status == "with_human":
            state = "人工接管中,等接管人处理"
        elif e.running:
            state = "处理中"
        elif e.retry_at is not None:
            state = f"第 {e.attempts} 次失败后等待重试({e.error})"
        else:
            state = "等待中"
        print(f"{e.ticket_id}  {e.status:<16} 已等 {e.waited:>7.1f} 秒  {state}")
    print(f"共 {len(entries)} 张" if entries else "没有排队的工单")
    return 0


def print_json(value: Any) -> None:
    import json

    print(json.dumps(to_jsonable_python(value), ensure_ascii=False, indent=2))
