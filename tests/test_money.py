"""Money: the refund policy, the database's money invariants, and approvals racing across tickets.

The policy is a pure function (backend/demo/_refund_policy.py); the invariants live in the database
(sql/010_refund_invariants.sql), so they hold for every writer, two approvals at once included.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from datetime import date, timedelta
from decimal import Decimal
from typing import Any

import psycopg
import pytest
from hypothesis import given
from hypothesis import strategies as st
from support.fakes import present, rows

from supportbot import OfflineModel, RoundResult, Settings, SupportBot
from supportbot.backend.demo._data import INVOICES, PAST_TICKETS
from supportbot.backend.demo._refund_policy import REFUND_WINDOW_DAYS, entitlement
from supportbot.reply._findings import basis_text

SUNLI = "sunli@example.com"  # 专业版年付 3588.00, paid 2026-10-02: 13 of 365 days used on the demo day
SUNLI_INVOICE = "INV-C0006-20261002"
SUNLI_REFUNDABLE = "3460.21"  # 3588.00 × 352 / 365
OpenBot = Callable[[], SupportBot]


@pytest.fixture
def open_bot(demo_url: str) -> Iterator[OpenBot]:
    bots: list[SupportBot] = []

    def make() -> SupportBot:
        model = OfflineModel()
        bot = SupportBot.open(
            demo_url, llm=model, small_llm=model, settings=Settings(database_url=demo_url), backend="demo"
        )
        bots.append(bot)
        return bot

    yield make
    for bot in bots:
        bot.close()


# -- the policy, a pure function ----------------------------------------------------------------


def _annual(paid_on: date, as_of: date, paid: str = "3588.00") -> Any:
    return entitlement(
        invoice_id="INV-1", paid=Decimal(paid), paid_on=paid_on, billing_cycle="年付", as_of=as_of
    )


def test_the_policy_reproduces_the_pro_rata_refund_of_the_demo_history() -> None:
    (past,) = [t for t in PAST_TICKETS if t.facts.get("category") == "refund"]
    (invoice,) = [i for i in INVOICES if i.id in past.facts["ids"]]
    assert past.resolved_on is not None
    quoted = _annual(invoice.issued_on, past.resolved_on)
    assert str(quoted.amount) == past.facts["amounts"][1] == "3558.51"
    assert quoted.basis.kind == "pro_rata"
    assert basis_text(quoted.basis, "zh") == (
        "账单 INV-1 于 2026-01-10 实付 3588.00 元,年付按 365 天计,至 2026-01-13 已使用 3 天,"
        "按未使用的 362 天折算可退 3558.51 元。"
    )


def test_the_window_its_edges_and_the_cycles_it_covers() -> None:
    paid_on = date(2026, 10, 2)
    assert _annual(paid_on, paid_on).amount == Decimal("3588.00")  # the day of payment: everything
    assert _annual(paid_on, paid_on - timedelta(days=3)).amount == Decimal("3588.00")  # clock behind
    last = _annual(paid_on, paid_on + timedelta(days=REFUND_WINDOW_DAYS))
    assert last.amount == Decimal("3293.10")  # 3588 × 335 / 365
    late = _annual(paid_on, paid_on + timedelta(days=REFUND_WINDOW_DAYS + 1))
    assert late.amount == 0 and late.basis.kind == "window_passed"
    assert late.basis.values["days"] == "31" and late.basis.values["window"] == "30"
    monthly = entitlement(
        invoice_id="INV-2", paid=Decimal("349.00"), paid_on=paid_on, billing_cycle="月付", as_of=paid_on
    )
    assert monthly.amount == 0 and monthly.basis.kind == "not_annual"
    leap = _annual(date(2027, 3, 1), date(2027, 3, 11), paid="3660.00")  # the paid year has 366 days
    assert leap.amount == Decimal("3560.00") and leap.basis.values["period"] == "366"
    assert _annual(date(2028, 2, 29), date(2028, 3, 1)).basis.values["period"] == "365"


@given(
    paid=st.decimals(min_value=Decimal("0.01"), max_value=Decimal("99999.99"), places=2),
    paid_on=st.dates(min_value=date(2020, 1, 1), max_value=date(2030, 12, 31)),
    offset=st.integers(min_value=-5, max_value=400),
)
def test_a_refund_is_whole_cents_never_more_than_paid_and_never_grows_with_time(
    paid: Decimal, paid_on: date, offset: int
) -> None:
    """A quote above what was paid, in fractions of a cent, or larger a day later would let a
    customer get more than the policy allows by waiting or by rounding."""
    as_of = paid_on + timedelta(days=offset)
    today = _annual(paid_on, as_of, paid=str(paid)).amount
    tomorrow = _annual(paid_on, as_of + timedelta(days=1), paid=str(paid)).amount
    assert Decimal(0) <= tomorrow <= today <= paid
    assert today == today.quantize(Decimal("0.01"))
    assert (today == 0) == (offset > REFUND_WINDOW_DAYS)  # paid >= 0.01 keeps the last day above 0


# -- the database's own checks ------------------------------------------------------------------


def test_the_database_refuses_refunds_past_what_was_paid(demo_url: str) -> None:
    insert = (
        "INSERT INTO demo.refunds"
        " (id, ticket_id, customer_id, invoice_id, amount, currency, reason, request_key)"
        " VALUES (%s, 'T1', 'C0006', %s, %s, 'CNY', '', %s)"
    )
    with psycopg.connect(demo_url, autocommit=True) as conn:
        for amount, constraint in [("0.001", "refunds_amount_check"), ("3588.01", "refund_within_paid")]:
            with pytest.raises(psycopg.errors.CheckViolation) as caught:
                conn.execute(insert, ("RX", SUNLI_INVOICE, Decimal(amount), f"k-{amount}"))
            assert caught.value.diag.constraint_name == constraint
        for n in (1, 2):  # two pending requests may add up past what was paid; approvals may not
            conn.execute(insert, (f"R{n}", SUNLI_INVOICE, Decimal("2000.00"), f"k{n}"))
        conn.execute("UPDATE demo.refunds SET status = 'approved' WHERE id = 'R1'")
        with pytest.raises(psycopg.errors.CheckViolation) as caught:
            conn.execute("UPDATE demo.refunds SET status = 'approved' WHERE id = 'R2'")
        assert caught.value.diag.constraint_name == "refunds_within_paid"
        with pytest.raises(psycopg.errors.CheckViolation):
            conn.execute("UPDATE demo.invoices SET amount = 1999.99 WHERE id = %s", (SUNLI_INVOICE,))
    assert rows(demo_url, "SELECT id, status FROM demo.refunds ORDER BY id") == [
        ("R1", "approved"),
        ("R2", "pending"),
    ]


# -- requests follow the policy -----------------------------------------------------------------


def test_a_refund_below_a_cent_is_refused_and_the_ticket_is_not_stuck(
    open_bot: OpenBot, demo_url: str
) -> None:
    bot = open_bot()
    first = bot.open_ticket(SUNLI, subject="退款", body="想申请退款 0.001 元")
    assert first.outcome == "resolved"
    assert "「0.001 元」无效" in first.reply and "至少 0.01 元" in first.reply and "不能受理" in first.reply
    assert bot.resume(first.ticket_id) is None  # nothing left to run, nothing raises
    cents = bot.send(first.ticket_id, "那申请退款 10.005 元")
    assert cents.outcome == "resolved" and "最多两位小数" in cents.reply
    assert rows(demo_url, "SELECT count(*) FROM demo.refunds") == [(0,)]
    valid = bot.send(first.ticket_id, "那申请退款 100 元")
    assert valid.outcome == "waiting_approval"
    assert rows(demo_url, "SELECT amount, status FROM demo.refunds") == [(Decimal("100.00"), "pending")]


def test_outside_the_window_or_on_a_monthly_plan_nothing_is_refunded_and_the_reply_says_why(
    open_bot: OpenBot, demo_url: str
) -> None:
    bot = open_bot()
    late = bot.open_ticket("zhoujie@example.com", subject="退款", body="企业版年付不想用了,申请退款 100 元")
    assert late.outcome == "resolved"
    assert "INV-C0007-20260301 于 2026-03-01 实付 9588.00 元,至 2026-10-15 已过 228 天" in late.reply
    assert "超过付款后 30 天的退款期限" in late.reply and "不能受理" in late.reply
    monthly = bot.open_ticket("chenjing@example.com", subject="退款", body="申请退款 129 元")
    assert monthly.outcome == "resolved" and "只有年付套餐可以退款" in monthly.reply
    assert rows(demo_url, "SELECT count(*) FROM demo.refunds") == [(0,)]


def test_a_request_without_an_amount_asks_for_the_pro_rata_amount_and_the_reply_states_the_decision(
    open_bot: OpenBot, demo_url: str
) -> None:
    bot = open_bot()
    paused = bot.open_ticket(SUNLI, subject="退款", body="年付买错了,我想申请退款")
    assert paused.outcome == "waiting_approval"
    assert rows(demo_url, "SELECT amount FROM demo.refunds") == [(Decimal(SUNLI_REFUNDABLE),)]
    done = bot.approve(paused.ticket_id, approver="王经理", note="30 天内")
    assert done.approved is True
    assert f"至 2026-10-15 已使用 13 天,按未使用的 352 天折算可退 {SUNLI_REFUNDABLE} 元" in done.reply
    assert f"您的退款申请 R000001({SUNLI_REFUNDABLE} CNY)已审批通过" in done.reply
    assert "审批" not in done.reply.replace("已审批通过", "").replace("人工审核", "")  # no pending request
    assert rows(demo_url, "SELECT status, decided_by FROM demo.refunds") == [("approved", "王经理")]


def test_an_english_request_gets_the_computation_and_the_decision_in_english(open_bot: OpenBot) -> None:
    bot = open_bot()
    paused = bot.open_ticket(
        SUNLI, subject="refund", body="I bought the annual plan by mistake, I would like a refund"
    )
    done = bot.reject(paused.ticket_id, approver="王经理", note="duplicate account")
    assert "13 of its 365 days were used by 2026-10-15" in done.reply
    assert "was not approved. Reason: duplicate account" in done.reply and "waiting" not in done.reply


def test_what_another_ticket_requested_is_not_refundable_again(open_bot: OpenBot, demo_url: str) -> None:
    bot = open_bot()
    first = bot.open_ticket(SUNLI, subject="退款", body="年付买错了,申请退款 3000 元")
    second = bot.open_ticket(SUNLI, subject="退款", body="另外再申请退款 1000 元")
    assert first.outcome == "waiting_approval" and second.outcome == "resolved"
    assert "此前的退款申请合计 3000.00 元(含待审批的),尚可申请 460.21 元" in second.reply
    assert "申请的 1000.00 元超过账单 INV-C0006-20261002 可退的 460.21 元" in second.reply
    assert rows(demo_url, "SELECT count(*) FROM demo.refunds") == [(1,)]


# -- two approvals racing -----------------------------------------------------------------------


def _wait_for_waiters(url: str, query_start: str, count: int) -> None:
    """Until ``count`` sessions wait for a lock while running a statement that starts so."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        waiting = rows(
            url,
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
            " AND wait_event_type = 'Lock' AND query LIKE %s",
            query_start + "%",
        )[0][0]
        if waiting >= count:
            return
        time.sleep(0.05)
    raise AssertionError(f"{count} sessions never waited on {query_start!r}")


def _together(*calls: Callable[[], RoundResult]) -> list[RoundResult]:
    results: list[Any] = [None] * len(calls)

    def run(i: int) -> None:
        try:
            results[i] = calls[i]()
        except Exception as exc:  # noqa: BLE001 -- handed to the test thread, which raises it
            results[i] = exc

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(calls))]
    for thread in threads:
        thread.start()
    return [*_joined(threads, results)]


def _joined(threads: list[threading.Thread], results: list[Any]) -> Iterator[RoundResult]:
    for thread in threads:
        thread.join(timeout=120)
    for result in results:
        if isinstance(result, Exception):
            raise result
        yield result


def _two_racing_requests(open_bot: OpenBot, demo_url: str) -> tuple[SupportBot, SupportBot, list[str]]:
    """Two tickets of 孙丽, each asking for 2000.00 of her 3588.00 invoice, filed at the same time:
    each quote sees no other request, so both are filed (4000.00 in requests on 3588.00 paid)."""
    first, second = open_bot(), open_bot()  # two workers: each has its own connections
    with psycopg.connect(demo_url) as blocker:
        blocker.execute("LOCK TABLE demo.refunds IN SHARE MODE")  # both inserts wait after quoting
        ask = "年付买错了,申请退款 2000 元"
        threads_done: list[RoundResult] = []
        racing = threading.Thread(
            target=lambda: threads_done.extend(
                _together(
                    lambda: first.open_ticket(SUNLI, subject="退款", body=ask),
                    lambda: second.open_ticket(SUNLI, subject="退款", body=ask),
                )
            )
        )
        racing.start()
        _wait_for_waiters(demo_url, "INSERT INTO demo.refunds", 2)
        blocker.rollback()
    racing.join(timeout=120)
    assert [r.outcome for r in threads_done] == ["waiting_approval", "waiting_approval"]
    assert rows(demo_url, "SELECT amount, status FROM demo.refunds") == [(Decimal("2000.00"), "pending")] * 2
    return first, second, [r.ticket_id for r in threads_done]


def test_two_approvals_at_once_approve_one_refund_and_reject_the_other_with_the_reason(
    open_bot: OpenBot, demo_url: str
) -> None:
    first, second, (one, two) = _two_racing_requests(open_bot, demo_url)
    with psycopg.connect(demo_url) as blocker:
        # Both decisions start and wait on the invoice row; neither has committed when both read.
        blocker.execute("SELECT 1 FROM demo.invoices WHERE id = %s FOR UPDATE", (SUNLI_INVOICE,))
        decided: list[RoundResult] = []
        racing = threading.Thread(
            target=lambda: decided.extend(
                _together(
                    lambda: first.approve(one, approver="王经理"),
                    lambda: second.approve(two, approver="李主管"),
                )
            )
        )
        racing.start()
        _wait_for_waiters(demo_url, "SELECT r.amount, r.currency, i.id, i.amount FROM demo.refunds", 2)
        blocker.rollback()
    racing.join(timeout=120)

    assert sorted(present(r.approved) for r in decided) == [False, True]
    (won,) = [r for r in decided if r.approved]
    (lost,) = [r for r in decided if r.approved is False]
    reason = (
        "账单 INV-C0006-20261002 实付 3588.00 CNY,已批准退款 2000.00 CNY,"
        "剩余可退 1588.00 CNY,不足本次的 2000.00 CNY"
    )
    assert lost.decision_note == reason  # what the approver is told
    assert "未通过审批" in lost.reply and reason in lost.reply  # and the customer
    assert "已审批通过" in won.reply and "未通过审批" not in won.reply
    assert sorted(rows(demo_url, "SELECT status, decision_note FROM demo.refunds")) == [
        ("approved", ""),
        ("rejected", reason),
    ]
    assert sorted(rows(demo_url, "SELECT approved, note FROM supportbot.approvals")) == [
        (False, reason),
        (True, ""),
    ]
    assert rows(demo_url, "SELECT sum(amount) FROM demo.refunds WHERE status = 'approved'") == [
        (Decimal("2000.00"),)
    ]
    for bot, ticket in ((first, one), (second, two)):
        refund = bot.state(ticket).refund_request
        assert refund is not None and refund.status == ("approved" if ticket == won.ticket_id else "rejected")


def test_the_cli_tells_the_approver_that_an_approval_became_a_rejection(
    open_bot: OpenBot, demo_url: str
) -> None:
    first, _, (one, two) = _two_racing_requests(open_bot, demo_url)
    assert first.approve(one, approver="王经理").approved is True
    argv = [
        sys.executable,
        "-m",
        "supportbot",
        "approve",
        two,
        "--yes",
        "--by",
        "李主管",
        "--database-url",
        demo_url,
    ]
    env = {k: v for k, v in os.environ.items() if not k.startswith("SUPPORTBOT_")} | {
        "SUPPORTBOT_LANG": "zh",
        "SUPPORTBOT_BACKEND": "demo",
    }
    proc = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    assert "未能批准工单" in proc.stdout and "已批准工单" not in proc.stdout
    assert "已记为驳回(审批人 李主管):账单 INV-C0006-20261002 实付 3588.00 CNY" in proc.stdout
    assert "未通过审批" in proc.stdout
