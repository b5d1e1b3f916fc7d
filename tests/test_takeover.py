"""Human takeover: a person owns a ticket, answers, hands it back; the bot stays silent meanwhile."""

from __future__ import annotations

import threading
from collections.abc import Callable

import pytest
from fakes import HUMAN, REFUND, TECH, ScriptedLLM, rows

from supportbot import SupportBot
from supportbot.errors import (
    ApprovalNotPending,
    InvalidInput,
    NotTakenOver,
    TakeoverRefused,
    TicketBusy,
)

OpenBot = Callable[..., SupportBot]
EMAIL = "wugang@example.com"
PROMISE = "我承诺明天下午 3 点前给您回电,并为您延长试用 7 天。"


def _handed_off(open_bot: OpenBot) -> tuple[SupportBot, ScriptedLLM, str]:
    llm = ScriptedLLM(triage=HUMAN)
    bot = open_bot(llm)
    result = bot.open_ticket(EMAIL, body="我要找人工客服")
    assert result.outcome == "escalated"
    return bot, llm, result.ticket_id


def test_take_over_marks_the_row_and_the_bot_answers_nothing(open_bot: OpenBot) -> None:
    bot, llm, tid = _handed_off(open_bot)
    state = bot.take_over(tid, agent="王芳")
    assert state.human_agent == "王芳"
    row = bot.ticket(tid)
    assert (row.status, row.human_agent) == ("with_human", "王芳")
    calls = len(llm.prompts)
    result = bot.send(tid, "有人吗?我的账单不对")
    assert result.outcome == "with_human"
    assert result.reply == ""
    assert bot.resume(tid).outcome == "with_human"  # type: ignore[union-attr]
    assert len(llm.prompts) == calls  # no model call: no round ran
    turns = bot.state(tid).turns
    assert turns[-1].content == "有人吗?我的账单不对"  # shown to the person
    assert [t.role for t in turns].count("agent") == 1  # only the bot's handoff reply
    with pytest.raises(ApprovalNotPending, match="王芳"):
        bot.approve(tid, approver="经理")
    assert bot.tickets(status="with_human")[0].id == tid


def test_reply_is_an_authored_agent_turn_and_counts_as_memory(open_bot: OpenBot, database_url: str) -> None:
    bot, llm, tid = _handed_off(open_bot)
    bot.take_over(tid, agent="王芳")
    bot.send(tid, "账单 INV-9001 多扣了钱")
    turn = bot.reply_as_human(tid, PROMISE, agent="王芳")
    assert (turn.role, turn.author, turn.content) == ("agent", "王芳", PROMISE)
    state = bot.state(tid)
    assert state.turns[turn.idx] == turn  # type: ignore[index]
    assert state.turns[turn.idx - 1].content == "账单 INV-9001 多扣了钱"  # type: ignore[operator]
    assert state.handled_upto == turn.idx + 1  # type: ignore[operator]
    assert state.reply != PROMISE and state.reply  # the bot's round reply is still its own
    stored = rows(
        database_url, "SELECT author FROM supportbot.turns WHERE ticket_id = %s AND idx = %s", tid, turn.idx
    )
    assert stored == [("王芳",)]

    bot.hand_back(tid, agent="王芳")
    llm._triage = TECH  # answer, don't hand off again
    result = bot.send(tid, "好的,那我等您电话")
    assert result.outcome == "resolved"
    assert any(PROMISE in p for p in llm.user_prompts()[-3:])
    facts = bot.state(tid).facts
    assert any(f.turn == turn.idx and f.kind == "promise" for f in facts), facts


def test_hand_back_prompt_contains_the_human_reply(open_bot: OpenBot) -> None:
    bot, llm, tid = _handed_off(open_bot)
    bot.take_over(tid, agent="王芳")
    bot.reply_as_human(tid, "已为您把退款申请转给财务,编号 R-77。", agent="王芳")
    assert bot.hand_back(tid, agent="王芳", note="客户很着急") is None  # nothing waited
    assert bot.ticket(tid).status == "open"
    assert bot.ticket(tid).human_agent is None
    llm._triage = TECH
    before = len(llm.prompts)
    bot.send(tid, "财务什么时候处理?")
    new = [p[-1]["content"] for p in llm.prompts[before:]]
    assert any("R-77" in p for p in new)


def test_hand_back_answers_messages_that_waited(open_bot: OpenBot) -> None:
    bot, llm, tid = _handed_off(open_bot)
    bot.take_over(tid, agent="王芳")
    bot.reply_as_human(tid, "我来处理。", agent="王芳")
    waiting = bot.send(tid, "E3001 又出现了")
    assert waiting.outcome == "with_human"
    llm._triage = TECH
    result = bot.hand_back(tid, agent="王芳")
    assert result is not None and result.outcome == "resolved" and result.reply
    assert result.handled_upto > waiting.handled_upto
    assert bot.state(tid).turns[-1].author is None  # the bot answered last


def test_only_the_owner_replies_or_hands_back(open_bot: OpenBot) -> None:
    bot, _, tid = _handed_off(open_bot)
    with pytest.raises(NotTakenOver):
        bot.reply_as_human(tid, "你好", agent="王芳")
    bot.take_over(tid, agent="王芳")
    assert bot.take_over(tid, agent="王芳").human_agent == "王芳"  # twice is once
    with pytest.raises(TakeoverRefused, match="王芳"):
        bot.take_over(tid, agent="李雷")
    with pytest.raises(NotTakenOver):
        bot.hand_back(tid, agent="李雷")
    with pytest.raises(InvalidInput):
        bot.take_over(tid, agent="  ")
    assert [s.step for s in bot.history(tid)].count("human_takeover") == 1


def test_take_over_refuses_a_ticket_waiting_for_approval(open_bot: OpenBot) -> None:
    bot = open_bot(ScriptedLLM(triage=REFUND, draft="您好 [KB-refund-001]。"))
    result = bot.open_ticket(EMAIL, subject="退款", body="申请退款 100 元")
    assert result.outcome == "waiting_approval"
    with pytest.raises(TakeoverRefused, match="approve"):
        bot.take_over(result.ticket_id, agent="王芳")
    assert bot.ticket(result.ticket_id).human_agent is None


def test_history_state_at_and_fork_across_takeover(open_bot: OpenBot) -> None:
    bot, _, tid = _handed_off(open_bot)
    bot.take_over(tid, agent="王芳")
    turn = bot.reply_as_human(tid, "您好,我是王芳。", agent="王芳")
    bot.hand_back(tid, agent="王芳")
    steps = bot.history(tid)
    names = [s.step for s in steps]
    assert names[-3:] == ["human_takeover", "human_reply", "hand_back"]
    assert all(s.next_step is None for s in steps[-3:])
    at_takeover, at_reply, at_back = (s.seq for s in steps[-3:])
    assert bot.state_at(tid, at_takeover).human_agent == "王芳"
    assert len(bot.state_at(tid, at_takeover).turns) == turn.idx  # type: ignore[operator]
    assert bot.state_at(tid, at_reply).turns[-1] == turn
    assert bot.state_at(tid, at_back).human_agent == ""
    fork = bot.fork(tid, at_reply)
    row = bot.ticket(fork)
    assert (row.status, row.human_agent) == ("with_human", "王芳")
    assert bot.state(fork).turns[-1].author == "王芳"
    assert bot.send(fork, "还在吗").outcome == "with_human"
    back = bot.fork(tid, at_back)
    assert bot.ticket(back).human_agent is None


def test_take_over_while_a_round_runs_is_refused_then_succeeds(open_bot: OpenBot) -> None:
    started, go = threading.Event(), threading.Event()

    def slow_draft(prompt: str) -> str:
        started.set()
        assert go.wait(10)
        return "您好,请重新授权 [KB-bank-001]。"

    bot = open_bot(ScriptedLLM(draft=slow_draft))
    results: list[object] = []
    worker = threading.Thread(target=lambda: results.append(bot.open_ticket(EMAIL, body="E3001 同步失败")))
    worker.start()
    assert started.wait(10)
    tid = bot.tickets()[0].id
    with pytest.raises(TicketBusy) as busy:
        bot.take_over(tid, agent="王芳")
    assert busy.value.retry_after > 0
    assert bot.ticket(tid).human_agent is None  # nothing recorded
    go.set()
    worker.join(10)
    assert results and results[0].outcome == "resolved"  # type: ignore[attr-defined]
    assert bot.take_over(tid, agent="王芳").human_agent == "王芳"
