"""A database outage mid-run: callers get StoreUnavailable (never a raw driver error, never a hang),
the pool reconnects by itself once the server is back, and nothing is lost or stored twice.

The server here is a dedicated embedded one in a folder of this test, so killing it leaves the
session's server alone.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psycopg
import pytest
from support.fakes import ScriptedLLM, cite_hits, rows, seed_business

from supportbot import Settings, SupportBot
from supportbot._front._opening import resolve_database_url
from supportbot.errors import StoreBusy, StoreError, StoreUnavailable, SupportbotError
from supportbot.store._failures import translated

THREADS = 4
LEASE = 1.0


@dataclass
class Caller:
    """One thread's conversation: each message is sent until a call succeeds (same message_id)."""

    ticket: str
    sent: list[str] = field(default_factory=list)
    errors: Counter[str] = field(default_factory=Counter)
    longest: float = 0.0
    successes: list[float] = field(default_factory=list)  # monotonic times of successful calls
    unexpected: list[BaseException] = field(default_factory=list)


def _postmaster_pid(data_dir: Path) -> int:
    return int((data_dir / "pgdata" / "postmaster.pid").read_text().split()[0])


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


@pytest.fixture
def data_dir(tmp_path: Path) -> Iterator[Path]:
    yield tmp_path / "db"
    pidfile = tmp_path / "db" / "pgdata" / "postmaster.pid"
    if pidfile.exists():  # stop this test's server now rather than at interpreter exit
        pid = _postmaster_pid(tmp_path / "db")
        if not _gone(pid):
            os.kill(pid, signal.SIGINT)  # fast shutdown


def _settings(data_dir: Path) -> Settings:
    return Settings(data_dir=data_dir, lease_seconds=LEASE, pool_timeout=1.0, db_timeout=5.0)


def _talk(bot: SupportBot, caller: Caller, stop: threading.Event) -> None:
    n = 0
    while not stop.is_set():
        message_id = f"{caller.ticket}-{n}"
        while not stop.is_set():
            started = time.monotonic()
            try:
                bot.send(caller.ticket, f"第{n}条追问 E3001", message_id=message_id)
            except (StoreUnavailable, StoreBusy) as exc:
                caller.errors[type(exc).__name__] += 1
                assert exc.__cause__ is not None  # the driver's error stays chained
                time.sleep(0.05)
                continue
            except BaseException as exc:  # noqa: BLE001 - the test reports anything else as a failure
                caller.unexpected.append(exc)
                return
            finally:
                caller.longest = max(caller.longest, time.monotonic() - started)
            caller.sent.append(message_id)
            caller.successes.append(time.monotonic())
            break
        n += 1


def test_callers_get_store_unavailable_then_success_and_nothing_is_lost(data_dir: Path) -> None:
    settings = _settings(data_dir)
    bot = SupportBot.open(settings=settings, llm=ScriptedLLM(draft=cite_hits), backend="demo")
    url = resolve_database_url(None, settings)  # the embedded server's, started by open()
    with psycopg.connect(url) as conn:
        seed_business(conn)
    callers = [
        Caller(bot.open_ticket("wugang@example.com", body="E3001 同步失败").ticket_id) for _ in range(THREADS)
    ]
    stop = threading.Event()
    threads = [threading.Thread(target=_talk, args=(bot, c, stop)) for c in callers]
    for thread in threads:
        thread.start()
    try:
        time.sleep(1.0)
        assert all(c.sent for c in callers), "no round finished before the outage"
        pid = _postmaster_pid(data_dir)
        os.kill(pid, signal.SIGQUIT)  # immediate shutdown: every session is cut off mid-statement
        killed = time.monotonic()
        while not _gone(pid):
            time.sleep(0.05)
        time.sleep(1.5)  # the outage, while the callers keep calling
        with pytest.raises(StoreUnavailable) as down:
            bot.tickets()
        assert isinstance(down.value.__cause__, psycopg.OperationalError)

        # A new SupportBot.open() in this process starts the embedded server again.
        reopened = SupportBot.open(settings=settings, llm=ScriptedLLM(draft=cite_hits), backend="demo")
        restarted = time.monotonic()
        assert reopened.tickets()  # the data is all there
        reopened.close()
        deadline = restarted + 30
        while not all(c.successes and c.successes[-1] > restarted for c in callers):
            assert time.monotonic() < deadline, "the pool did not recover"
            time.sleep(0.05)
        recovered = max(min(t for t in c.successes if t > restarted) for c in callers)
        time.sleep(0.5)
    finally:
        stop.set()
        for thread in threads:
            thread.join(60)
    errors = sum((c.errors for c in callers), Counter())
    print(
        f"outage: server down {restarted - killed:.2f} s (restart included); every caller succeeded again "
        f"{recovered - restarted:.2f} s after the restart; errors {dict(errors)}; "
        f"longest call {max(c.longest for c in callers):.2f} s; messages {sum(len(c.sent) for c in callers)}"
    )
    assert [c.unexpected for c in callers] == [[]] * THREADS
    assert sum(c.errors["StoreUnavailable"] for c in callers) > 0
    # No call waited longer than the pool timeout plus the connection attempt behind it (db_timeout).
    assert max(c.longest for c in callers) < settings.db_timeout + 3

    time.sleep(LEASE + 0.2)  # a round cut off by the outage left its lease to expire
    for caller in callers:
        bot.resume(caller.ticket)
    bot.close()
    for caller in callers:
        stored = rows(
            url,
            "SELECT message_id, role FROM supportbot.turns WHERE ticket_id = %s ORDER BY idx",
            caller.ticket,
        )
        ids = [m for m, role in stored if role == "customer" and m is not None]
        assert ids == caller.sent[: len(ids)] and set(caller.sent) <= set(ids)  # each once, in order
        assert stored[-1][1] == "agent"  # every message answered


def test_every_database_error_reaching_a_caller_is_a_supportbot_error(data_dir: Path) -> None:
    settings = _settings(data_dir)
    bot = SupportBot.open(settings=settings, llm=ScriptedLLM(), backend="demo")
    try:
        pid = _postmaster_pid(data_dir)
        os.kill(pid, signal.SIGQUIT)
        while not _gone(pid):
            time.sleep(0.05)
        calls: list[Callable[[], object]] = [
            bot.tickets,
            lambda: bot.open_ticket("wugang@example.com", body="你好"),
            lambda: bot.send("T000001", "你好"),
            lambda: bot.state("T000001"),
            bot.pending_approvals,
        ]
        for call in calls:
            with pytest.raises(SupportbotError) as raised:
                call()
            assert isinstance(raised.value, StoreUnavailable), raised.value
    finally:
        bot.close()


def test_a_lock_held_past_db_timeout_raises_store_busy(open_bot: Any, database_url: str) -> None:
    bot = open_bot(ScriptedLLM(draft=cite_hits), db_timeout=1.0)
    ticket = bot.open_ticket("wugang@example.com", body="E3001 同步失败").ticket_id
    with psycopg.connect(database_url) as other:  # another session keeps the ticket row locked
        other.execute("SELECT 1 FROM supportbot.tickets WHERE id = %s FOR UPDATE", (ticket,))
        started = time.monotonic()
        with pytest.raises(StoreBusy, match="SUPPORTBOT_DB_TIMEOUT") as raised:
            bot.resume(ticket)
        waited = time.monotonic() - started
    assert isinstance(raised.value.__cause__, psycopg.errors.LockNotAvailable | psycopg.errors.QueryCanceled)
    assert waited < 5, waited  # without the limit it would wait for the other session forever
    assert bot.resume(ticket) is None  # the lock gone, the ticket works (nothing was pending)


@pytest.mark.parametrize("message_id", ["m-1", None])
@pytest.mark.parametrize("call", ["send", "submit"])
def test_storing_a_message_waits_for_a_held_ticket_no_longer_than_db_timeout(
    open_bot: Any, database_url: str, call: str, message_id: str | None
) -> None:
    """The message's own statement waits on the ticket row too (a round recording a step while a
    slow host call holds it, or a frozen process): bounded, nothing stored, then it goes through.
    With a message id it is a transaction (the id is looked up first), without one a statement
    alone: both bounded."""
    bot = open_bot(ScriptedLLM(draft=cite_hits), db_timeout=1.0)
    ticket = bot.open_ticket("wugang@example.com", body="E3001 同步失败").ticket_id
    before = len(bot.state(ticket).turns)
    store = getattr(bot, call)
    with psycopg.connect(database_url) as other:
        other.execute("SELECT 1 FROM supportbot.tickets WHERE id = %s FOR UPDATE", (ticket,))
        started = time.monotonic()
        with pytest.raises(StoreBusy, match="SUPPORTBOT_DB_TIMEOUT") as raised:
            store(ticket, "还是不行", message_id=message_id)
        waited = time.monotonic() - started
    assert isinstance(raised.value.__cause__, psycopg.errors.LockNotAvailable | psycopg.errors.QueryCanceled)
    assert waited < 5, waited  # without the limit it would wait for the other session forever
    assert len(bot.state(ticket).turns) == before  # nothing was stored
    store(ticket, "还是不行", message_id=message_id)  # the lock gone, the message goes through
    if message_id is not None:
        store(ticket, "还是不行", message_id=message_id)  # a retry of it stores nothing
    assert [t.content for t in bot.state(ticket).turns].count("还是不行") == 1


@pytest.mark.parametrize(
    ("raised", "becomes"),
    [
        (psycopg.OperationalError("consuming input failed: server closed the connection"), StoreUnavailable),
        (
            psycopg.errors.AdminShutdown("terminating connection due to administrator command"),
            StoreUnavailable,
        ),
        (psycopg.errors.DeadlockDetected("deadlock detected"), StoreBusy),
        (psycopg.errors.LockNotAvailable("canceling statement due to lock timeout"), StoreBusy),
        (psycopg.errors.TooManyConnections("sorry, too many clients already"), StoreBusy),
        (
            psycopg.errors.UniqueViolation(
                'duplicate key value violates unique constraint "x"\n'
                "DETAIL:  Key (email)=(li@example.com) exists."
            ),
            StoreError,
        ),
    ],
)
def test_driver_errors_become_store_errors_without_row_data(
    raised: psycopg.Error, becomes: type[StoreError]
) -> None:
    error = translated(raised, 10.0)
    assert type(error) is becomes
    assert "li@example.com" not in str(error)  # a DETAIL line may quote customer data
    assert ("SUPPORTBOT_DB_TIMEOUT" in str(error)) == (becomes is StoreBusy)  # says what to do next
