"""The engine through the public API, on a real PostgreSQL, with a scripted model."""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Callable

import psycopg
import pytest
from conftest import bot_settings
from pydantic import BaseModel
from support.fakes import HUMAN, REFUND, ScriptedLLM, cite_hits, present, refund_if_asked, scalar

from supportbot import RoundResult, Submitted, SupportBot
from supportbot._state import Review
from supportbot.errors import (
    ApprovalNotPending,
    EmptyMessage,
    InvalidEmail,
    InvalidInput,
    MessageTooLong,
    ModelError,
    UnknownStep,
    UnknownTicket,
)

OpenBot = Callable[..., SupportBot]


def _count(database_url: str, query: str, *params: object) -> int:
    with psycopg.connect(database_url) as conn:
        return int(scalar(conn, query, params))


def test_second_round_knows_the_first(open_bot: OpenBot) -> None:
    llm = ScriptedLLM()
    bot = open_bot(llm)
    first = bot.open_ticket("wugang@example.com", subject="银行流水", body="银行流水又同步失败了,提示 E3001")
    second = bot.send(first.ticket_id, "重新授权了还是不行")

    state = bot.state(first.ticket_id)
    assert [t.role for t in state.turns] == ["customer", "agent", "customer", "agent"]
    assert (first.round, second.round, state.round) == (1, 2, 2)
    assert second.outcome == "resolved" and second.reply == state.turns[-1].content
    last_prompt = llm.user_prompts()[-1]
    assert "银行流水又同步失败了" in last_prompt
    assert last_prompt.rstrip().endswith("客户最新消息:重新授权了还是不行")


def test_round_fields_do_not_leak_into_the_next_round(open_bot: OpenBot) -> None:
    verdicts = iter([Review(passed=False, problems=["语气生硬"]), Review(passed=True)])
    llm = ScriptedLLM(review=lambda prompt: next(verdicts, Review(passed=True)))
    bot = open_bot(llm)
    ticket = bot.open_ticket("wugang@example.com", body="E3001 又出现了").ticket_id
    assert bot.state(ticket).revisions == 2
    bot.send(ticket, "好的谢谢")
    state = bot.state(ticket)
    assert state.revisions == 1 and state.review == Review(passed=True)
    assert not any("语气生硬" in p for p in llm.user_prompts()[-3:])


def test_tickets_are_isolated(open_bot: OpenBot) -> None:
    llm = ScriptedLLM()
    bot = open_bot(llm)
    a = bot.open_ticket("wugang@example.com", subject="A", body="账单号 INV-A-111 的问题").ticket_id
    llm.prompts.clear()
    b = bot.open_ticket("lina@example.com", subject="B", body="发票抬头写错了").ticket_id
    assert all("INV-A-111" not in p and "wugang" not in p for p in llm.user_prompts())
    state_b = bot.state(b)
    assert all("INV-A-111" not in t.content for t in state_b.turns)
    assert {c.args.get("email") for c in state_b.tool_log if "email" in c.args} == {"lina@example.com"}
    assert a != b


def test_history_and_time_travel_rebuild_every_step_exactly(open_bot: OpenBot) -> None:
    seen: list[object] = []

    bot = open_bot(ScriptedLLM())
    ticket = bot.open_ticket("wugang@example.com", subject="x", body="E3001 同步失败").ticket_id
    seen.append(bot.state(ticket))
    bot.send(ticket, "还是不行")
    records = bot.history(ticket)
    assert [r.seq for r in records] == list(range(1, len(records) + 1))
    assert records[0].step == "start_round" and records[-1].next_step is None
    assert bot.state_at(ticket, records[-1].seq) == bot.state(ticket)
    first_round_end = max(r.seq for r in records if r.round == 1)
    assert bot.state_at(ticket, first_round_end) == seen[0]
    for record in records:
        state = bot.state_at(ticket, record.seq)
        assert state.round == record.round
    with pytest.raises(UnknownStep):
        bot.state_at(ticket, 999)


def test_history_grows_by_one_record_per_step(open_bot: OpenBot) -> None:
    bot = open_bot()
    ticket = bot.open_ticket("wugang@example.com", subject="x", body="E3001").ticket_id
    n = len(bot.history(ticket))
    bot.send(ticket, "还有一个问题")
    steps = [r.step for r in bot.history(ticket)][n:]
    assert steps == [
        "start_round",
        "load_customer",
        "prepare_context",
        "classify",
        "retrieve",
        "draft",
        "check",
        "finalize",
    ]


def test_nothing_is_stored_twice(open_bot: OpenBot, database_url: str) -> None:
    bot = open_bot(ScriptedLLM(triage=refund_if_asked, draft=cite_hits, cost=0.5))
    ticket = bot.open_ticket("wugang@example.com", subject="x", body="E3001 同步失败").ticket_id
    bot.send(ticket, "我要申请退款 100 元")
    (waiting,) = bot.pending_approvals()
    assert waiting.request["refund_request"]["amount"] == "100.00"  # read through the tool call it refers to
    stored = _count(
        database_url, "SELECT count(*) FROM supportbot.approvals WHERE request -> 'refund_request' ? '$tool'"
    )
    assert stored == 1
    done = bot.approve(ticket, approver="王经理")
    with psycopg.connect(database_url) as conn:
        rows = {
            (r, step): update
            for r, step, update in conn.execute(
                "SELECT round, step, update FROM supportbot.steps WHERE ticket_id = %s", (ticket,)
            )
        }
        checkpoints = conn.execute(
            "SELECT s.step FROM supportbot.checkpoints k JOIN supportbot.steps s"
            " USING (ticket_id, seq) WHERE ticket_id = %s",
            (ticket,),
        ).fetchall()
    assert checkpoints == [("prepare_context",), ("prepare_context",)]  # one per round
    assert rows[(2, "prepare_context")] == {}  # its checkpoint is the state after it
    assert all("reply" not in update for update in rows.values())  # the agent turn is the reply
    # What a tool returned as is refers to its tool_calls row instead of a second copy.
    assert set(rows[(2, "load_customer")]["customer"]) == set(rows[(2, "retrieve")]["hits"]) == {"$tool"}
    # The backend's request, referred to, plus the customer's own words for its amount.
    assert rows[(2, "act")]["refund_request"]["$patch"] == {"asked": "100 元"}
    assert set(rows[(2, "act")]["refund_request"]) == {"$tool", "$patch"}
    # Each step keeps its own spend ([calls, prompt, completion, cost]); the state adds them up.
    assert rows[(2, "draft")]["round_spend"][0] == 1 and rows[(2, "draft")]["cost"] == 0.5
    state = bot.state(ticket)
    assert state.reply == done.reply == state.turns[-1].content
    assert state.round_spend.calls == 3 and state.cost == pytest.approx(0.5 * 6)
    assert bot.state_at(ticket, max(r.seq for r in bot.history(ticket))) == state
    assert state.customer is not None and state.customer.id == "C9001" and state.refund_request is not None


def test_state_is_served_from_memory_only_while_it_is_the_latest(
    open_bot: OpenBot, database_url: str
) -> None:
    one, two = open_bot(), open_bot()  # two workers on one database, each with its own copies
    ticket = one.open_ticket("wugang@example.com", subject="x", body="E3001 同步失败").ticket_id
    assert one.state(ticket) is one.state(ticket)  # nothing recorded since: this process's copy
    two.send(ticket, "还是不行")
    seen = one.state(ticket)
    assert seen.round == 2 and seen == two.state(ticket) and len(seen.turns) == 4
    with psycopg.connect(database_url) as conn:  # the row's latest step is the steps table's
        assert scalar(
            conn,
            "SELECT last_seq = (SELECT max(seq) FROM supportbot.steps WHERE ticket_id = id)"
            " FROM supportbot.tickets WHERE id = %s",
            (ticket,),
        )


def test_fork_copies_history_up_to_a_step_and_diverges(open_bot: OpenBot) -> None:
    bot = open_bot()
    ticket = bot.open_ticket("wugang@example.com", subject="x", body="E3001").ticket_id
    bot.send(ticket, "第二轮")
    cut = max(r.seq for r in bot.history(ticket) if r.round == 1)
    fork = bot.fork(ticket, cut)
    assert fork != ticket
    assert [r.step for r in bot.history(fork)] == [r.step for r in bot.history(ticket)][:cut]
    forked = bot.state(fork)
    assert forked.ticket.id == fork
    assert dataclasses.replace(forked, ticket=bot.state(ticket).ticket) == bot.state_at(ticket, cut)
    bot.send(fork, "分叉后的新问题")
    assert [t.content for t in bot.state(fork).turns][2] == "分叉后的新问题"
    assert [t.content for t in bot.state(ticket).turns][2] == "第二轮"


def test_refund_waits_for_approval_and_is_applied_once(open_bot: OpenBot, database_url: str) -> None:
    bot = open_bot(ScriptedLLM(triage=REFUND, draft="您好,已为您提交退款申请 [KB-refund-001]。"))
    paused = bot.open_ticket("wugang@example.com", subject="退款", body="年付不想用了,申请退款 100 元")
    assert paused.outcome == "waiting_approval" and paused.reply == ""
    assert [p.ticket_id for p in bot.pending_approvals()] == [paused.ticket_id]
    assert present(bot.state(paused.ticket_id).refund_request).status == "pending"

    done = bot.approve(paused.ticket_id, approver="王经理", note="符合政策")
    assert done.outcome == "resolved" and "审批通过" in done.reply
    assert bot.pending_approvals() == []
    with pytest.raises(ApprovalNotPending, match="not waiting"):
        bot.reject(paused.ticket_id, approver="王经理")
    assert _count(database_url, "SELECT count(*) FROM demo.refunds WHERE status = 'approved'") == 1
    assert _count(database_url, "SELECT count(*) FROM supportbot.effects WHERE kind = 'refund_decision'") == 1


def test_rejected_refund_is_told_to_the_customer(open_bot: OpenBot) -> None:
    bot = open_bot(ScriptedLLM(triage=REFUND, draft="您好 [KB-refund-001]。"))
    ticket = bot.open_ticket("wugang@example.com", subject="退款", body="申请退款 50 元").ticket_id
    done = bot.reject(ticket, approver="王经理", note="已超过 30 天")
    assert "未通过审批" in done.reply and "已超过 30 天" in done.reply


def test_message_during_approval_is_queued_then_answered(open_bot: OpenBot) -> None:
    bot = open_bot(ScriptedLLM(triage=refund_if_asked, draft="您好 [KB-refund-001]。"))
    ticket = bot.open_ticket("wugang@example.com", subject="退款", body="申请退款 50 元").ticket_id
    queued = bot.send(ticket, "请问多久能审批?")
    assert queued.outcome == "queued"
    bot.approve(ticket, approver="王经理")
    state = bot.state(ticket)
    assert state.round == 2
    assert [t.role for t in state.turns] == ["customer", "customer", "agent", "agent"]
    assert present(state.latest_customer_message).content == "请问多久能审批?"


def test_needs_human_hands_off_with_a_record(open_bot: OpenBot, database_url: str) -> None:
    bot = open_bot(ScriptedLLM(triage=HUMAN))
    result = bot.open_ticket("lina@example.com", subject="投诉", body="我要投诉,转人工")
    assert result.outcome == "escalated" and "人工" in result.reply
    assert (
        _count(database_url, "SELECT count(*) FROM demo.escalations WHERE ticket_id = %s", result.ticket_id)
        == 1
    )


def test_model_fault_hands_off_and_keeps_the_message(open_bot: OpenBot) -> None:
    class Broken(ScriptedLLM):
        def before(self, schema: type[BaseModel] | None) -> None:
            if schema is None:
                raise ModelError("upstream returned 503 three times")

    bot = open_bot(Broken())
    result = bot.open_ticket("wugang@example.com", subject="x", body="E3001 又来了")
    state = bot.state(result.ticket_id)
    assert result.outcome == "escalated"
    assert "503" in state.handoff_reason
    assert state.turns[0].content == "E3001 又来了"


def test_redraft_limit_then_handoff(open_bot: OpenBot) -> None:
    bot = open_bot(ScriptedLLM(review=lambda p: Review(passed=False, problems=["不对"])), max_revisions=1)
    result = bot.open_ticket("wugang@example.com", subject="x", body="E3001")
    steps = [r.step for r in bot.history(result.ticket_id)]
    assert steps.count("draft") == 2 and steps[-1] == "handoff"
    assert result.outcome == "escalated"


def test_message_id_makes_send_idempotent(open_bot: OpenBot, database_url: str) -> None:
    bot = open_bot()
    ticket = bot.open_ticket("wugang@example.com", subject="x", body="E3001").ticket_id
    first = bot.send(ticket, "还是不行", message_id="m-1")
    again = bot.send(ticket, "还是不行", message_id="m-1")
    assert again == first
    assert (
        _count(
            database_url,
            "SELECT count(*) FROM supportbot.turns WHERE ticket_id = %s AND role = 'customer'",
            ticket,
        )
        == 2
    )
    assert bot.state(ticket).round == 2


def test_the_same_message_id_sent_twice_at_once_is_stored_once(open_bot: OpenBot, database_url: str) -> None:
    """Both copies find no turn with the id and queue on the ticket row: the second's insert
    then violates the id's unique key, and it reads the first's turn in a new transaction."""
    bot = open_bot()
    ticket = bot.open_ticket("wugang@example.com", subject="x", body="E3001").ticket_id
    submitted: list[Submitted] = []
    with psycopg.connect(database_url) as other:
        other.execute("SELECT 1 FROM supportbot.tickets WHERE id = %s FOR UPDATE", (ticket,))
        copies = [
            threading.Thread(
                target=lambda: submitted.append(bot.submit(ticket, "还是不行", message_id="m-1"))
            )
            for _ in range(2)
        ]
        for copy in copies:
            copy.start()
        _until_waiting_on_locks(database_url, 2)
    for copy in copies:
        copy.join(timeout=30)
    assert sorted(s.stored for s in submitted) == [False, True]
    assert len({s.idx for s in submitted}) == 1
    assert [t.content for t in bot.state(ticket).turns].count("还是不行") == 1


def _until_waiting_on_locks(url: str, count: int) -> None:
    with psycopg.connect(url, autocommit=True) as conn:
        for _ in range(200):
            waiting = conn.execute(
                "SELECT count(*) FROM pg_stat_activity"
                " WHERE wait_event_type = 'Lock' AND datname = current_database()"
            ).fetchone()
            if waiting is not None and waiting[0] >= count:
                return
            time.sleep(0.05)
    raise AssertionError(f"{count} sessions never waited on the ticket's row lock")


def test_a_message_arriving_mid_round_is_answered_by_the_next_round(
    open_bot: OpenBot, database_url: str
) -> None:
    # Sent from inside the round's own model call (this thread holds the ticket): send() cannot get
    # the answer while it waits, so it returns queued once its bound is up.
    other = SupportBot.open(
        database_url, settings=bot_settings(database_url, send_wait_seconds=0.2), backend="demo"
    )
    sent: list[RoundResult] = []

    def draft(prompt: str) -> str:
        if not sent:  # the customer writes again while the first reply is being drafted
            sent.append(other.send(ticket_ref[0], "补充一下:是招商银行"))
        return "您好 [KB-bank-001]。"

    ticket_ref: list[str] = []

    class Slow(ScriptedLLM):
        def before(self, schema: type[BaseModel] | None) -> None:
            if not ticket_ref:
                ticket_ref.append(_latest_ticket(database_url))

    bot = open_bot(Slow(draft=draft))
    first = bot.open_ticket("wugang@example.com", subject="x", body="E3001 同步失败")
    other.close()
    assert sent[0].outcome == "queued"
    state = bot.state(first.ticket_id)
    assert state.round == 2
    assert [t.role for t in state.turns] == ["customer", "customer", "agent", "agent"]
    assert present(state.latest_customer_message).content == "补充一下:是招商银行"
    assert (
        _count(database_url, "SELECT count(*) FROM supportbot.turns WHERE ticket_id = %s", first.ticket_id)
        == 4
    )


def _latest_ticket(database_url: str) -> str:
    with psycopg.connect(database_url) as conn:
        return str(scalar(conn, "SELECT max(id) FROM supportbot.tickets"))


@pytest.mark.parametrize(
    ("message", "error"),
    [("", EmptyMessage), ("   \n\t", EmptyMessage), ("x" * 20_001, MessageTooLong), ("a\x00b", InvalidInput)],
)
def test_bad_messages_are_rejected_and_nothing_is_written(
    open_bot: OpenBot, database_url: str, message: str, error: type[Exception]
) -> None:
    bot = open_bot()
    ticket = bot.open_ticket("wugang@example.com", subject="x", body="E3001").ticket_id
    before = _count(database_url, "SELECT count(*) FROM supportbot.turns")
    with pytest.raises(error):
        bot.send(ticket, message)
    with pytest.raises(error):
        bot.open_ticket("wugang@example.com", subject="x", body=message)
    assert _count(database_url, "SELECT count(*) FROM supportbot.turns") == before
    assert _count(database_url, "SELECT count(*) FROM supportbot.tickets") == 1


def test_other_bad_input(open_bot: OpenBot, database_url: str) -> None:
    bot = open_bot()
    with pytest.raises(UnknownTicket, match="T999999"):
        bot.send("T999999", "hello")
    with pytest.raises(UnknownTicket):
        bot.state("T999999")
    with pytest.raises(UnknownTicket, match="T999999"):
        bot.approve("T999999", approver="王经理")
    for email in ["not-an-email", "", "a@b", "wu gang@example.com"]:
        with pytest.raises(InvalidEmail):
            bot.open_ticket(email, subject="x", body="hello")
    ticket = bot.open_ticket("wugang@example.com", subject="x", body="E3001").ticket_id
    with pytest.raises(ApprovalNotPending):
        bot.approve(ticket, approver="王经理")
    with pytest.raises(InvalidInput, match="approver"):
        bot.approve(ticket, approver=" ")
    assert _count(database_url, "SELECT count(*) FROM supportbot.tickets") == 1
    assert isinstance(UnknownTicket("x"), LookupError) and isinstance(EmptyMessage("x"), ValueError)


def test_max_message_length_is_configurable(open_bot: OpenBot) -> None:
    bot = open_bot(max_message_chars=10)
    with pytest.raises(MessageTooLong, match="SUPPORTBOT_MAX_MESSAGE_CHARS"):
        bot.open_ticket("wugang@example.com", subject="x", body="这条消息超过了十个字符的限制")


class _SlowDrafts(ScriptedLLM):
    def before(self, schema: type[BaseModel] | None) -> None:
        if schema is None:
            time.sleep(0.4)


def test_a_round_longer_than_the_lease_renews_it_and_finishes(open_bot: OpenBot, database_url: str) -> None:
    bot = open_bot(
        _SlowDrafts(), lease_seconds=0.9
    )  # renewed after any step that ends 0.3 s after the last renewal
    result = bot.open_ticket("wugang@example.com", subject="银行流水", body="银行流水又同步失败了,提示 E3001")
    follow = bot.send(result.ticket_id, "还是不行")
    assert (result.outcome, follow.outcome) == ("resolved", "resolved")
    assert _count(database_url, "SELECT count(*) FROM supportbot.tickets WHERE lease_owner IS NOT NULL") == 0
