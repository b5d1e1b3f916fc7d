"""A model outage is not a flood of hand-offs: a worker waits for the model, a caller does not.

The model is a real server process on loopback (tests/chat_server.py) that speaks the
chat-completions protocol; the test kills it mid-run with SIGKILL and starts it again on the same
port. The client is the real one, with short timeouts; the worker is ``SupportBot.work``.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from support.fakes import rows

from supportbot import Settings, SupportBot, WorkerStats
from supportbot.backend.demo import load_demo_data
from supportbot.cli._worker import queue as cli_queue
from supportbot.llm._openai import OpenAICompatible

SERVER = Path(__file__).with_name("chat_server.py")
QUESTIONS = [
    "招商银行流水同步失败,提示 E3001",
    "银行流水同步一直失败 E3001 怎么办",
    "E3001 bank sync fails again",
]
OpenBot = Callable[..., SupportBot]


class ChatServer:
    """tests/chat_server.py as a process on a fixed loopback port, stopped and started by its PID."""

    def __init__(self, fail_file: Path) -> None:
        self.fail_file = fail_file  # while it exists, the server answers with the status it holds
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        self.process: subprocess.Popen[str] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> None:
        self.process = subprocess.Popen(
            [sys.executable, str(SERVER), str(self.port), str(self.fail_file)],
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.process.stdout is not None
        assert self.process.stdout.readline().strip() == "ready"

    def kill(self) -> None:
        if self.process is not None:
            if self.process.poll() is None:
                os.kill(self.process.pid, signal.SIGKILL)
                self.process.wait(timeout=10)
            if self.process.stdout is not None:
                self.process.stdout.close()  # the "ready" pipe: not left to the garbage collector
        self.process = None


@pytest.fixture
def chat_server(tmp_path: Path) -> Iterator[ChatServer]:
    server = ChatServer(tmp_path / "fail")
    yield server
    server.kill()


@pytest.fixture
def open_bot(database_url: str, chat_server: ChatServer) -> Iterator[OpenBot]:
    with psycopg.connect(database_url) as conn:
        load_demo_data(conn)
    opened: list[Any] = []

    def make(**settings: Any) -> SupportBot:
        common: dict[str, Any] = {
            "base_url": chat_server.url,
            "api_key": None,
            "timeout": 2.0,
            "max_retries": 1,
            "backoff": 0.05,
        }
        big, small = OpenAICompatible(model="big", **common), OpenAICompatible(model="small", **common)
        options = {"worker_retry_seconds": 0.2, "worker_sweep_seconds": 0.2, **settings}
        bot = SupportBot.open(
            database_url,
            llm=big,
            small_llm=small,
            settings=Settings(database_url=database_url, **options),
            backend="demo",
        )
        opened.extend([bot, big, small])
        return bot

    yield make
    for thing in opened:
        thing.close()


class Working:
    """``bot.work`` in a thread, with its stats once stopped."""

    def __init__(self, bot: SupportBot) -> None:
        self.stop = threading.Event()
        self.stats: WorkerStats | None = None
        self._thread = threading.Thread(target=self._run, args=(bot,))
        self._thread.start()

    def _run(self, bot: SupportBot) -> None:
        self.stats = bot.work(threads=2, stop=self.stop)

    def finish(self) -> WorkerStats:
        self.stop.set()
        self._thread.join(timeout=30)
        assert self.stats is not None
        return self.stats


def _escalated(url: str) -> int:
    return int(rows(url, "SELECT count(*) FROM demo.escalations")[0][0])


def _statuses(url: str) -> dict[str, str]:
    return dict(rows(url, "SELECT id, status FROM supportbot.tickets"))


def test_a_worker_waits_out_a_model_outage_and_answers_every_ticket_after(
    open_bot: OpenBot, chat_server: ChatServer, database_url: str
) -> None:
    chat_server.start()
    bot = open_bot(model_outage_grace=60.0)
    worker = Working(bot)
    try:
        before = [bot.open_ticket("wugang@example.com", body=q, wait=False) for q in QUESTIONS[:2]]
        assert all(bot.wait(s.ticket_id, s, timeout=30).outcome == "resolved" for s in before)

        # Killed while a batch is being worked on: some rounds meet a dropped connection, the
        # rest a refused one.
        during = [bot.open_ticket("lina@example.com", body=q, wait=False) for q in QUESTIONS]
        chat_server.kill()
        down_at = time.monotonic()
        during += [bot.submit(before[0].ticket_id, "还是不行,E3001", message_id="follow-up")]
        time.sleep(4.0)

        # Nothing went to people; the tickets wait in the queue, saying why.
        assert _escalated(database_url) == 0
        assert "escalated" not in _statuses(database_url).values()
        waiting = [e for e in bot.queue() if e.error and e.error.startswith("waiting for the model")]
        assert waiting and all(e.attempts == 0 for e in bot.queue())
        shown = io.StringIO()
        with contextlib.redirect_stdout(shown):
            cli_queue(bot, argparse.Namespace(limit=100, json=False, language="en"))
        assert "waiting for the model to answer again" in shown.getvalue()
        assert "after 0 failures" not in shown.getvalue()

        chat_server.start()
        up_at = time.monotonic()
        results = [bot.wait(s.ticket_id, s, timeout=40) for s in during]
        answered_in = time.monotonic() - up_at
    finally:
        stats = worker.finish()
    assert [r.outcome for r in results] == ["resolved"] * len(during), results
    assert all("KB-bank-001" in r.reply for r in results)
    assert _escalated(database_url) == 0 and stats.handed_off == 0
    assert stats.deferred >= 1 and stats.rounds >= len(before) + len(during)
    # Claiming paused at most 30 s (with jitter, at most the pause reached during a 4 s outage).
    assert answered_in < 15, (answered_in, time.monotonic() - down_at)


def test_past_the_grace_the_worker_hands_off_and_a_waiting_caller_at_once(
    open_bot: OpenBot, chat_server: ChatServer, database_url: str
) -> None:
    # The server is never started: every request is refused.
    bot = open_bot(model_outage_grace=2.0)
    started = time.monotonic()
    direct = bot.open_ticket("wugang@example.com", body=QUESTIONS[0])
    assert direct.outcome == "escalated"  # send() and open_ticket(wait=True): a customer is waiting
    assert time.monotonic() - started < 5

    worker = Working(bot)
    try:
        queued = [bot.open_ticket("lina@example.com", body=q, wait=False) for q in QUESTIONS[:2]]
        submitted_at = time.monotonic()
        time.sleep(1.0)
        assert _escalated(database_url) == 1  # only the waiting caller's ticket so far
        results = [bot.wait(s.ticket_id, s, timeout=40) for s in queued]
        handed_after = time.monotonic() - submitted_at
    finally:
        stats = worker.finish()
    assert [r.outcome for r in results] == ["escalated"] * len(queued)
    assert handed_after >= 2.0  # not before the grace ran out
    assert _escalated(database_url) == 1 + len(queued)
    assert stats.deferred >= 1


def test_work_until_idle_waits_out_the_grace_and_then_returns(
    open_bot: OpenBot, chat_server: ChatServer, database_url: str
) -> None:
    # As for a round that failed, until_idle does not wait for a retry time past the grace.
    bot = open_bot(model_outage_grace=1.5)
    bot.open_ticket("lina@example.com", body=QUESTIONS[0], wait=False)
    started = time.monotonic()
    stats = bot.work(threads=1, until_idle=True)
    elapsed = time.monotonic() - started
    assert 1.5 <= elapsed < 15 and stats.deferred >= 1


def test_an_expired_key_is_an_outage_for_a_worker_until_the_key_works_again(
    open_bot: OpenBot, chat_server: ChatServer, database_url: str
) -> None:
    chat_server.fail_file.write_text("401")
    chat_server.start()
    bot = open_bot(model_outage_grace=60.0)
    worker = Working(bot)
    try:
        queued = [bot.open_ticket("lina@example.com", body=q, wait=False) for q in QUESTIONS[:2]]
        time.sleep(2.0)
        assert _escalated(database_url) == 0
        assert "escalated" not in _statuses(database_url).values()
        chat_server.fail_file.unlink()  # the operator fixed the key
        results = [bot.wait(s.ticket_id, s, timeout=40) for s in queued]
    finally:
        stats = worker.finish()
    assert [r.outcome for r in results] == ["resolved"] * len(queued)
    assert stats.deferred >= 1 and _escalated(database_url) == 0
