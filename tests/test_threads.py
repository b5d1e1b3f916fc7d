"""One SupportBot shared by many threads: no lock-up, no error, and a full pool says so in time."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import psycopg
import pytest
from conftest import VIA_PGBOUNCER, bot_settings
from psycopg.conninfo import make_conninfo
from support.fakes import ScriptedLLM, cite_hits, rows, seed_business
from support.parts import bot_over_store

from supportbot import OfflineModel, SupportBot
from supportbot.errors import StoreBusy

EMAILS = ["wugang@example.com", "lina@example.com", "chenjing@example.com", "liuyang@example.com"]
# The second message makes the round look the account up (list_subscriptions, list_invoices),
# which the demo backend reads inside the transaction of the step that acts.
MESSAGES = ["招商银行流水同步失败,提示 E3001", "我的订阅什么时候续费?账单金额是多少?", "好的,谢谢"]


@pytest.fixture
def bot(demo_url: str) -> Iterator[SupportBot]:
    model = OfflineModel()
    bot = SupportBot.open(
        demo_url, llm=model, small_llm=model, settings=bot_settings(demo_url), backend="demo"
    )
    yield bot
    bot.close()


def _conversation(bot: SupportBot, n: int) -> list[str]:
    first = bot.open_ticket(EMAILS[n % len(EMAILS)], subject="", body=MESSAGES[0])
    outcomes: list[str] = [first.outcome]
    for message in MESSAGES[1:]:
        outcomes.append(bot.send(first.ticket_id, message, message_id=f"{n}-{message[:4]}").outcome)
    return outcomes


def test_sixteen_threads_share_one_bot_at_default_settings(bot: SupportBot, demo_url: str) -> None:
    """The issue's workload: 200 tickets x 3 rounds on 16 threads, with the default pool of 4.

    A round that held a connection for its length while the backend waited for a second one
    locked this up with as few as 4 threads."""
    assert bot.settings.pool_max_size == 4
    with ThreadPoolExecutor(max_workers=16) as threads:
        outcomes = list(threads.map(lambda n: _conversation(bot, n), range(200)))
    assert all(o in ("resolved", "escalated") for per_ticket in outcomes for o in per_ticket), outcomes
    assert rows(demo_url, "SELECT count(*) FROM supportbot.tickets") == [(200,)]
    assert (
        rows(demo_url, "SELECT count(*) FROM supportbot.turns GROUP BY ticket_id HAVING count(*) <> 6") == []
    )
    assert rows(demo_url, "SELECT count(*) FROM supportbot.steps WHERE step = 'start_round'") == [(600,)]
    # The account lookups ran (inside the acting step's transaction) in every second round.
    looked_up = rows(
        demo_url,
        "SELECT count(DISTINCT ticket_id) FROM supportbot.tool_calls WHERE name = 'list_invoices'",
    )
    assert looked_up == [(200,)]


def test_a_thread_gets_its_own_connection_again_instead_of_waiting_for_a_second(demo_url: str) -> None:
    with (
        bot_over_store(demo_url, llm=OfflineModel(), settings=bot_settings(demo_url)) as (_, store, _),
        store.connection() as held,
        store.pool.connection() as again,
        store.transaction() as tx,
    ):
        assert held is again is tx


def test_keep_shares_the_first_connection_taken_and_takes_none_unasked(demo_url: str) -> None:
    settings = bot_settings(demo_url, pool_max_size=1, pool_timeout=0.3)
    with bot_over_store(demo_url, llm=OfflineModel(), settings=settings) as (_, store, _):
        taken = store.pool.get_stats().get("requests_num", 0)
        with store.keep_connection():
            pass
        assert store.pool.get_stats().get("requests_num", 0) == taken  # no call, no connection

        others: list[BaseException | None] = []

        def another_thread() -> None:
            try:
                with store.connection():
                    others.append(None)
            except StoreBusy as exc:
                others.append(exc)

        with store.keep_connection():
            with store.connection() as first:
                pass
            # Given back after its block, it would serve the other thread: kept, it does not.
            other = threading.Thread(target=another_thread)
            other.start()
            other.join()
            with store.connection() as second, store.transaction() as tx:
                assert first is second is tx
        assert isinstance(others[0], StoreBusy)
        other = threading.Thread(target=another_thread)
        other.start()
        other.join()
        assert others[1] is None  # back in the pool once the block ends


def test_a_pool_of_one_serves_many_threads(demo_url: str) -> None:
    model = OfflineModel()
    settings = bot_settings(demo_url, pool_max_size=1)
    with (
        SupportBot.open(demo_url, llm=model, small_llm=model, settings=settings, backend="demo") as bot,
        ThreadPoolExecutor(max_workers=6) as threads,
    ):
        outcomes = list(threads.map(lambda n: _conversation(bot, n), range(12)))
    assert all(o in ("resolved", "escalated") for per_ticket in outcomes for o in per_ticket), outcomes


def test_an_exhausted_pool_raises_store_busy_within_its_timeout(demo_url: str) -> None:
    settings = bot_settings(demo_url, pool_max_size=1, pool_timeout=0.3)
    with bot_over_store(demo_url, llm=OfflineModel(), settings=settings) as (bot, store, _):
        taken, done = threading.Event(), threading.Event()

        def hold() -> None:
            with store.connection():
                taken.set()
                done.wait(30)

        holder = threading.Thread(target=hold)
        holder.start()
        try:
            taken.wait(10)
            started = time.monotonic()
            with pytest.raises(StoreBusy, match="SUPPORTBOT_POOL_MAX_SIZE") as raised:
                bot.tickets()
            waited = time.monotonic() - started
        finally:
            done.set()
            holder.join()
        # Without a pool timeout the call would wait for the holder (30 s here).
        assert waited < 5, waited
        assert raised.value.__cause__ is not None
        assert bot.tickets() == []  # and the pool serves again once the connection is back


class PeekingLLM(ScriptedLLM):
    """While answering, asks another thread to use the pool's only connection: it can only if
    the round waiting on this model holds none."""

    def __init__(self) -> None:
        super().__init__(draft=cite_hits)
        self.bot: SupportBot | None = None
        self.peeks: list[str] = []

    def chat(self, messages: Any, **kw: Any) -> Any:
        assert self.bot is not None
        bot = self.bot

        def peek() -> None:
            try:
                bot.pending_approvals()
                self.peeks.append("free")
            except StoreBusy:
                self.peeks.append("held")

        other = threading.Thread(target=peek)
        other.start()
        other.join()
        return super().chat(messages, **kw)


def test_a_round_holds_no_connection_while_it_waits_on_the_model(database_url: str) -> None:
    with psycopg.connect(database_url) as conn:
        seed_business(conn)
    llm = PeekingLLM()
    settings = bot_settings(database_url, pool_max_size=1, pool_timeout=0.5)
    with SupportBot.open(database_url, llm=llm, settings=settings, backend="demo") as bot:
        llm.bot = bot
        result = bot.open_ticket("wugang@example.com", body="E3001 同步失败")
        assert result.outcome == "resolved"
    assert len(llm.peeks) >= 3 and set(llm.peeks) == {"free"}, llm.peeks


def test_a_round_takes_the_pool_once_to_start_and_once_to_reply(
    demo_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Up to the first model call a round reads only the database (the lease, new turns, and the
    demo backend's customer, subscriptions and past tickets): one checkout for all of it, then
    one for the reply's transaction. Every checkout is a wait in the pool's queue when many
    rounds share a small pool."""
    parts = bot_over_store(demo_url, llm=ScriptedLLM(draft=cite_hits), settings=bot_settings(demo_url))
    with parts as (bot, store, _):
        ticket = bot.open_ticket("wugang@example.com", body="E3001 同步失败").ticket_id
        pool = store.pool
        taken: list[str] = []
        getconn = pool.getconn

        def counting(*args: Any, **kwargs: Any) -> Any:
            taken.append(threading.current_thread().name)
            return getconn(*args, **kwargs)

        monkeypatch.setattr(pool, "getconn", counting)
        assert bot.send(ticket, "还是不行").outcome == "resolved"
        monkeypatch.undo()
    assert len(taken) == 3, taken  # the message, the round's start, the reply


def test_pooled_connections_start_with_the_limits_and_keep_the_urls_options(database_url: str) -> None:
    """Connected directly, the statement and lock-wait limits are the session's from the start
    (no statement per transaction), beside the options given in the URL. Behind PgBouncer, whose
    sessions pass from client to client, each transaction sets them (SET LOCAL) instead."""
    url = database_url if VIA_PGBOUNCER else make_conninfo(database_url, options="-c work_mem=7MB")
    with bot_over_store(url, settings=bot_settings(url, db_timeout=3.0)) as (_, store, _):
        with store.transaction() as tx:
            in_transaction = [tx.execute(f"SHOW {name}").fetchone() for name in _LIMITS]
        with store.connection() as conn:
            in_session = [conn.execute(f"SHOW {name}").fetchone() for name in (*_LIMITS, "work_mem")]
    assert in_transaction == [("3s",), ("3s",)]
    if not VIA_PGBOUNCER:
        assert in_session == [("3s",), ("3s",), ("7MB",)]


_LIMITS = ("statement_timeout", "lock_timeout")
