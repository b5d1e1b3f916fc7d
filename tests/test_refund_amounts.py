"""A refund is filed for the amount the customer wrote, in any form; anything less certain is
asked back, and nothing unreadable reaches the business system (the real engine, the demo
business system, PostgreSQL)."""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from decimal import Decimal
from typing import Any

import psycopg
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.fakes import rows
from support.money_forms import written

from supportbot import Completion, OfflineModel, Settings, SupportBot

SUNLI = "sunli@example.com"  # one paid annual invoice, 3460.21 CNY refundable on the demo day
SUNLI_REFUNDABLE = Decimal("3460.21")
WUGANG = "wugang@example.com"  # many paid invoices
OpenBot = Callable[[], SupportBot]


@pytest.fixture
def bot(demo_url: str) -> Iterator[SupportBot]:
    model = OfflineModel()
    with SupportBot.open(
        demo_url, llm=model, small_llm=model, settings=Settings(database_url=demo_url), backend="demo"
    ) as opened:
        yield opened


def _forget_refunds(url: str) -> None:
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("DELETE FROM demo.refunds")


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.integers(0, 2**32), st.sampled_from(["zh", "en"]))
def test_a_filed_refund_never_exceeds_what_the_text_asked(
    bot: SupportBot, demo_url: str, seed: int, language: str
) -> None:
    _forget_refunds(demo_url)
    rng = random.Random(seed)
    text, currency, value = written(rng, language=language)
    body = (
        f"年付买错了,申请退款 {text}"
        if language == "zh"
        else f"I bought the annual plan by mistake, refund {text}"
    )
    result = bot.open_ticket(SUNLI, subject="refund", body=body)
    filed = rows(demo_url, "SELECT amount, currency FROM demo.refunds")
    if currency in ("CNY", None) and value <= SUNLI_REFUNDABLE:
        assert result.outcome == "waiting_approval", body
        assert filed == [(value.quantize(Decimal("0.01")), "CNY")], body
    else:  # more than refundable, or another currency than the invoice's: nothing filed
        assert result.outcome == "resolved" and filed == [], body


def test_an_amount_in_another_currency_is_asked_back(bot: SupportBot, demo_url: str) -> None:
    result = bot.open_ticket(
        SUNLI, subject="refund", body="I bought the annual plan by mistake, refund me 37 bucks"
    )
    assert result.outcome == "resolved"
    assert "No refund has been requested yet" in result.reply and "(37 bucks)" in result.reply
    assert "up to 3460.21 CNY" in result.reply
    assert rows(demo_url, "SELECT count(*) FROM demo.refunds") == [(0,)]


def test_two_amounts_are_asked_back_then_the_confirmed_one_is_filed(bot: SupportBot, demo_url: str) -> None:
    first = bot.open_ticket(SUNLI, subject="退款", body="年付买错了,申请退款 200 元,不行的话 300 元也可以")
    assert first.outcome == "resolved"
    assert "退款申请尚未提交" in first.reply and "200 元、300 元" in first.reply
    assert rows(demo_url, "SELECT count(*) FROM demo.refunds") == [(0,)]
    confirmed = bot.send(first.ticket_id, "那就申请退款两百块吧")
    assert confirmed.outcome == "waiting_approval"
    assert rows(demo_url, "SELECT amount FROM demo.refunds") == [(Decimal("200.00"),)]
    (pending,) = bot.pending_approvals()
    assert pending.request["refund_request"]["asked"] == "两百块"


def test_a_bare_number_is_asked_back(bot: SupportBot, demo_url: str) -> None:
    result = bot.open_ticket(SUNLI, subject="退款", body="年付买错了,申请退款 200")
    assert result.outcome == "resolved" and "(200)不能确定" in result.reply
    assert rows(demo_url, "SELECT count(*) FROM demo.refunds") == [(0,)]


def test_no_amount_with_several_paid_invoices_asks_which(bot: SupportBot, demo_url: str) -> None:
    result = bot.open_ticket(WUGANG, subject="退款", body="不想用了,申请退款")
    assert result.outcome == "resolved" and "退款申请尚未提交" in result.reply
    assert "名下有 12 张已支付账单" in result.reply and "需要确认要退哪一张" in result.reply
    assert result.reply.count("INV-C0001-") == 3  # the latest three, not all twelve
    assert rows(demo_url, "SELECT count(*) FROM demo.refunds") == [(0,)]


@pytest.mark.parametrize("digits", [16, 28, 400])
def test_an_absurd_amount_is_refused_in_the_reply_and_the_ticket_goes_on(
    bot: SupportBot, demo_url: str, digits: int
) -> None:
    body = f"申请退款 {'9' * digits} 元"
    result = bot.open_ticket(SUNLI, subject="退款", body=body)
    assert result.outcome == "resolved" and "无效" in result.reply and "不能受理" in result.reply
    assert rows(demo_url, "SELECT count(*) FROM demo.refunds") == [(0,)]
    after = bot.send(result.ticket_id, "那申请退款 100 元")
    assert after.outcome == "waiting_approval"
    assert rows(demo_url, "SELECT amount FROM demo.refunds") == [(Decimal("100.00"),)]


def test_the_approver_sees_the_customer_s_words_next_to_the_amount(bot: SupportBot) -> None:
    result = bot.open_ticket(SUNLI, subject="退款", body="年付刚买了两周,用不上,申请退款贰佰元")
    assert result.outcome == "waiting_approval"
    (pending,) = bot.pending_approvals()
    refund = pending.request["refund_request"]
    assert (refund["amount"], refund["asked"]) == ("200.00", "贰佰元")
    assert "贰佰元" in refund["reason"]


class _DraftsAnAmountNoRecordHolds(OfflineModel):
    def chat(self, messages: Any, *, schema: Any = None, temperature: float = 0.0) -> Completion:
        if schema is None:
            return Completion(text="我们会退您 999 元 [KB-refund-001]。")
        return super().chat(messages, schema=schema, temperature=temperature)


@pytest.mark.parametrize(
    ("language", "body", "says"),
    [
        ("zh", "年付买错了,申请退款 200 元", "退款申请 R000001(200.00 CNY)已提交,待人工在业务系统中决定"),
        (
            "en",
            "I bought the annual plan by mistake, refund 200 yuan",
            "Refund request R000001 (200.00 CNY) is filed",
        ),
    ],
)
def test_a_refund_filed_in_a_round_that_hands_off_is_named_in_the_hand_off(
    demo_url: str, language: str, body: str, says: str
) -> None:
    """A draft that keeps failing review hands the ticket to a person after act() filed the
    refund: the request waits in the business system, and the reason the host's escalate() gets
    (and the audit trail keeps) says so, so the person knows a decision is owed."""
    with SupportBot.open(demo_url, llm=_DraftsAnAmountNoRecordHolds(), backend="demo") as bot:
        result = bot.open_ticket(SUNLI, subject="refund", body=body)
        state = bot.state(result.ticket_id)
    assert result.outcome == "escalated"
    assert rows(demo_url, "SELECT amount, status FROM demo.refunds") == [(Decimal("200.00"), "pending")]
    assert says in state.handoff_reason
    assert rows(demo_url, "SELECT reason FROM demo.escalations")[0][0] == state.handoff_reason
