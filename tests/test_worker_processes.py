"""Workers as real OS processes sharing one database: started later, killed, stopped, three at once.

Each worker runs the CLI's `worker` handler (tests/work_process.py) with a scripted model.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from datetime import datetime
from pathlib import Path
from typing import Any, TextIO

import pytest
from support.fakes import rows

from supportbot import Settings, SupportBot

HELPER = Path(__file__).resolve().parent / "work_process.py"
LEASE = 1.0


@pytest.fixture
def workers(db: str, tmp_path: Path) -> Iterator[Callable[..., subprocess.Popen[str]]]:
    """Starts worker processes (``start(delay=, threads=, calls=, **env)``); kills any left at the
    end. ``calls``: a file the worker's model marks as each call starts (see _calling)."""
    started: list[subprocess.Popen[str]] = []
    logs: list[TextIO] = []

    def start(
        *, delay: float = 0.0, threads: int = 4, calls: Path | None = None, **env: str
    ) -> subprocess.Popen[str]:
        environ = {
            **os.environ,
            "SUPPORTBOT_DATABASE_URL": db,
            "SUPPORTBOT_LEASE_SECONDS": str(LEASE),
            "SUPPORTBOT_WORKER_SWEEP_SECONDS": "0.3",
            **{f"SUPPORTBOT_{k.upper()}": v for k, v in env.items()},
        }
        log = (tmp_path / f"worker-{len(started)}.log").open("w")
        logs.append(log)
        proc = subprocess.Popen(
            [
                sys.executable,
                str(HELPER),
                json.dumps({"delay": delay, "threads": threads, "calls": str(calls) if calls else None}),
            ],
            env=environ,
            stdout=subprocess.PIPE,
            stderr=log,
            text=True,
        )
        started.append(proc)
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
        return proc

    yield start
    for proc in started:
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=10)
        if proc.stdout is not None:
            proc.stdout.close()
    for log in logs:
        log.close()


@pytest.fixture
def bot(db: str) -> Iterator[SupportBot]:
    with SupportBot.open(db, settings=Settings(database_url=db), backend="demo") as bot:
        yield bot


def _until(check: Callable[[], Any], timeout: float, what: str) -> Any:
    deadline = time.monotonic() + timeout
    while not (found := check()):
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.02)
    return found


def _leased(url: str, ticket: str) -> bool:
    return rows(url, "SELECT lease_owner IS NOT NULL FROM supportbot.tickets WHERE id = %s", ticket) == [
        (True,)
    ]


def _calling(calls: Path) -> bool:
    """Whether the worker's model was called: a thread is in the round, not only its lease taken
    (a claimed ticket no thread has started is released at a stop, not left to run)."""
    return calls.exists()


def _agent_turns(url: str, ticket: str) -> int:
    query = "SELECT count(*) FROM supportbot.turns WHERE ticket_id = %s AND role = 'agent'"
    return int(rows(url, query, ticket)[0][0])


def _stop(proc: subprocess.Popen[str], sig: int = signal.SIGTERM, timeout: float = 15) -> float:
    """Send ``sig`` and return how long the process took to exit."""
    started = time.monotonic()
    proc.send_signal(sig)
    proc.wait(timeout=timeout)
    return time.monotonic() - started


def test_a_message_nobody_waits_for_is_answered_once_by_a_worker_started_later(
    db: str, bot: SupportBot, workers: Callable[..., subprocess.Popen[str]]
) -> None:
    opened = bot.open_ticket("wugang@example.com", body="E3001 同步失败", wait=False)
    time.sleep(0.5)  # nobody works on it meanwhile
    assert _agent_turns(db, opened.ticket_id) == 0
    worker = workers()
    result = bot.wait(opened.ticket_id, opened, timeout=20)
    assert result.outcome == "resolved" and "KB-bank-001" in result.reply
    assert _stop(worker) < 5 and worker.returncode == 0
    assert _agent_turns(db, opened.ticket_id) == 1
    assert rows(db, "SELECT work_due, lease_owner FROM supportbot.tickets") == [(None, None)]


def test_sigkill_mid_round_and_a_second_worker_finishes_after_the_lease_expires(
    db: str, bot: SupportBot, workers: Callable[..., subprocess.Popen[str]], tmp_path: Path
) -> None:
    first = workers(delay=0.5, calls=tmp_path / "calls")
    opened = bot.open_ticket("wugang@example.com", body="E3001 同步失败", wait=False)
    _until(lambda: _calling(tmp_path / "calls"), 10, "the first worker's round to call the model")
    first.kill()
    first.wait(timeout=10)
    assert _agent_turns(db, opened.ticket_id) == 0 and _leased(db, opened.ticket_id)

    killed_at = time.monotonic()
    second = workers(delay=0.0)
    result = bot.wait(opened.ticket_id, opened, timeout=20)
    assert result.outcome == "resolved" and result.round == 1
    assert time.monotonic() - killed_at >= LEASE - 0.3  # it waited for the dead worker's lease to end
    assert _agent_turns(db, opened.ticket_id) == 1
    assert rows(db, "SELECT count(*) FROM supportbot.steps WHERE step = 'start_round'") == [(1,)]
    _stop(second)


def test_sigterm_lets_the_running_round_finish_then_exits(
    db: str, bot: SupportBot, workers: Callable[..., subprocess.Popen[str]], tmp_path: Path
) -> None:
    worker = workers(delay=0.3, threads=1, worker_shutdown_seconds="10", calls=tmp_path / "calls")
    opened = bot.open_ticket("wugang@example.com", body="E3001 同步失败", wait=False)
    _until(lambda: _calling(tmp_path / "calls"), 10, "the worker's round to call the model")
    late = bot.open_ticket("lina@example.com", body="E3001 同步失败", wait=False)
    took = _stop(worker)
    assert worker.returncode == 0 and took < 10
    assert _agent_turns(db, opened.ticket_id) == 1  # the running round ended
    # The ticket stored after the signal was not taken: it waits, unleased, for another worker.
    assert rows(
        db, "SELECT work_due IS NOT NULL, lease_owner FROM supportbot.tickets WHERE id = %s", late.ticket_id
    ) == [(True, None)]
    assert rows(db, "SELECT count(*) FROM supportbot.workers") == [(0,)]  # signed off


def test_sigterm_past_the_shutdown_timeout_releases_the_lease_at_once(
    db: str, bot: SupportBot, workers: Callable[..., subprocess.Popen[str]], tmp_path: Path
) -> None:
    worker = workers(delay=2.0, worker_shutdown_seconds="0.5", calls=tmp_path / "calls")
    opened = bot.open_ticket("wugang@example.com", body="E3001 同步失败", wait=False)
    _until(lambda: _calling(tmp_path / "calls"), 10, "the worker's round to call the model")
    took = _stop(worker)
    assert worker.returncode == 0 and took < 2.0
    assert rows(db, "SELECT lease_owner, work_due IS NOT NULL FROM supportbot.tickets") == [(None, True)]
    # Released, not left to expire: the next worker starts it at once.
    started = time.monotonic()
    workers(delay=0.0)
    assert bot.wait(opened.ticket_id, opened, timeout=10).outcome == "resolved"
    assert time.monotonic() - started < 5
    assert _agent_turns(db, opened.ticket_id) == 1


def test_a_second_signal_stops_at_once_and_leaves_the_lease_to_expire(
    db: str, bot: SupportBot, workers: Callable[..., subprocess.Popen[str]], tmp_path: Path
) -> None:
    worker = workers(delay=3.0, worker_shutdown_seconds="30", calls=tmp_path / "calls")
    opened = bot.open_ticket("wugang@example.com", body="E3001 同步失败", wait=False)
    _until(lambda: _calling(tmp_path / "calls"), 10, "the worker's round to call the model")
    worker.send_signal(signal.SIGTERM)
    time.sleep(0.3)
    assert worker.poll() is None  # still letting its round end
    took = _stop(worker, signal.SIGINT)
    assert took < 2 and worker.returncode == 128 + signal.SIGINT
    assert _leased(db, opened.ticket_id)


def test_three_workers_answer_three_hundred_tickets_exactly_once_in_fair_order(
    db: str, bot: SupportBot, workers: Callable[..., subprocess.Popen[str]]
) -> None:
    procs = [workers(threads=4) for _ in range(3)]
    started = time.monotonic()
    tickets = []
    for i in range(300):
        opened = bot.open_ticket(
            ("wugang@example.com", "lina@example.com")[i % 2], body=f"E3001 第 {i} 次", wait=False
        )
        tickets.append(opened.ticket_id)
        if i % 10 == 0:  # a follow-up: answered in the same round or in a round of its own
            bot.submit(opened.ticket_id, "补充一下:重新授权了还是不行")
    submitted = time.monotonic() - started
    _until(lambda: bot.stats().queued == 0, 120, "the queue to empty")
    elapsed = time.monotonic() - started
    busy = rows(db, "SELECT count(*) FROM supportbot.workers WHERE rounds > 0")[0][0]
    for proc in procs:
        _stop(proc)
        assert proc.returncode == 0

    # Every customer message is followed by an answer; each round answered exactly once.
    assert (
        rows(
            db,
            "SELECT t.id FROM supportbot.tickets t WHERE (SELECT max(idx) FROM supportbot.turns u"
            " WHERE u.ticket_id = t.id AND u.role = 'customer') > (SELECT max(idx) FROM supportbot.turns u"
            " WHERE u.ticket_id = t.id AND u.role = 'agent')",
        )
        == []
    )
    assert rows(db, "SELECT count(*) FROM supportbot.tickets WHERE status <> 'resolved'") == [(0,)]
    assert (
        rows(
            db,
            "SELECT ticket_id, round FROM supportbot.turns WHERE role = 'agent'"
            " GROUP BY 1, 2 HAVING count(*) > 1",
        )
        == []
    )
    ((answers, rounds),) = rows(
        db,
        "SELECT (SELECT count(*) FROM supportbot.turns WHERE role = 'agent'),"
        " (SELECT count(*) FROM supportbot.steps WHERE step = 'start_round')",
    )
    assert answers == rounds and 300 <= rounds <= 330
    # Rounds never interleave: within a ticket, step records go round by round.
    assert (
        rows(
            db,
            "SELECT a.ticket_id FROM supportbot.steps a JOIN supportbot.steps b"
            " ON a.ticket_id = b.ticket_id AND a.seq < b.seq AND a.round > b.round LIMIT 1",
        )
        == []
    )

    waits = _first_answer_waits(db, tickets)
    print(
        f"\n300 tickets, 3 workers x 4 threads: submitted in {submitted:.1f} s, all answered after "
        f"{elapsed:.1f} s; max wait {max(waits):.2f} s, {busy} workers did rounds"
    )
    # Oldest first: the first hundred tickets were answered sooner than the last hundred.
    answered_at = _answer_times(db, tickets)
    assert sum(answered_at[:100]) / 100 < sum(answered_at[-100:]) / 100
    assert max(waits) < elapsed
    assert busy >= 2


def _first_answer_waits(url: str, tickets: list[str]) -> list[float]:
    found = dict(
        rows(
            url,
            "SELECT c.ticket_id, extract(epoch FROM min(a.created_at) - c.created_at)::float8"
            " FROM supportbot.turns c"
            " JOIN supportbot.turns a ON a.ticket_id = c.ticket_id AND a.role = 'agent'"
            " WHERE c.idx = 0 GROUP BY c.ticket_id, c.created_at",
        )
    )
    return [float(found[t]) for t in tickets]


def _answer_times(url: str, tickets: list[str]) -> list[float]:
    found: dict[str, datetime] = dict(
        rows(url, "SELECT ticket_id, min(created_at) FROM supportbot.turns WHERE role = 'agent' GROUP BY 1")
    )
    first = min(found.values())
    return [(found[t] - first).total_seconds() for t in tickets]
