"""Model faults end to end: a real OpenAI-compatible server on loopback, the real client, the
engine and PostgreSQL. Whatever the model does, ``send()`` returns, the round ends in a handoff
with a reason a person can act on, and the customer's words and earlier turns stay.

Clients get a 0.3 s timeout, one retry and a no-op sleep, so a timeout costs 0.6 s and nothing
waits out a backoff.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from typing import Any

import psycopg
import pytest
from support.fakes import rows
from support.openai_server import Reply, ScriptedServer, completion, error

from supportbot import Settings, SupportBot
from supportbot._state import Review, Triage
from supportbot.backend.demo import load_demo_data
from supportbot.llm._openai import OpenAICompatible

KEY = "sk-loopback-SECRET-42"
BANK_SYNC = "招商银行流水同步失败,提示 E3001"
TRIAGE = Triage(
    category="technical",
    needs_account_data=False,
    needs_human=False,
    summary="银行同步失败",
    search_query="E3001 银行流水同步失败",
).model_dump_json()
DRAFT = "您好,E3001 表示银行授权已过期,请重新授权 [KB-bank-001]。"
PASSED = Review(passed=True).model_dump_json()
PRICES = {"big": (2.0, 8.0), "small": (0.5, 1.0)}
OpenBot = Callable[..., SupportBot]


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    with ScriptedServer() as s:
        yield s


@pytest.fixture
def open_bot(database_url: str, server: ScriptedServer) -> Iterator[OpenBot]:
    with psycopg.connect(database_url) as conn:
        load_demo_data(conn)
    opened: list[Any] = []

    def make(**settings: Any) -> SupportBot:
        common: dict[str, Any] = {
            "base_url": server.url,
            "api_key": KEY,
            "timeout": 0.3,
            "max_retries": 1,
            "backoff": 0.0,
            "sleep": lambda seconds: None,
            "prices": PRICES,
        }
        big, small = OpenAICompatible(model="big", **common), OpenAICompatible(model="small", **common)
        bot = SupportBot.open(
            database_url,
            llm=big,
            small_llm=small,
            settings=Settings(database_url=database_url, **settings),
            backend="demo",
        )
        opened.extend([bot, big, small])
        return bot

    yield make
    for thing in opened:
        thing.close()


def assert_handed_off(bot: SupportBot, url: str, ticket_id: str, *, step: str, because: str) -> str:
    state = bot.state(ticket_id)
    assert state.outcome == "escalated"
    assert state.handoff_reason.startswith(f"模型调用失败({step})") and because in state.handoff_reason
    assert "人工" in state.reply and because not in state.reply  # the customer is not shown the fault
    [(reason,)] = rows(url, "SELECT reason FROM demo.escalations WHERE ticket_id = %s", ticket_id)
    assert reason == state.handoff_reason
    return state.handoff_reason


def test_a_healthy_endpoint_resolves_and_every_call_is_priced(
    open_bot: OpenBot, server: ScriptedServer
) -> None:
    server.script(
        completion(TRIAGE, prompt_tokens=1000, completion_tokens=100, model="small"),
        completion(DRAFT, prompt_tokens=2000, completion_tokens=300, model="big"),
        completion(PASSED, prompt_tokens=1000, completion_tokens=20, model="small"),
    )
    bot = open_bot()
    result = bot.open_ticket("wugang@example.com", subject="银行流水", body=BANK_SYNC)

    assert (
        result.outcome == "resolved"
        and "[KB-bank-001](https://help.example.com/kb/KB-bank-001)" in result.reply
    )
    assert [r.body["model"] for r in server.requests] == ["small", "big", "small"]
    assert [("response_format" in r.body) for r in server.requests] == [True, False, True]
    state = bot.state(result.ticket_id)
    expected = (1000 * 0.5 + 100 * 1.0 + 2000 * 2.0 + 300 * 8.0 + 1000 * 0.5 + 20 * 1.0) / 1e6
    assert state.round_spend.calls == 3 and state.round_spend.total_tokens == 4420
    assert state.round_spend.cost == pytest.approx(expected) and state.cost == pytest.approx(expected)


def test_classify_timing_out_hands_off(open_bot: OpenBot, server: ScriptedServer, database_url: str) -> None:
    server.script(Reply(delay=2.0, json={}), Reply(delay=2.0, json={}))
    bot = open_bot()
    result = bot.open_ticket("wugang@example.com", subject="银行流水", body=BANK_SYNC)

    # A caller waits: handed off at once, and the request the server may still work on is not re-sent.
    assert result.outcome == "escalated" and len(server.requests) == 1
    reason = assert_handed_off(
        bot, database_url, result.ticket_id, step="classify", because="no answer within 0.3s"
    )
    assert "not sent again" in reason
    assert next(t.content for t in bot.state(result.ticket_id).turns) == BANK_SYNC


def test_draft_failing_with_5xx_beyond_retries_hands_off(
    open_bot: OpenBot, server: ScriptedServer, database_url: str
) -> None:
    server.script(completion(TRIAGE), error(503, "overloaded"), error(502, "bad gateway"))
    bot = open_bot()
    result = bot.open_ticket("wugang@example.com", subject="银行流水", body=BANK_SYNC)
    assert result.outcome == "escalated"
    assert_handed_off(bot, database_url, result.ticket_id, step="draft", because="HTTP 502")
    state = bot.state(result.ticket_id)
    assert state.triage is not None and state.round_spend.calls == 1  # the triage that worked is kept


def test_malformed_json_twice_hands_off(open_bot: OpenBot, server: ScriptedServer, database_url: str) -> None:
    server.script(completion('{"category": "technical", '), completion("sorry, I cannot answer in JSON"))
    bot = open_bot()
    result = bot.open_ticket("wugang@example.com", subject="银行流水", body=BANK_SYNC)
    assert_handed_off(
        bot, database_url, result.ticket_id, step="classify", because="does not match Triage twice"
    )
    repair = server.requests[1].body["messages"]
    assert repair[-1]["role"] == "user" and "Invalid JSON" in repair[-1]["content"]


def test_malformed_json_once_is_repaired_and_the_round_goes_on(
    open_bot: OpenBot, server: ScriptedServer
) -> None:
    server.script(
        completion('{"category": "technical"'), completion(TRIAGE), completion(DRAFT), completion(PASSED)
    )
    result = open_bot().open_ticket("wugang@example.com", subject="银行流水", body=BANK_SYNC)
    assert result.outcome == "resolved" and len(server.requests) == 4


def test_review_invalid_against_its_schema_twice_hands_off(
    open_bot: OpenBot, server: ScriptedServer, database_url: str
) -> None:
    server.script(
        completion(TRIAGE),
        completion(DRAFT),
        completion('{"passed": "perhaps"}'),
        completion('{"verdict": "fine"}'),
    )
    bot = open_bot()
    result = bot.open_ticket("wugang@example.com", subject="银行流水", body=BANK_SYNC)
    assert_handed_off(
        bot, database_url, result.ticket_id, step="check", because="does not match Review twice"
    )
    assert bot.state(result.ticket_id).draft == DRAFT


@pytest.mark.parametrize("status", [400, 401, 404])
def test_a_rejected_request_hands_off_without_retrying(
    open_bot: OpenBot, server: ScriptedServer, database_url: str, status: int
) -> None:
    server.script(error(status, f"rejected, key {KEY}"))
    bot = open_bot()
    result = bot.open_ticket("wugang@example.com", subject="银行流水", body=BANK_SYNC)
    assert len(server.requests) == 1
    assert_handed_off(bot, database_url, result.ticket_id, step="classify", because=f"HTTP {status}")


def test_a_fault_in_a_later_round_keeps_every_earlier_turn(
    open_bot: OpenBot, server: ScriptedServer, database_url: str
) -> None:
    server.script(completion(TRIAGE), completion(DRAFT), completion(PASSED))
    bot = open_bot()
    first = bot.open_ticket("wugang@example.com", subject="银行流水", body=BANK_SYNC)
    server.script(error(500, "boom"), error(500, "boom again"))

    second = bot.send(first.ticket_id, "重新授权了还是不行", message_id="m-2")  # does not raise

    assert (first.outcome, second.outcome, second.round) == ("resolved", "escalated", 2)
    state = bot.state(first.ticket_id)
    assert [(t.role, t.content) for t in state.turns][:3] == [
        ("customer", BANK_SYNC),
        ("agent", first.reply),
        ("customer", "重新授权了还是不行"),
    ]
    assert state.turns[3].role == "agent" and state.turns[3].content == second.reply
    assert_handed_off(bot, database_url, first.ticket_id, step="classify", because="HTTP 500")
    # The next message, with the model back, is a normal round that still sees the whole story.
    server.script(completion(TRIAGE), completion(DRAFT), completion(PASSED))
    third = bot.send(first.ticket_id, "现在好了吗?")
    assert third.outcome == "resolved" and third.round == 3
    latest_prompt = server.requests[-3].body["messages"][-1]["content"]
    assert BANK_SYNC in latest_prompt and "重新授权了还是不行" in latest_prompt


def test_the_api_key_reaches_no_state_row_or_reply(
    open_bot: OpenBot, server: ScriptedServer, database_url: str
) -> None:
    server.script(error(503, f"upstream said Bearer {KEY}"), error(401, f"bad key {KEY}"))
    bot = open_bot()
    result = bot.open_ticket("wugang@example.com", subject="银行流水", body=BANK_SYNC)
    assert result.outcome == "escalated" and "***" in bot.state(result.ticket_id).handoff_reason
    stored = rows(
        database_url, "SELECT coalesce(string_agg(s.update::text, ''), '') FROM supportbot.steps s"
    )[0][0]
    stored += json.dumps(rows(database_url, "SELECT reason FROM demo.escalations"))
    assert KEY not in stored and KEY not in result.reply


def test_prices_from_settings_reach_the_client(database_url: str, server: ScriptedServer) -> None:
    with psycopg.connect(database_url) as conn:
        load_demo_data(conn)
    env = {
        "SUPPORTBOT_LLM_BASE_URL": server.url,
        "SUPPORTBOT_LLM_MODEL": "big",
        "SUPPORTBOT_LLM_SMALL_MODEL": "small",
        "SUPPORTBOT_LLM_PRICES": "big=2/8, small=0.5/1",
        "SUPPORTBOT_LLM_TIMEOUT": "0.5",
        "SUPPORTBOT_LLM_MAX_RETRIES": "0",
    }
    settings = Settings.from_env(env, database_url=database_url)
    assert settings.llm_prices == PRICES and settings.llm_max_retries == 0
    server.script(
        completion(TRIAGE, prompt_tokens=1_000_000, completion_tokens=0),
        completion(DRAFT, prompt_tokens=0, completion_tokens=1_000_000),
        completion(PASSED, prompt_tokens=0, completion_tokens=0),
    )
    with SupportBot.open(database_url, settings=settings, backend="demo") as bot:
        result = bot.open_ticket("wugang@example.com", subject="银行流水", body=BANK_SYNC)
        assert result.outcome == "resolved"
        assert bot.state(result.ticket_id).round_spend.cost == pytest.approx(0.5 + 8.0)


def test_a_billed_failure_counts_in_the_rounds_spend(open_bot: OpenBot, server: ScriptedServer) -> None:
    server.script(
        completion(TRIAGE, prompt_tokens=0, completion_tokens=0),
        completion(DRAFT, prompt_tokens=0, completion_tokens=0),
        completion('{"passed": ', prompt_tokens=100, completion_tokens=5),
        completion('{"passed": "perhaps"}', prompt_tokens=120, completion_tokens=6),
    )
    bot = open_bot()
    result = bot.open_ticket("wugang@example.com", subject="银行流水", body=BANK_SYNC)
    state = bot.state(result.ticket_id)
    assert result.outcome == "escalated"
    # Triage and draft cost nothing here; the review failed twice but both answers were billed.
    spent = state.round_spend
    assert spent.calls == 3 and spent.prompt_tokens == 220 and spent.completion_tokens == 11
    assert spent.cost == pytest.approx((220 * 0.5 + 11 * 1.0) / 1e6) == pytest.approx(state.cost)


def test_a_context_length_error_shrinks_the_prompt_and_sends_it_once_more(
    open_bot: OpenBot, server: ScriptedServer
) -> None:
    too_long = "This model's maximum context length is 2048 tokens (context_length_exceeded)"
    server.script(completion(TRIAGE), error(400, too_long), completion(DRAFT), completion(PASSED))
    bot = open_bot()
    result = bot.open_ticket("wugang@example.com", subject="银行流水", body=BANK_SYNC)

    assert result.outcome == "resolved" and len(server.requests) == 4
    refused, sent = (json.dumps(r.body["messages"], ensure_ascii=False) for r in server.requests[1:3])
    assert len(sent) < len(refused)  # down the ladder: fewer articles, shorter findings
    usage = bot.state(result.ticket_id).context_usage
    assert (
        usage["total"] <= usage["budget"] < 16_000
    )  # the prompt that was sent, fitted to the smaller budget


def test_a_second_context_length_error_hands_off(
    open_bot: OpenBot, server: ScriptedServer, database_url: str
) -> None:
    too_long = "the request exceeds the available context size (n_ctx 512)"
    server.script(completion(TRIAGE), error(400, too_long), error(400, too_long))
    bot = open_bot()
    result = bot.open_ticket("wugang@example.com", subject="银行流水", body=BANK_SYNC)
    assert result.outcome == "escalated" and len(server.requests) == 3
    assert_handed_off(bot, database_url, result.ticket_id, step="draft", because="n_ctx 512")


def test_a_round_out_of_model_time_hands_off(
    open_bot: OpenBot, server: ScriptedServer, database_url: str
) -> None:
    slow_triage = Reply(json=completion(TRIAGE).json, delay=0.15)
    server.script(slow_triage, Reply(json=completion(DRAFT).json, delay=1.0))
    bot = open_bot(llm_round_seconds=0.25)
    started = time.monotonic()
    result = bot.open_ticket("wugang@example.com", subject="银行流水", body=BANK_SYNC)
    assert time.monotonic() - started < 1.0  # the draft's wait was cut at the round's bound
    assert result.outcome == "escalated" and len(server.requests) == 2
    assert_handed_off(
        bot, database_url, result.ticket_id, step="draft", because="SUPPORTBOT_LLM_ROUND_SECONDS"
    )
