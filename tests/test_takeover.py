"""Human takeover: a person owns a ticket, answers, hands it back; the bot stays silent meanwhile."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import bot_settings
from support.fakes import (
    HUMAN,
    REFUND,
    TECH,
    ScriptedLLM,
    cite_hits,
    is_summary_request,
    refund_if_asked,
    rows,
)
from support.parts import bot_over_store

from supportbot import RoundResult, SupportBot
from supportbot.errors import (
    ApprovalNotPending,
    InvalidInput,
    NotTakenOver,
    TakeoverRefused,
    TicketBusy,
)

OpenBot = Callable[..., SupportBot]
WORKER = Path(__file__).resolve().parent / "worker.py"
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
    resumed = bot.resume(tid)
    assert resumed is not None and resumed.outcome == "with_human"
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
    assert turn.idx is not None  # a stored turn has its place
    assert state.turns[turn.idx] == turn
    assert state.turns[turn.idx - 1].content == "账单 INV-9001 多扣了钱"
    assert state.handled_upto == turn.idx + 1
    assert state.reply != PROMISE and state.reply  # the bot's round reply is still its own
    stored = rows(
        database_url, "SELECT author FROM supportbot.turns WHERE ticket_id = %s AND idx = %s", tid, turn.idx
    )
    assert stored == [("王芳",)]

    bot.hand_back(tid, agent="王芳")
    llm.triage = TECH  # answer, don't hand off again
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
    llm.triage = TECH
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
    llm.triage = TECH
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
    assert len(bot.state_at(tid, at_takeover).turns) == turn.idx
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
    results: list[RoundResult] = []
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
    assert results and results[0].outcome == "resolved"
    assert bot.take_over(tid, agent="王芳").human_agent == "王芳"


def test_profile_and_compression_include_the_human_reply(open_bot: OpenBot, database_url: str) -> None:
    llm = ScriptedLLM(triage=HUMAN)
    bot = open_bot(llm, history_budget=120, keep_last=2)
    tid = bot.open_ticket(EMAIL, body="我要找人工客服,账单有问题").ticket_id
    bot.take_over(tid, agent="王芳")
    turn = bot.reply_as_human(tid, PROMISE, agent="王芳")
    bot.hand_back(tid, agent="王芳")
    llm.triage = TECH
    for n in range(4):  # enough rounds for the human's turn to be folded into the summary
        assert bot.send(tid, f"第 {n} 次补充:E3001 银行同步还是失败,麻烦再看看").outcome == "resolved"
    state = bot.state(tid)
    assert turn.idx is not None and state.summarized_upto > turn.idx
    summary_inputs = [p[-1]["content"] for p in llm.prompts if is_summary_request(p)]
    assert any(PROMISE in p for p in summary_inputs)  # compression read the human's words
    assert any(f.kind == "promise" and f.turn == turn.idx for f in state.facts)  # pinned, not lossy
    (facts,) = rows(database_url, "SELECT facts FROM demo.past_tickets WHERE id = %s", tid)[0]
    assert facts["promises"]
    profile = bot.profile(EMAIL)
    assert "已承诺" in profile.text and profile.promises


@pytest.mark.sync_only  # drives a second engine over the store it built
def test_a_worker_never_picks_up_a_ticket_a_person_owns(open_bot: OpenBot, database_url: str) -> None:
    bot, llm, tid = _handed_off(open_bot)
    bot.take_over(tid, agent="王芳")
    # A customer message stored by another path (a queue, submit()) and a second process's engine.
    with bot_over_store(database_url, llm=llm, settings=bot_settings(database_url)) as other:
        assert other.bot.send(tid, "还在吗").outcome == "with_human"
        assert other.engine().drive(tid) is None  # the lease statement refuses: no round, no model call
    assert rows(database_url, "SELECT lease_owner, status FROM supportbot.tickets WHERE id = %s", tid) == [
        (None, "with_human")
    ]


def test_a_round_a_crashed_worker_left_is_finished_before_a_takeover(
    open_bot: OpenBot, database_url: str
) -> None:
    env = {**os.environ, "SUPPORTBOT_DATABASE_URL": database_url, "SUPPORTBOT_LEASE_SECONDS": "1"}
    # The worker records the refund lookup (an effect), then is SIGKILLed while drafting.
    args = json.dumps({"email": EMAIL, "body": "年付不想用了,申请退款 200 元", "crash_at": "draft"})
    crashed = subprocess.run(
        [sys.executable, str(WORKER), "open", args], env=env, capture_output=True, timeout=120, check=False
    )
    assert crashed.returncode == -9
    bot = open_bot(ScriptedLLM(triage=refund_if_asked, draft=cite_hits))
    (tid,) = (t.id for t in bot.tickets())
    assert bot.history(tid)[-1].next_step is not None  # stopped inside the round
    time.sleep(1.2)  # the dead worker's lease runs out
    with pytest.raises(TakeoverRefused, match="resume"):
        bot.take_over(tid, agent="王芳")
    resumed = bot.resume(tid)
    assert resumed is not None and resumed.outcome == "waiting_approval"
    with pytest.raises(TakeoverRefused, match="approve"):
        bot.take_over(tid, agent="王芳")
    bot.reject(tid, approver="经理", note="不符合政策")
    assert bot.take_over(tid, agent="王芳").human_agent == "王芳"
    assert [s.step for s in bot.history(tid)].count("human_takeover") == 1
    assert bot.audit(tid)[-1].action == "take_over"


def test_the_readme_takeover_snippet_runs_as_pasted(
    database_url: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    text = (Path(__file__).resolve().parent.parent / "README.md").read_text(encoding="utf-8")
    section = text.split("\n## Human takeover and audit\n", 1)[1].split("\n## ", 1)[0]
    match = re.search(r"```python\n(.*?)```", section, re.DOTALL)
    assert match
    for name in list(os.environ):
        if name.startswith("SUPPORTBOT_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("SUPPORTBOT_DATABASE_URL", database_url)
    exec(compile(match.group(1), "README.md", "exec"), {})
    lines = capsys.readouterr().out.splitlines()
    assert lines[:2] == ["with_human", "None"]
    assert [line.split()[3] for line in lines[2:]] == ["take_over", "human_reply", "hand_back"]
    assert rows(database_url, "SELECT author FROM supportbot.turns WHERE author IS NOT NULL") == [("王芳",)]


def test_takeover_racing_customer_messages_leaves_no_bot_reply_after_it(
    open_bot: OpenBot, database_url: str
) -> None:
    bot = open_bot(ScriptedLLM())
    tid = bot.open_ticket(EMAIL, body="E3001 同步失败").ticket_id
    outcomes: list[str] = []

    def customer() -> None:
        for n in range(12):
            outcomes.append(bot.send(tid, f"第 {n} 条:还是 E3001").outcome)

    sender = threading.Thread(target=customer)
    sender.start()
    while True:  # an agent clicking "take over" until no round runs
        try:
            bot.take_over(tid, agent="王芳")
            break
        except TicketBusy as busy:
            time.sleep(min(busy.retry_after, 0.05))
    sender.join(60)
    assert len(outcomes) == 12 and set(outcomes) <= {"resolved", "queued", "with_human"}
    (taken_at,) = rows(
        database_url,
        "SELECT turn_count FROM supportbot.steps WHERE ticket_id = %s AND step = 'human_takeover'",
        tid,
    )[0]
    after = rows(
        database_url, "SELECT role FROM supportbot.turns WHERE ticket_id = %s AND idx >= %s", tid, taken_at
    )
    assert ("agent",) not in after  # every turn after the takeover is the customer's
    assert bot.ticket(tid).status == "with_human"
