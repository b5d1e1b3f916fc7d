"""AsyncSupportBot: the asyncio front end, on the real database (its behaviour is the synchronous
bot's: the behaviour suites run against both through ``open_bot``, see conftest.py)."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Coroutine, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

import psycopg
import pytest
from support.fakes import AsyncModel, ScriptedLLM, is_summary_request, rows, seed_business

from supportbot import AsyncSupportBot, Settings
from supportbot._aio import AsyncOpening
from supportbot.llm.base import Completion, Message

T = TypeVar("T")


def test_an_async_bot_opens_answers_and_remembers(database_url: str) -> None:
    with psycopg.connect(database_url) as conn:
        seed_business(conn)

    async def main() -> None:
        settings = Settings(database_url=database_url)
        async with AsyncSupportBot.open(
            database_url, llm=AsyncModel(ScriptedLLM()), backend="demo", settings=settings
        ) as bot:
            opened = await bot.open_ticket("lina@example.com", body="E3001 同步失败")
            assert opened.outcome == "resolved"
            again = await bot.send(opened.ticket_id, "还是不行")
            assert again.round == 2 and again.reply
            state = await bot.state(opened.ticket_id)
            assert [t.role for t in state.turns] == ["customer", "agent", "customer", "agent"]
            assert len(await bot.history(opened.ticket_id)) > 10

    run(main())


def run(coroutine: Coroutine[Any, Any, T]) -> T:
    """``asyncio.run`` on a thread of its own: once the browser tests started Playwright (a session
    fixture), its synchronous API keeps an event loop running on the main thread."""
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coroutine).result()


def _open(database_url: str, llm: object, **settings: object) -> AsyncOpening[AsyncSupportBot]:
    return AsyncSupportBot.open(
        database_url,
        llm=llm,  # type: ignore[arg-type]
        backend="demo",
        settings=Settings(database_url=database_url, **settings),  # type: ignore[arg-type]
    )


def test_200_sends_at_once_on_one_event_loop_overlap_their_model_waits(database_url: str) -> None:
    """200 rounds of three 300 ms model calls each, all in flight on one loop: they take a few
    round-lengths, not 200 of them, and no thread is started per call."""
    with psycopg.connect(database_url) as conn:
        seed_business(conn)
    threads_seen: list[int] = []

    async def count_threads(stop: asyncio.Event) -> None:
        while not stop.is_set():
            threads_seen.append(threading.active_count())
            await asyncio.sleep(0.05)

    async def main() -> tuple[float, list[str]]:
        model = AsyncModel(ScriptedLLM(), delay=0.3, threaded=False)
        async with _open(database_url, model, pool_max_size=20, pool_timeout=30) as bot:
            opened = await asyncio.gather(
                *(bot.open_ticket("lina@example.com", body=f"E3001 第{i}次", wait=False) for i in range(200))
            )
            stop = asyncio.Event()
            counter = asyncio.create_task(count_threads(stop))
            started = time.monotonic()
            results = await asyncio.gather(*(bot.send(o.ticket_id, "还是不行") for o in opened))
            elapsed = time.monotonic() - started
            stop.set()
            await counter
            return elapsed, [r.outcome for r in results]

    before = threading.active_count()
    elapsed, outcomes = run(main())
    assert outcomes == ["resolved"] * 200
    assert elapsed < 200 * 0.9 / 6, elapsed  # measured here: a few seconds
    assert max(threads_seen) <= before + 2  # the pool's own workers at most: none per call
    replies = rows(database_url, "SELECT count(*) FROM supportbot.turns WHERE role = 'agent'")
    assert replies == [(200,)]  # one reply per round: each ticket answered both messages at once


def test_the_task_worker_answers_what_was_submitted(database_url: str) -> None:
    with psycopg.connect(database_url) as conn:
        seed_business(conn)

    async def main() -> None:
        async with _open(database_url, AsyncModel(ScriptedLLM(), threaded=False), listen=False) as bot:
            submitted = [
                await bot.open_ticket("wugang@example.com", body=f"E3001 第{i}次", wait=False)
                for i in range(5)
            ]
            stats = await bot.work(threads=3, until_idle=True)
            assert stats.rounds == 5 and stats.failures == 0 and stats.running == 0
            for s in submitted:
                answered = await bot.wait(s.ticket_id, s, timeout=5)
                assert answered.outcome == "resolved" and answered.handled_upto == 1
            assert (await bot.stats()).queued == 0

    run(main())


class _Held:
    """A model whose draft waits until released: a round stopped mid-call."""

    def __init__(self) -> None:
        self.inner = ScriptedLLM()
        self.drafting = asyncio.Event()
        self.release = asyncio.Event()

    async def chat(self, messages: Sequence[Message], **kwargs: object) -> Completion:
        if kwargs.get("schema") is None and not is_summary_request(messages):
            self.drafting.set()
            await self.release.wait()
        answered: Completion = self.inner.chat(messages, **kwargs)  # type: ignore[arg-type]
        return answered


def test_a_round_cancelled_mid_call_is_like_a_crash_and_resumes(database_url: str) -> None:
    """Cancelling the task of a send() while its model answers: nothing half-written (no reply,
    the message stored), the ticket free again at once, and the next call finishes the round."""
    with psycopg.connect(database_url) as conn:
        seed_business(conn)

    async def main() -> None:
        model = _Held()
        async with _open(database_url, AsyncModel(ScriptedLLM(), threaded=False)) as bot:
            ticket = (await bot.open_ticket("lina@example.com", body="E3001 同步失败")).ticket_id
        async with _open(database_url, model) as bot:
            sending = asyncio.create_task(bot.send(ticket, "还是不行"))
            await asyncio.wait_for(model.drafting.wait(), 10)
            sending.cancel()
            with pytest.raises(asyncio.CancelledError):
                await sending
            state = await bot.state(ticket)
            assert [t.role for t in state.turns] == ["customer", "agent", "customer"]
            assert (await bot.ticket(ticket)).status != "resolved" or state.round == 1
            model.release.set()
            resumed = await bot.resume(ticket)
            assert resumed is not None and resumed.outcome == "resolved" and resumed.round == 2
            after = await bot.state(ticket)
            assert [t.role for t in after.turns] == ["customer", "agent", "customer", "agent"]

    run(main())
