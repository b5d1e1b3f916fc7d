"""supportbot against a real OpenAI-compatible server nobody here wrote: llama.cpp's server
(llama-cpp-python) with SmolLM2-135M-Instruct on one CPU thread (tests/support/model_server.py).

The model is far too small to answer well, so nothing here asserts what it says. What must hold
whatever it says: every round ends (resolved, waiting for approval or handed off) within the
documented bound; no amount, date or id that the records do not hold reaches the customer; no
refund is filed for an amount the customer did not ask; pinned facts survive compression; bad
JSON is repaired or handed off, never a crash; the tokens the server reports are recorded.

Settings for a one-thread CPU server (README, Configuration): answers capped at 96 tokens
(64 for the JSON ones), 17 s of model time per round. A round's bound is that plus the database:
ROUND_BOUND below.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from decimal import Decimal
from typing import Any

import psycopg
import pytest
from conftest import bot_settings
from support.model_server import MODEL, LlamaServer, ModelServer, model_server

from supportbot import Completion, RoundResult, SupportBot
from supportbot.backend.demo._data import demo_clock
from supportbot.llm._openai import OpenAICompatible
from supportbot.llm.offline import OfflineModel
from supportbot.reply._guardrails import draft_problems

ROUND_SECONDS = 17.0
ROUND_BOUND = 20.0  # the model's share (ROUND_SECONDS) plus the database and the steps
ENDED = {"resolved", "waiting_approval", "escalated"}

# Every round's figures, printed at the end of the module (the note reports them).
FIGURES: list[tuple[str, str, float, int, int, int]] = []


@pytest.fixture(scope="module")
def server() -> Iterator[ModelServer]:
    with model_server(context=2048) as running:
        yield running
    for name, outcome, seconds, calls, prompt, completion in FIGURES:
        print(
            f"real model: {name}: {outcome} in {seconds:.1f} s, {calls} calls, {prompt}+{completion} tokens"
        )


def _settings(url: str, server: ModelServer, **overrides: Any) -> Any:
    chosen: dict[str, Any] = {
        "llm_base_url": server.base_url,
        "llm_model": MODEL,
        "llm_timeout": ROUND_SECONDS,
        "llm_round_seconds": ROUND_SECONDS,
        "llm_max_tokens": 96,
        "llm_max_tokens_small": 64,
        "context_window": server.context,
    }
    return bot_settings(url, **{**chosen, **overrides})


@pytest.fixture
def open_real(demo_url: str, server: ModelServer) -> Iterator[Callable[..., SupportBot]]:
    """SupportBots on the demo data and the demo's day, talking to the real server."""
    bots: list[SupportBot] = []

    def make(*, small_llm: Any = None, **overrides: Any) -> SupportBot:
        server.wait_idle()  # not still busy with an earlier test's abandoned request
        bot = SupportBot.open(
            demo_url,
            small_llm=small_llm,
            settings=_settings(demo_url, server, **overrides),
            backend="demo",
            clock=demo_clock(),
        )
        bots.append(bot)
        return bot

    yield make
    for bot in bots:
        bot.close()


class RulesForJSON:
    """Triage and review by the offline model's rules, every free-text answer (draft, summary) by
    the real server: the refund path then runs whatever the small model would have triaged."""

    def __init__(self, real: Any) -> None:
        self.real, self.rules = real, OfflineModel()

    def chat(self, messages: Sequence[Any], *, schema: Any = None, temperature: float = 0.0) -> Completion:
        model = self.rules if schema is not None else self.real
        return model.chat(messages, schema=schema, temperature=temperature)


def _round(
    bot: SupportBot, name: str, call: Callable[[], RoundResult], *, decision: bool = False
) -> RoundResult:
    started = time.monotonic()
    result = call()
    took = time.monotonic() - started
    state = bot.state(result.ticket_id)
    spend = state.round_spend
    FIGURES.append((name, result.outcome, took, spend.calls, spend.prompt_tokens, spend.completion_tokens))
    assert result.outcome in ENDED, (name, result.outcome)
    assert took < ROUND_BOUND, f"{name}: the round took {took:.1f} s"
    _assert_reply_supported(bot, result, decision=decision)
    return result


def _assert_reply_supported(bot: SupportBot, result: RoundResult, *, decision: bool = False) -> None:
    """No amount, date, time limit or id in what the customer got that the ticket's records, the
    customer's messages and the articles do not hold (the rules the check applies, run again here
    on what was actually sent, over everything the ticket ever showed the model)."""
    if not result.reply:
        return
    state = bot.state(result.ticket_id)
    evidence = "\n".join(
        [
            state.ticket.customer_email,
            state.ticket.subject,
            state.ticket.body,
            state.profile,
            state.findings,
            *(f"{h.id} {h.title}:{h.body}" for h in state.hits),
            *(t.content for t in state.turns),
            *(f.value for f in state.facts),
            *(str(call.result) for call in state.tool_log),
        ]
    )
    problems = [
        p
        for p in draft_problems(
            result.reply, known_articles={h.id for h in state.hits}, evidence=evidence, cite=False
        )
        if not p.startswith(("草稿过长", "草稿作出"))  # style, not facts: the check's to judge
        # after a person's decision the reply says it (the system's own notice): that is the truth
        and not (decision and p.startswith("草稿声称退款已批准"))
    ]
    assert problems == [], (result.reply, problems)


def _refunds(url: str, ticket: str) -> list[tuple[Decimal, str]]:
    with psycopg.connect(url) as conn:
        return conn.execute(
            "SELECT amount, status FROM demo.refunds WHERE ticket_id = %s ORDER BY created_at", (ticket,)
        ).fetchall()


@pytest.mark.parametrize(
    ("language", "opening", "follow_up"),
    [
        ("zh", "招商银行的流水又同步失败了,提示 E3001,怎么办?", "重新授权了还是不行,昨天下午又失败了一次"),
        (
            "en",
            "My bank feed stopped syncing, it shows error E3001. What should I do?",
            "Re-authorised, still failing since yesterday.",
        ),
    ],
)
def test_a_ticket_opens_and_follows_up_within_the_bound(
    open_real: Callable[..., SupportBot], language: str, opening: str, follow_up: str
) -> None:
    bot = open_real()
    first = _round(bot, f"{language} open", lambda: bot.open_ticket("wugang@example.com", body=opening))
    spent = bot.state(first.ticket_id).round_spend
    assert spent.calls >= 1 and spent.prompt_tokens > 0 and spent.completion_tokens > 0  # the server's usage
    second = _round(bot, f"{language} follow-up", lambda: bot.send(first.ticket_id, follow_up))
    state = bot.state(second.ticket_id)
    assert [t.role for t in state.turns] == ["customer", "agent", "customer", "agent"]  # each one answered


@pytest.mark.parametrize(
    ("language", "ask", "amount"),
    [
        ("zh", "重新授权了还是不行,另外这个年付我想申请退款两百块", Decimal("200.00")),
        (
            "en",
            "Still broken after re-authorising. I'd like a refund of 200 yuan on my annual plan.",
            Decimal("200.00"),
        ),
    ],
)
@pytest.mark.parametrize("triage", ["real model", "rules"])
def test_a_refund_is_filed_for_the_amount_asked_or_not_at_all(
    open_real: Callable[..., SupportBot],
    demo_url: str,
    server: ModelServer,
    language: str,
    ask: str,
    amount: Decimal,
    triage: str,
    request: pytest.FixtureRequest,
) -> None:
    small = None
    if triage == "rules":
        real_small = OpenAICompatible.from_settings(_settings(demo_url, server), small=True)
        request.addfinalizer(real_small.close)
        small = RulesForJSON(real_small)
    bot = open_real(small_llm=small)
    asked = _round(
        bot, f"{language} refund ask ({triage})", lambda: bot.open_ticket("wugang@example.com", body=ask)
    )
    opened = asked
    filed = _refunds(demo_url, opened.ticket_id)
    assert all(a == amount for a, _ in filed), filed  # never the invoice's full amount, never invented
    if triage == "rules":  # the rules read the request: it is filed, whatever the draft then does
        assert [a for a, _ in filed] == [amount], filed
    if asked.outcome != "waiting_approval":
        assert all(status != "approved" for _, status in filed)
        return
    assert filed == [(amount, "pending")]
    decided = _round(
        bot,
        f"{language} refund approve ({triage})",
        lambda: bot.approve(opened.ticket_id, approver="值班主管"),
        decision=True,
    )
    assert decided.outcome == "resolved"
    assert _refunds(demo_url, opened.ticket_id) == [(amount, "approved")]
    assert re.search(r"200(\.00)?", decided.reply or ""), decided.reply  # the customer is told the amount


def test_a_long_ticket_is_compressed_and_its_facts_survive(open_real: Callable[..., SupportBot]) -> None:
    bot = open_real(history_budget=400, keep_last=2)
    exact = ["INV-C0001-20251103", "13800001234", "2026-10-09", "4417"]
    messages = [
        "招商银行流水同步失败 E3001,账单 INV-C0001-20251103",
        "我的手机号 13800001234,有事请打这个电话",
        "上次同步成功是 2026-10-09,银行卡尾号 4417 的那个账户",
        "重新授权了还是不行,换了浏览器也一样",
    ]
    opened = _round(bot, "compress 1", lambda: bot.open_ticket("wugang@example.com", body=messages[0]))
    for n, message in enumerate(messages[1:], 2):
        _round(bot, f"compress {n}", lambda m=message: bot.send(opened.ticket_id, m))  # type: ignore[misc]
    state = bot.state(opened.ticket_id)
    assert state.summarized_upto > 0, "nothing was folded"
    pinned = " ".join(f.value for f in state.facts)
    assert all(value in pinned for value in exact), (exact, pinned)


def test_a_prompt_over_the_servers_window_shrinks_and_is_retried(
    open_real: Callable[..., SupportBot], caplog: pytest.LogCaptureFixture
) -> None:
    """The settings claim a window four times the server's: the server answers HTTP 400
    (context length), the step shrinks its prompt and tries once more."""
    bot = open_real(context_window=8192, history_budget=3000, keep_last=40)
    long_message = (
        "同步失败的详细情况:" + "每天早上九点自动同步,招商银行的账户提示 E3001,重新授权后依旧失败。" * 40
    )
    opened = _round(
        bot, "over the window 1", lambda: bot.open_ticket("wugang@example.com", body=long_message)
    )
    _round(bot, "over the window 2", lambda: bot.send(opened.ticket_id, long_message))
    assert "over the server's window; shrinking" in caplog.text


def test_a_worker_waits_out_the_server_going_down_and_answers_every_ticket_after(demo_url: str) -> None:
    """The real server stopped mid-run: within the grace time nothing goes to people and the
    tickets wait in the queue; started again on the same port, every ticket gets its answer."""
    server = LlamaServer(context=2048)
    running = server.start()
    settings = _settings(
        demo_url, running, model_outage_grace=120.0, worker_retry_seconds=0.5, worker_sweep_seconds=0.5
    )
    stop = threading.Event()
    stats: list[Any] = []
    try:
        with SupportBot.open(demo_url, settings=settings, backend="demo", clock=demo_clock()) as bot:
            worker = threading.Thread(target=lambda: stats.append(bot.work(threads=1, stop=stop)))
            worker.start()
            try:
                server.stop()
                queued = [
                    bot.open_ticket(email, body="招商银行流水同步失败,提示 E3001", wait=False)
                    for email in ("wugang@example.com", "lina@example.com")
                ]
                time.sleep(6.0)  # the worker meets a refused connection, and waits
                assert _count(demo_url, "SELECT count(*) FROM demo.escalations") == 0
                assert all(
                    e.attempts == 0 for e in bot.queue()
                )  # counted against the worker, not the tickets
                server.start()
                answered = [bot.wait(q.ticket_id, q, timeout=120) for q in queued]
            finally:
                stop.set()
                worker.join(60)
    finally:
        server.stop()
    for result in answered:
        assert result.outcome in ENDED, result
        _assert_reply_supported_by_ticket(demo_url, result)
    assert stats and stats[0].deferred >= 1, stats  # it gave rounds back while the server was down


def _count(url: str, query: str) -> int:
    with psycopg.connect(url) as conn:
        row = conn.execute(query).fetchone()
    assert row is not None
    return int(row[0])


def _assert_reply_supported_by_ticket(url: str, result: RoundResult) -> None:
    with SupportBot.open(url, llm=OfflineModel(), backend="demo") as reader:
        _assert_reply_supported(reader, result)
