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

from .._front._bot import SupportBot
from ..config import Settings
from ..i18n import Translate, label, translator
from ..run._metrics_server import MetricsServer
from ._text import cli_words, emit_json

# Connections per worker process: a round holds one only while it talks to the database, so a
# quarter of the threads is plenty; the cap keeps many workers inside PostgreSQL's ~100.
MAX_POOL = 10


def add_worker_commands(command: Callable[..., argparse.ArgumentParser], t: Translate) -> None:
    positive = _positive(t)
    p = command("worker", worker)
    p.add_argument("--threads", type=positive, default=None, help=t("opt.worker.threads"))
    p.add_argument("--stats", action="store_true", help=t("opt.worker.stats"))
    p.add_argument("--metrics-port", type=int, metavar="PORT", help=t("opt.worker.metrics_port"))
    p.add_argument("--metrics-host", default="127.0.0.1", metavar="HOST", help=t("opt.worker.metrics_host"))
    p.set_defaults(adjust_settings=_pool_for_threads)

    p = command("queue", queue)
    p.add_argument("--limit", type=positive, default=100, help=t("opt.queue.limit"))

    p = command("sla", sla)
    p.add_argument("--all", action="store_true", help=t("opt.sla.all"))


def _positive(t: Translate) -> Callable[[str], int]:
    def positive(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = 0
        if not 1 <= value <= 10_000:
            raise argparse.ArgumentTypeError(t("usage.positive", text=text))
        return value

    return positive


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
        print(cli_words(args)("worker.stopping"), file=sys.stderr, flush=True)
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    served = _metrics_server(bot, args)
    try:
        stats = bot.work(threads=args.threads, stop=stop)
    finally:
        if served is not None:
            served.stop()
    print(
        cli_words(args)(
            "worker.stopped",
            rounds=stats.rounds,
            failures=stats.failures,
            handed_off=stats.handed_off,
            deferred=stats.deferred,
        ),
        file=sys.stderr,
    )
    return 0


def _metrics_server(bot: SupportBot, args: argparse.Namespace) -> MetricsServer | None:
    """The worker's /metrics endpoint, if ``--metrics-port`` asks for one (it needs a token)."""
    if getattr(args, "metrics_port", None) is None:
        return None
    server = MetricsServer(
        args.metrics_host, args.metrics_port, bot.settings.metrics_token, bot.metrics
    ).start()
    url = f"http://{args.metrics_host}:{server.port}/metrics"
    print(cli_words(args)("worker.metrics", url=url), file=sys.stderr, flush=True)
    return server


def _print_stats(bot: SupportBot, args: argparse.Namespace) -> int:
    stats = bot.stats()
    if args.json:
        emit_json(stats)
        return 0
    t = cli_words(args)
    print(t("stats.queued", queued=stats.queued, running=stats.running, retrying=stats.retrying))
    print(t("stats.oldest", seconds=f"{stats.oldest_wait:.1f}"))
    print(t("stats.handed_off", n=stats.handed_off))
    print(t("stats.workers", workers=stats.workers, rounds=stats.rounds, failures=stats.failures))
    return 0


def queue(bot: SupportBot, args: argparse.Namespace) -> int:
    entries = bot.queue(limit=args.limit)
    if args.json:
        emit_json(entries)
        return 0
    t, common = cli_words(args), translator("common", args.language)
    for e in entries:
        if e.due is None:
            state = t("queue.handed_off", error=e.error)
        elif e.status == "with_human":
            state = t("queue.with_human")
        elif e.running:
            state = t("queue.running")
        elif e.retry_at is not None and e.attempts == 0:  # given back in a model outage, uncounted
            state = t("queue.waiting_for_model", error=e.error)
        elif e.retry_at is not None:
            state = t("queue.retrying", attempts=e.attempts, error=e.error)
        else:
            state = t("queue.waiting")
        status = label(common, "status", e.status)
        print(t("queue.line", ticket=e.ticket_id, status=status, waited=f"{e.waited:>7.1f}", state=state))
    print(t("queue.count", n=len(entries)) if entries else t("queue.empty"))
    return 0


def sla(bot: SupportBot, args: argparse.Namespace) -> int:
    """Service-level clocks of tickets waiting on a person: the breaches (``--all``: every clock)."""
    running = bot.service_clocks()
    shown = running if args.all else [c for c in running if c.breached]
    if args.json:
        emit_json(shown)
        return 0
    t = cli_words(args)
    print(t("sla.title", breached=sum(c.breached for c in running), running=len(running)))
    for c in shown:
        minutes = abs(c.seconds_left) // 60
        time = (
            t("sla.hours", h=minutes // 60, m=minutes % 60) if minutes >= 60 else t("sla.minutes", m=minutes)
        )
        left = t("sla.overdue" if c.breached else "sla.left", time=time)
        owner = c.owner or "—"
        print(f"  {c.ticket_id}  {t('sla.kind.' + c.kind)}  {left}  {owner}  {c.customer_email}  {c.subject}")
    return 0
