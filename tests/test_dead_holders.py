"""A ticket is never parked behind a holder that is gone, and send() waits for a live one.

- A live round of another thread or process holds the ticket: send() waits for the answer that
  round gives its message (it looks for messages stored meanwhile before it lets go), up to
  ``send_wait_seconds``, and only then returns ``queued``.
- The holder dies while send() waits: send() takes the ticket over and answers.
- wait() after submit() with no worker running: the waiter runs the round itself.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

from conftest import VIA_PGBOUNCER
from pydantic import BaseModel
from support.fakes import ScriptedLLM, rows

from supportbot import SupportBot

OpenBot = Callable[..., SupportBot]
WORKER = Path(__file__).resolve().parent / "worker.py"


class SlowDraft(ScriptedLLM):
    """Drafts after ``seconds``; ``started`` is set once a draft began (the round holds the ticket)."""

    def __init__(self, seconds: float) -> None:
        super().__init__()
        self.seconds = seconds
        self.started = threading.Event()

    def before(self, schema: type[BaseModel] | None) -> None:
        if schema is None:
            self.started.set()
            time.sleep(self.seconds)


def test_send_waits_for_the_live_round_that_holds_the_ticket_and_gets_its_answer(open_bot: OpenBot) -> None:
    slow = SlowDraft(1.5)
    holder, caller = open_bot(slow), open_bot()
    ticket = caller.open_ticket("wugang@example.com", body="E3001 同步失败").ticket_id
    first = threading.Thread(target=holder.send, args=(ticket, "还是不行"))
    first.start()
    assert slow.started.wait(10)
    started = time.monotonic()
    answered = caller.send(ticket, "重新授权了")  # stored while the live round runs
    first.join()
    assert answered.outcome == "resolved" and answered.reply
    # Stored during the holder's round (index 3): that round answered what it had taken up, then
    # looked again before letting go, and its next round answered this one.
    assert answered.handled_upto > 3 and answered.round == 3
    assert time.monotonic() - started < 10
    roles = [r.role for r in caller.state(ticket).turns]
    assert roles == ["customer", "agent", "customer", "customer", "agent", "agent"]


def test_send_returns_queued_once_its_bound_is_up_while_a_live_round_runs(open_bot: OpenBot) -> None:
    slow = SlowDraft(3.0)
    holder, caller = open_bot(slow), open_bot(send_wait_seconds=0.5)
    ticket = caller.open_ticket("wugang@example.com", body="E3001 同步失败").ticket_id
    first = threading.Thread(target=holder.send, args=(ticket, "还是不行"))
    first.start()
    assert slow.started.wait(10)
    started = time.monotonic()
    queued = caller.send(ticket, "重新授权了")
    assert queued.outcome == "queued" and 0.4 < time.monotonic() - started < 2.5
    first.join()  # the live round answers it after all, before it lets go of the ticket
    assert caller.resume(ticket) is None  # nothing left pending
    turns = caller.state(ticket).turns
    assert [t.content for t in turns if t.role == "customer"][-1] == "重新授权了" and turns[
        -1
    ].role == "agent"


def test_wait_after_submit_is_answered_with_no_worker_running(open_bot: OpenBot) -> None:
    bot = open_bot(worker_sweep_seconds=0.5)
    ticket = bot.open_ticket("wugang@example.com", body="E3001 同步失败").ticket_id
    submitted = bot.submit(ticket, "还是不行")
    started = time.monotonic()
    answered = bot.wait(ticket, submitted, timeout=10)
    assert answered.outcome == "resolved" and answered.handled_upto > submitted.idx
    assert time.monotonic() - started < 3


def test_a_waiter_takes_the_ticket_over_when_its_holder_dies(open_bot: OpenBot, database_url: str) -> None:
    """A process holds the ticket in a slow round; send() here waits for it; the process is killed:
    the waiter takes the ticket (at once on a direct connection, at the lease's end through PgBouncer)."""
    lease = 3.0 if VIA_PGBOUNCER else 30.0
    db = database_url
    caller = open_bot(lease_seconds=lease, send_wait_seconds=lease + 20)  # seeds the customers
    env = {**os.environ, "SUPPORTBOT_DATABASE_URL": db, "SUPPORTBOT_LEASE_SECONDS": str(lease)}
    args = '{"email": "wugang@example.com", "body": "E3001 同步失败", "crash_at": "slow_draft"}'
    holder = subprocess.Popen(
        [sys.executable, str(WORKER), "open", args], env=env, stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "drafting"
        (ticket,) = rows(db, "SELECT id FROM supportbot.tickets")[0]
        killer = threading.Timer(1.0, os.kill, (holder.pid, signal.SIGKILL))
        killer.start()
        started = time.monotonic()
        answered = caller.send(ticket, "有人吗?")
        waited = time.monotonic() - started
    finally:
        holder.kill()
        holder.wait()
        if holder.stdout is not None:
            holder.stdout.close()
    assert answered.outcome == "resolved" and answered.reply
    assert [
        r for (r,) in rows(db, "SELECT role FROM supportbot.turns WHERE ticket_id = %s ORDER BY idx", ticket)
    ] == [
        "customer",
        "customer",
        "agent",
    ]
    # Killed after 1 s: answered within 2 s of it on a direct connection, within the lease through PgBouncer.
    assert waited < (1.0 + lease + 3.0 if VIA_PGBOUNCER else 3.0), waited
