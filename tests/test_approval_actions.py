"""A reviewer's three actions on a pending refund: approve (as asked, or less: an edited approval),
reject, and respond with a note to the agent without deciding. Each is audited; money moves only
through a decision, and the database refuses an approved amount above what was asked."""

from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal

import psycopg
import pytest
from support.fakes import REFUND, ScriptedLLM, latest_part, rows

from supportbot import OfflineModel, SupportBot
from supportbot.errors import AmountRefused, ApprovalNotPending, RespondRefused, WrongType

OpenBot = Callable[..., SupportBot]
ASKED = "年付不想用了,申请退款 200 元"


def _paused(bot: SupportBot) -> str:
    paused = bot.open_ticket("wugang@example.com", subject="退款", body=ASKED)
    assert paused.outcome == "waiting_approval", paused
    return paused.ticket_id


def _refund(url: str) -> tuple[Decimal, Decimal, str]:
    ((amount, requested, status),) = rows(url, "SELECT amount, requested, status FROM demo.refunds")
    return amount, requested, status


def test_an_approver_approves_less_than_was_asked_and_the_customer_is_told_both(
    open_bot: OpenBot, database_url: str
) -> None:
    bot = open_bot(ScriptedLLM(triage=REFUND, draft="您好 [KB-refund-001]。"))
    ticket = _paused(bot)
    done = bot.approve(ticket, approver="王经理", note="只退未使用部分", amount=Decimal("150.00"))
    assert done.outcome == "resolved" and done.approved is True
    assert "批准金额 150.00 CNY" in done.reply and "申请 200.00 CNY" in done.reply
    assert _refund(database_url) == (Decimal("150.00"), Decimal("200.00"), "approved")
    assert rows(database_url, "SELECT approved, amount FROM supportbot.approvals") == [
        (True, Decimal("150.00"))
    ]
    (entry,) = bot.audit(ticket)
    assert entry.action == "approve" and entry.actor == "王经理"
    assert entry.detail["amount"] == "200.00" and entry.detail["approved_amount"] == "150.00"


def test_an_approval_for_more_than_was_asked_is_refused_before_anything_is_written(
    open_bot: OpenBot, database_url: str
) -> None:
    bot = open_bot(ScriptedLLM(triage=REFUND, draft="您好 [KB-refund-001]。"))
    ticket = _paused(bot)
    before = bot.history(ticket)
    with pytest.raises(AmountRefused) as refused:
        bot.approve(ticket, approver="王经理", amount=Decimal("200.01"))
    assert refused.value.details["asked"] == "200.00"
    for wrong in (Decimal("0"), Decimal("1.005"), Decimal("NaN"), Decimal("-5")):
        with pytest.raises(AmountRefused):
            bot.approve(ticket, approver="王经理", amount=wrong)
    with pytest.raises(WrongType, match="Decimal"):
        bot.approve(ticket, approver="王经理", amount=150.0)  # type: ignore[arg-type]
    assert bot.history(ticket) == before and bot.audit(ticket) == []
    assert _refund(database_url) == (Decimal("200.00"), Decimal("200.00"), "pending")
    assert bot.ticket(ticket).status == "waiting_approval"
    # The same amount as asked is an approval as asked.
    assert bot.approve(ticket, approver="王经理", amount=Decimal("200")).outcome == "resolved"
    assert _refund(database_url)[0] == Decimal("200.00")


def test_the_database_refuses_an_approved_amount_above_the_request(demo_url: str) -> None:
    with psycopg.connect(demo_url) as conn:
        invoice, customer = conn.execute(
            "SELECT id, customer_id FROM demo.invoices WHERE status = 'paid' AND amount > 300 LIMIT 1"
        ).fetchone() or ("", "")
        conn.execute(
            "INSERT INTO demo.refunds (id, ticket_id, customer_id, invoice_id, amount, requested, currency,"
            " reason, request_key) VALUES ('R900001', 'T1', %s, %s, 100, 100, 'CNY', 'test', 'k1')",
            (customer, invoice),
        )
        for change in (
            "UPDATE demo.refunds SET status = 'approved', amount = 100.01 WHERE id = 'R900001'",
            "UPDATE demo.refunds SET amount = 50 WHERE id = 'R900001'",  # pending: as asked, always
        ):
            with pytest.raises(psycopg.errors.CheckViolation), conn.transaction():
                conn.execute(change)
        conn.execute("UPDATE demo.refunds SET status = 'approved', amount = 60 WHERE id = 'R900001'")


def test_a_reviewer_responds_and_the_agent_asks_the_customer_without_deciding(
    open_bot: OpenBot, database_url: str
) -> None:
    bot = open_bot(llm=OfflineModel())
    ticket = _paused(bot)
    answered = bot.respond(ticket, "请提供需要退款的账单号", by="王经理")
    assert answered.outcome == "waiting_approval" and answered.approved is None
    assert "请提供需要退款的账单号" in answered.reply and "审核中" in answered.reply
    state = bot.state(ticket)
    assert [t.role for t in state.turns] == ["customer", "agent"] and state.reply == answered.reply
    assert bot.ticket(ticket).status == "waiting_approval"
    assert [p.ticket_id for p in bot.pending_approvals()] == [ticket]
    assert _refund(database_url)[2] == "pending"  # nothing was decided
    steps = [r.step for r in bot.history(ticket)]
    assert steps[-2:] == ["reviewer_note", "respond"]

    bot.send(ticket, "账单号是 INV-C0001-20261003")  # the customer answers; the refund still waits
    done = bot.approve(ticket, approver="王经理")
    assert done.outcome == "resolved" and "审批通过" in done.reply
    actions = [(e.action, e.actor) for e in bot.audit(ticket)]
    assert actions == [("respond", "王经理"), ("approve", "王经理")]
    assert bot.audit(ticket)[0].detail["note"] == "请提供需要退款的账单号"


def test_a_response_whose_answer_fails_the_checks_is_neither_sent_nor_recorded(open_bot: OpenBot) -> None:
    def draft(prompt: str) -> str:
        if "审核同事的留言" in prompt:
            return "好的,已为您批准退款,款项三天内到账。"  # claims a decision: never sent
        return "您好 [KB-refund-001]。"

    bot = open_bot(ScriptedLLM(triage=REFUND, draft=draft))
    ticket = _paused(bot)
    before = bot.history(ticket)
    with pytest.raises(RespondRefused) as refused:
        bot.respond(ticket, "直接告诉他批了", by="王经理")
    assert refused.value.details["problems"]
    assert bot.history(ticket) == before and bot.audit(ticket) == []
    assert [t.role for t in bot.state(ticket).turns] == ["customer"]
    assert bot.ticket(ticket).status == "waiting_approval"


def test_respond_on_a_ticket_that_does_not_wait_is_refused(open_bot: OpenBot) -> None:
    bot = open_bot(ScriptedLLM(draft=lambda prompt: "您好 [KB-bank-001]。" if latest_part(prompt) else ""))
    ticket = bot.open_ticket("wugang@example.com", body="E3001 同步失败").ticket_id
    with pytest.raises(ApprovalNotPending):
        bot.respond(ticket, "请提供账单号", by="王经理")
