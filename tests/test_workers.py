"""The work queue in one process: submit, wait, work, fairness, poison tickets, stats.

Across real processes (a worker started later, SIGKILL, SIGTERM, three workers at once):
tests/test_worker_processes.py.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg
import pytest
from conftest import bot_settings
from pydantic import BaseModel
from support.fakes import TECH, ScriptedLLM, present, refund_if_asked, rows
from support.parts import bot_over_store

from supportbot import SupportBot, TicketRow, Turn
from supportbot._records import CustomerRecords
from supportbot._state import Triage
from supportbot.backend.demo._backend import DemoBackend
from supportbot.errors import ConfigError, InvalidInput, ModelError, WaitTimeout
from supportbot.memory._tokens import TOKENIZER_FILE_ENV
from supportbot.run import _engine as engine_module
from supportbot.run import _profiles as profiles_module
from supportbot.run._worker import Worker, claim_room
from supportbot.store import _history as steps_repo
from supportbot.store import _queue as work_queue
from supportbot.store import _store as store_module
from supportbot.store import _tickets as repo
from supportbot.store._rows import Claim, StepRow

OpenBot = Callable[..., SupportBot]
POISON = "毒药工单"


def _queued(url: str) -> list[tuple[str]]:
    return rows(url, "SELECT id FROM supportbot.tickets WHERE work_due IS NOT NULL ORDER BY id")


def _agent_turns(url: str, ticket: str) -> int:
    return int(
        rows(url, "SELECT count(*) FROM supportbot.turns WHERE ticket_id = %s AND role = 'agent'", ticket)[0][
            0
        ]
    )


def test_submit_returns_before_any_round_and_a_worker_answers_once(
    open_bot: OpenBot, database_url: str
) -> None:
    bot = open_bot()
    opened = bot.open_ticket("wugang@example.com", body="E3001 同步失败", wait=False)
    assert opened.idx == 0 and _agent_turns(database_url, opened.ticket_id) == 0
    more = bot.submit(opened.ticket_id, "还是不行", message_id="m-1")
    assert more.idx == 1 and more.stored
    assert _queued(database_url) == [(opened.ticket_id,)]

    stats = bot.work(threads=2, until_idle=True)

    first = bot.wait(opened.ticket_id, opened, timeout=5)
    second = bot.wait(opened.ticket_id, more, timeout=5)
    # Both messages were waiting when the round started: one round answers both, once.
    assert first == second and first.outcome == "resolved" and "KB-bank-001" in first.reply
    assert stats.rounds == 1 and stats.failures == 0
    assert _agent_turns(database_url, opened.ticket_id) == 1
    assert _queued(database_url) == []
    assert bot.submit(opened.ticket_id, "还是不行", message_id="m-1").stored is False


def test_wait_wakes_on_the_notification_of_a_worker_in_another_thread(open_bot: OpenBot) -> None:
    bot, worker_bot = open_bot(), open_bot()
    stop = threading.Event()
    worker = threading.Thread(target=worker_bot.work, kwargs={"threads": 2, "stop": stop})
    worker.start()
    try:
        opened = bot.open_ticket("lina@example.com", body="E3001 同步失败", wait=False)
        started = time.monotonic()
        result = bot.wait(opened.ticket_id, opened, timeout=10)
        waited = time.monotonic() - started
    finally:
        stop.set()
        worker.join(timeout=10)
    assert result.outcome == "resolved" and result.round == 1
    assert not worker.is_alive()
    # A notification, not the 1 s re-check nor the 2 s sweep, brought the work and the answer.
    assert waited < 0.9, waited


def test_polling_only_still_answers(open_bot: OpenBot) -> None:
    bot = open_bot(listen=False, worker_sweep_seconds=0.2)
    stop = threading.Event()
    worker = threading.Thread(target=bot.work, kwargs={"threads": 1, "stop": stop})
    worker.start()
    try:
        opened = bot.open_ticket("lina@example.com", body="E3001 同步失败", wait=False)
        result = bot.wait(opened.ticket_id, opened, timeout=10)
    finally:
        stop.set()
        worker.join(timeout=10)
    assert result.outcome == "resolved"


def test_wait_without_a_worker_times_out_and_the_message_stays_queued(
    open_bot: OpenBot, database_url: str
) -> None:
    bot = open_bot()
    opened = bot.open_ticket("wugang@example.com", body="E3001 同步失败", wait=False)
    with pytest.raises(WaitTimeout, match=r"SupportBot\.work"):
        bot.wait(opened.ticket_id, opened, timeout=0.3)
    assert _queued(database_url) == [(opened.ticket_id,)]
    with pytest.raises(InvalidInput, match="belongs to ticket"):
        bot.wait("T999999", opened, timeout=0.1)


def test_send_leaves_nothing_queued(open_bot: OpenBot, database_url: str) -> None:
    bot = open_bot()
    first = bot.open_ticket("wugang@example.com", body="E3001 同步失败")
    bot.send(first.ticket_id, "好的,谢谢")
    assert _queued(database_url) == []
    assert bot.work(threads=1, until_idle=True).rounds == 0
    assert bot.wait(first.ticket_id, 2, timeout=1).round == 2


def test_a_message_to_a_ticket_waiting_for_approval_waits_for_the_decision(
    open_bot: OpenBot, database_url: str
) -> None:
    bot = open_bot(ScriptedLLM(triage=refund_if_asked, draft="您好 [KB-refund-001]。"))
    paused = bot.open_ticket("wugang@example.com", body="申请退款 50 元")
    assert paused.outcome == "waiting_approval"
    late = bot.submit(paused.ticket_id, "请尽快处理退款")
    stats = bot.work(threads=1, until_idle=True)
    # The worker looked, found the round paused for a human, and left the queue: no busy loop.
    assert _queued(database_url) == [] and stats.failures == 0
    with pytest.raises(WaitTimeout):  # it is answered after the decision, in a round of its own
        bot.wait(paused.ticket_id, late, timeout=0.3)
    assert bot.wait(paused.ticket_id, paused.round, timeout=1).outcome == "waiting_approval"
    assert bot.approve(paused.ticket_id, approver="王经理").outcome == "resolved"
    answered = bot.wait(paused.ticket_id, late, timeout=5)
    assert answered.round == 2 and answered.outcome == "resolved"


def test_claims_never_overlap_and_take_the_longest_wait_first(open_bot: OpenBot, database_url: str) -> None:
    bot = open_bot()
    ids = [bot.open_ticket("wugang@example.com", body=f"问题 {i}", wait=False).ticket_id for i in range(30)]
    barrier = threading.Barrier(3)
    claimed: dict[int, list[str]] = {}
    # The claimers' connections stay open, as a worker's pool does: a lease whose holder's server
    # process is gone may be taken at once (test_processes covers that).
    workers = [psycopg.connect(database_url, autocommit=True) for _ in range(3)]

    def claim(n: int) -> None:
        barrier.wait()
        with workers[n].transaction():
            got = work_queue.claimed(work_queue.claim_cursor(workers[n], "t:", 12, 30))
        claimed[n] = [c.ticket_id for c in got]

    threads = [threading.Thread(target=claim, args=(n,)) for n in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    every = [t for batch in claimed.values() for t in batch]
    assert len(every) == len(set(every)) == 30  # 3 x 12 asked, 30 due: each claimed exactly once
    # A fresh claim sees nothing: every due ticket is leased, by a live holder.
    with psycopg.connect(database_url, autocommit=True) as conn:
        assert work_queue.claimed(work_queue.claim_cursor(conn, "t:", 5, 30)) == []
        holder = workers[0].info.backend_pid
        workers[0].close()  # that holder is gone: its 12 tickets go to the next claim at once
        # once its server process has exited, which close() does not wait for (on a loaded machine
        # the exit lagged the next statement)
        deadline = time.monotonic() + 10
        while conn.execute("SELECT 1 FROM pg_stat_activity WHERE pid = %s", (holder,)).fetchone():
            assert time.monotonic() < deadline, "the closed connection's server process never exited"
            time.sleep(0.01)
        freed = work_queue.claimed(work_queue.claim_cursor(conn, "t:", 30, 30))
        assert sorted(c.ticket_id for c in freed) == sorted(claimed[0])
        conn.execute("UPDATE supportbot.tickets SET lease_owner = NULL, lease_expires = NULL")
        oldest = work_queue.claimed(work_queue.claim_cursor(conn, "t:", 3, 30))
    for worker in workers[1:]:
        worker.close()
    assert [c.ticket_id for c in oldest] == ids[:3]


def _claim_one_and_free_it(url: str) -> Claim:
    """Claim the one due ticket as a worker would (one statement), then give its lease back."""
    with psycopg.connect(url, autocommit=True) as conn:
        (claim,) = work_queue.claimed(work_queue.claim_cursor(conn, "t:", 5, 30))
        conn.execute("UPDATE supportbot.tickets SET lease_owner = NULL, lease_expires = NULL")
    return claim


def test_a_claim_brings_the_waiting_messages_so_the_round_reads_no_turns(
    open_bot: OpenBot, database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    worker, web = open_bot(), open_bot()  # two processes' caches: the web one stores the messages
    opened = worker.open_ticket("wugang@example.com", body="E3001 同步失败", wait=False)
    assert worker.work(threads=1, until_idle=True).rounds == 1
    first = web.submit(opened.ticket_id, "重新授权了,还是不行")
    second = web.submit(opened.ticket_id, "今天下午三点前能解决吗")
    claim = _claim_one_and_free_it(database_url)
    with psycopg.connect(database_url) as conn:
        assert claim.waiting == tuple(repo.load_turns(conn, opened.ticket_id, first.idx))  # all, as stored
    assert [t.content for t in claim.waiting] == ["重新授权了,还是不行", "今天下午三点前能解决吗"]

    reads: list[tuple[int, int | None]] = []
    real = repo.load_turns

    def load_turns(c: psycopg.Connection, t: str, start: int, stop: int | None = None) -> list[Turn]:
        reads.append((start, stop))
        return real(c, t, start, stop)

    monkeypatch.setattr(repo, "load_turns", load_turns)
    assert worker.work(threads=1, until_idle=True).rounds == 1
    assert reads == []  # the claim brought both messages; the round read none back
    answered = worker.wait(opened.ticket_id, second, timeout=5)
    assert answered.handled_upto == second.idx + 1 and answered.outcome == "resolved"


def test_a_claimed_ticket_without_steps_starts_from_the_claimed_row(
    open_bot: OpenBot, database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    worker, web = open_bot(), open_bot()  # the web process opens it; the worker has never seen it
    opened = web.open_ticket("wugang@example.com", subject="银行同步", body="E3001 同步失败", wait=False)
    claim = _claim_one_and_free_it(database_url)
    with psycopg.connect(database_url) as conn:
        assert claim.last_seq == 0 and claim.ticket == repo.get_ticket(conn, opened.ticket_id)

    loads: list[str] = []
    real = steps_repo.read_state_rows

    def read_state_rows(
        c: psycopg.Connection, t: str, at: int | None = None
    ) -> tuple[TicketRow, tuple[int, dict[str, Any]] | None, list[StepRow]]:
        loads.append(t)
        return real(c, t, at)

    monkeypatch.setattr(steps_repo, "read_state_rows", read_state_rows)
    assert worker.work(threads=1, until_idle=True).rounds == 1
    assert loads == []  # its state is the ticket itself: nothing to read
    assert worker.wait(opened.ticket_id, opened, timeout=5).outcome == "resolved"
    monkeypatch.setattr(steps_repo, "read_state_rows", real)
    assert worker.state(opened.ticket_id) == web.state(opened.ticket_id)  # as rebuilt from the records


def test_a_worker_keeps_only_its_recent_tickets_and_reads_the_others_back(
    open_bot: OpenBot, database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    for module in (engine_module, store_module):
        monkeypatch.setattr(module, "RECENT_TICKETS", 2)
    monkeypatch.setattr(profiles_module, "RECENT_CUSTOMERS", 1)
    web = open_bot()
    emails = ["wugang@example.com", "lina@example.com"] * 3
    opened = [
        web.open_ticket(e, body=f"E3001 同步失败,第 {n} 个工单", wait=False) for n, e in enumerate(emails)
    ]
    with bot_over_store(database_url, llm=ScriptedLLM(), settings=bot_settings(database_url)) as parts:
        engine = parts.engine()  # the worker's: its memory is what this test bounds

        def work() -> int:
            worker = Worker(engine, parts.store, parts.deps.settings, threads=2, listen_url=None)
            return worker.run(until_idle=True).rounds

        assert work() == 6
        more = [web.submit(o.ticket_id, "重新授权了,还是不行") for o in opened]
        assert work() == 6
        for o, m in zip(opened, more, strict=True):  # evicted or not, each round continued its own ticket
            answered = parts.bot.wait(o.ticket_id, m, timeout=5)
            assert answered.outcome == "resolved" and answered.handled_upto == m.idx + 1
            assert parts.bot.state(o.ticket_id) == web.state(o.ticket_id)
        assert 0 < engine.remembered() <= 2
        assert all(0 < n <= 2 for n in parts.store.remembered().values())
        assert parts.deps.profiles is not None and parts.deps.profiles.remembered() == 1


def _reads_by_thread(monkeypatch: pytest.MonkeyPatch, fail: bool = False) -> list[tuple[str, int]]:
    """Record each customer_records call: the calling thread and how many addresses it asked for."""
    calls: list[tuple[str, int]] = []
    real = DemoBackend.customer_records

    def reading(self: DemoBackend, emails: list[str]) -> list[CustomerRecords | None]:
        calls.append((threading.current_thread().name, len(emails)))
        if fail and len(emails) > 1:
            raise psycopg.OperationalError("the business system is unreachable")
        return real(self, emails)

    monkeypatch.setattr(DemoBackend, "customer_records", reading)
    return calls


def test_the_dispatcher_reads_the_claimed_customers_once_for_all_their_rounds(
    open_bot: OpenBot, monkeypatch: pytest.MonkeyPatch
) -> None:
    bot = open_bot()
    emails = ["wugang@example.com", "lina@example.com"] * 4
    tickets = [bot.open_ticket(e, body="E3001 同步失败", wait=False).ticket_id for e in emails]
    calls = _reads_by_thread(monkeypatch)
    assert bot.work(threads=4, until_idle=True).rounds == 8
    # One read per claim (the first takes a ticket per thread and half as many ahead), made by the
    # dispatcher; no round thread read its customer.
    assert calls[0][1] == 6 and len(calls) > 1 and sum(n for _, n in calls) == 8
    assert not any(name.startswith("supportbot-worker") for name, _ in calls)
    for ticket, email in zip(tickets, emails, strict=True):
        state = bot.state(ticket)
        (call,) = [c for c in state.tool_log if c.step == "load_customer"]
        assert call.name == "get_customer" and call.args == {"email": email} and call.result["email"] == email
        assert state.customer is not None and state.customer.email == email
        assert "专业版" in state.profile if email.startswith("wugang") else "基础版" in state.profile


def test_when_the_batch_read_fails_each_round_reads_its_own_customer(
    open_bot: OpenBot, monkeypatch: pytest.MonkeyPatch
) -> None:
    bot = open_bot()
    tickets = [
        bot.open_ticket(e, body="E3001 同步失败", wait=False).ticket_id
        for e in ("wugang@example.com", "lina@example.com")
    ]
    calls = _reads_by_thread(monkeypatch, fail=True)
    stats = bot.work(threads=2, until_idle=True)
    assert stats.rounds == 2 and stats.failures == 0
    assert sorted(n for _, n in calls) == [1, 1, 2]  # the failed batch, then one read per round
    assert sum(name.startswith("supportbot-worker") for name, _ in calls) == 2
    assert [present(bot.state(t).customer).name for t in tickets] == ["吴刚", "李娜"]


def test_while_claimed_tickets_wait_for_a_thread_claims_come_in_batches(database_url: str) -> None:
    with bot_over_store(database_url, settings=bot_settings(database_url)) as parts:
        worker = Worker(parts.engine(), parts.store, parts.deps.settings, threads=64, listen_url=None)
        assert worker.lookahead == 32
    # 81 of 96 places taken (64 threads, 32 ahead): 15 free, under half the lookahead.
    assert (
        claim_room(64, 32, 81, waiting=True) == 0
    )  # a claimed ticket still waits for a thread: no claim yet
    assert claim_room(64, 32, 81, waiting=False) == 15  # none waits: a thread may be idle, claim at once
    assert claim_room(64, 32, 80, waiting=True) == 16  # half the lookahead free: claim
    assert claim_room(64, 32, 96, waiting=False) == 0  # every place taken
    assert claim_room(64, 32, 0, waiting=False) == 96  # an idle worker fills its threads and the lookahead


def _poisoned(prompt: str) -> Triage:
    if POISON in prompt:
        raise RuntimeError("the business system is down for this customer")
    return TECH


def test_a_poison_ticket_is_retried_with_backoff_then_handed_to_a_human(
    open_bot: OpenBot, database_url: str
) -> None:
    bot = open_bot(ScriptedLLM(triage=_poisoned), worker_max_attempts=3, worker_retry_seconds=0.2)
    poison = bot.open_ticket("wugang@example.com", body=f"{POISON}:E3001", wait=False)
    healthy = [bot.open_ticket("lina@example.com", body=f"E3001 第 {i} 次", wait=False) for i in range(5)]
    started = time.monotonic()
    stop = threading.Event()
    worker = threading.Thread(target=bot.work, kwargs={"threads": 2, "stop": stop})
    worker.start()
    try:
        for h in healthy:  # answered while the poison ticket fails and waits out its backoff
            assert bot.wait(h.ticket_id, h, timeout=10).outcome == "resolved"
        result = bot.wait(poison.ticket_id, poison, timeout=15)
        took = time.monotonic() - started
        stats = bot.stats()
    finally:
        stop.set()
        worker.join(timeout=10)
    assert result.outcome == "escalated" and result.reply == ""
    assert took >= 0.2 + 0.4  # the two retries waited 0.2 s and 0.4 s
    (row,) = rows(
        database_url,
        "SELECT status, work_attempts, work_error, work_due FROM supportbot.tickets WHERE id = %s",
        poison.ticket_id,
    )
    assert row[:2] == ("escalated", 3) and row[3] is None
    assert row[2] == "RuntimeError: the business system is down for this customer"
    assert stats.handed_off == 1 and stats.queued == 0
    listed = bot.queue()
    assert [(e.ticket_id, e.due, e.attempts) for e in listed] == [(poison.ticket_id, None, 3)]
    assert _agent_turns(database_url, poison.ticket_id) == 0


def test_a_worker_without_a_tokenizer_stops_before_claiming_and_hands_nothing_over(
    open_bot: OpenBot, database_url: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    bot = open_bot()
    opened = bot.open_ticket("wugang@example.com", body="E3001 同步失败", wait=False)
    # A deployment mistake, not the ticket's: every round would fail on it, and after its
    # attempts each claimed ticket would go to a human.
    monkeypatch.setenv(TOKENIZER_FILE_ENV, str(tmp_path / "missing.tiktoken"))
    with pytest.raises(ConfigError, match=r"missing\.tiktoken does not exist"):
        bot.work(threads=2, until_idle=True)
    assert _queued(database_url) == [(opened.ticket_id,)]
    assert rows(
        database_url,
        "SELECT work_attempts, work_error, lease_owner FROM supportbot.tickets WHERE id = %s",
        opened.ticket_id,
    ) == [(0, None, None)]

    monkeypatch.delenv(TOKENIZER_FILE_ENV)
    assert bot.work(threads=2, until_idle=True).rounds == 1
    assert bot.wait(opened.ticket_id, opened, timeout=5).outcome == "resolved"


def test_a_model_that_fails_hands_the_ticket_over_at_once_without_retries(
    open_bot: OpenBot, database_url: str
) -> None:
    class Down(ScriptedLLM):
        def before(self, schema: type[BaseModel] | None) -> None:
            if schema is None:  # the draft
                raise ModelError("upstream returned 503 three times")

    bot = open_bot(Down())
    opened = bot.open_ticket("wugang@example.com", body="E3001 同步失败", wait=False)
    stats = bot.work(threads=1, until_idle=True)
    assert (stats.rounds, stats.failures, stats.handed_off) == (1, 0, 0)  # not a failed round
    assert bot.wait(opened.ticket_id, opened, timeout=5).outcome == "escalated"
    assert "503" in bot.state(opened.ticket_id).handoff_reason
    assert _queued(database_url) == []
    assert rows(
        database_url,
        "SELECT work_attempts, work_error FROM supportbot.tickets WHERE id = %s",
        opened.ticket_id,
    ) == [(0, None)]


def test_stats_count_the_queue_and_the_running_workers(open_bot: OpenBot) -> None:
    bot = open_bot()
    for i in range(3):
        bot.open_ticket("wugang@example.com", body=f"问题 {i}", wait=False)
    time.sleep(0.05)
    before = bot.stats()
    assert before.queued == 3 and before.running == 0 and before.oldest_wait > 0
    entries = bot.queue(limit=2)
    assert len(entries) == 2 and all(e.due is not None and not e.running for e in entries)
    stop = threading.Event()
    worker = threading.Thread(target=bot.work, kwargs={"threads": 2, "stop": stop})
    worker.start()
    try:
        deadline = time.monotonic() + 10
        while (now := bot.stats()).queued or now.rounds < 3:
            assert time.monotonic() < deadline, now
            time.sleep(0.1)
    finally:
        stop.set()
        worker.join(timeout=10)
    assert now.workers == 1 and now.rounds == 3 and now.oldest_wait == 0
    assert bot.stats().workers == 0  # a stopped worker signs off


def test_a_ticket_a_person_took_over_is_skipped_until_the_hand_back(
    open_bot: OpenBot, database_url: str
) -> None:
    bot = open_bot()
    ticket = bot.open_ticket("wugang@example.com", body="E3001 同步失败").ticket_id
    bot.take_over(ticket, agent="小王")
    late = bot.submit(ticket, "人工客服在吗?")
    assert bot.work(threads=1, until_idle=True).rounds == 0  # not the bot's to answer
    assert bot.wait(ticket, late, timeout=1).outcome == "with_human"
    assert bot.stats().queued == 0 and [e.status for e in bot.queue()] == ["with_human"]
    answered = bot.hand_back(ticket, agent="小王")
    assert answered is not None and answered.outcome == "resolved"
    assert _queued(database_url) == [] and _agent_turns(database_url, ticket) == 2


def test_stopping_releases_tickets_claimed_ahead_without_running_them(
    open_bot: OpenBot, database_url: str
) -> None:
    # 8 threads claim one ticket ahead (an eighth). Every round waits in triage until released,
    # so 8 run and the 9th sits claimed in this process when the worker is told to stop.
    started, release = threading.Semaphore(0), threading.Event()

    def triage(_prompt: str) -> Triage:
        started.release()
        release.wait(timeout=30)
        return TECH

    bot = open_bot(llm=ScriptedLLM(triage=triage))
    tickets = [
        bot.open_ticket("wugang@example.com", body=f"问题 {i}", wait=False).ticket_id for i in range(9)
    ]
    stop = threading.Event()
    worker = threading.Thread(target=bot.work, kwargs={"threads": 8, "stop": stop})
    worker.start()
    try:
        for _ in range(8):
            assert started.acquire(timeout=20)
        leased = "SELECT count(*) FROM supportbot.tickets WHERE lease_owner IS NOT NULL"
        deadline = time.monotonic() + 10
        while rows(database_url, leased)[0][0] < 9:
            assert time.monotonic() < deadline, "the worker did not claim a ticket ahead"
            time.sleep(0.05)
        stop.set()
        # Given back while the 8 rounds still run: another worker could take it meanwhile.
        deadline = time.monotonic() + 10
        while rows(database_url, leased)[0][0] > 8:
            assert time.monotonic() < deadline, "the ticket claimed ahead stayed leased after the stop"
            time.sleep(0.05)
        assert worker.is_alive() and not any(_agent_turns(database_url, t) for t in tickets)
    finally:
        release.set()
        worker.join(timeout=30)
    assert not worker.is_alive()
    answered = [t for t in tickets if _agent_turns(database_url, t)]
    waiting = [t for t in tickets if t not in answered]
    assert len(answered) == 8 and len(waiting) == 1
    # Not run, not left leased: queued again for any worker at once, not after the lease expires.
    assert rows(database_url, leased)[0][0] == 0
    assert _queued(database_url) == [(waiting[0],)]
    assert bot.work(threads=1, until_idle=True).rounds == 1
    assert _agent_turns(database_url, waiting[0]) == 1
