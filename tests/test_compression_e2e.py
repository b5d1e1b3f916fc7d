"""Compression through the engine: a long ticket stays within budget and keeps its exact facts."""

from __future__ import annotations

from collections.abc import Callable

import psycopg
from support.fakes import ScriptedLLM, scalar

from supportbot import SupportBot
from supportbot.errors import ModelError
from supportbot.memory._tokens import count_tokens
from supportbot.reply._context import ANSWER_RESERVE

OpenBot = Callable[..., SupportBot]
BILL = "INV-2026-0415"
FILLER = (
    "我们公司这个月的流水还是对不上,财务那边一直在催,麻烦再帮忙看看第{n}次同步的记录,"
    "另外导出的报表格式也和上个月不一样,想确认一下是不是系统有调整。"
)


def _draft_prompts(llm: ScriptedLLM) -> list[list[dict[str, str]]]:
    return [p for p in llm.prompts if p[0]["content"].startswith("你是客服。")]


def _tokens(messages: list[dict[str, str]]) -> int:
    return sum(count_tokens(m["content"]) + 4 for m in messages)


def test_a_bill_number_from_round_2_is_in_the_prompt_at_round_30(open_bot: OpenBot) -> None:
    llm = ScriptedLLM(summary=lambda prompt: "客户多次反映银行流水同步和报表问题。")  # lossy: drops the bill
    bot = open_bot(llm, history_budget=400, keep_last=4, summary_cap=200)
    ticket = bot.open_ticket("wugang@example.com", subject="流水对不上", body=FILLER.format(n=1)).ticket_id
    bot.send(ticket, f"补充一下,被多扣款的账单号是 {BILL},金额 ¥128.00。")
    rounds = [bot.send(ticket, FILLER.format(n=n)) for n in range(3, 31)]

    state = bot.state(ticket)
    assert state.round == 30 and all(r.outcome == "resolved" for r in rounds)
    assert state.summarized_upto > 3 >= 0 and BILL not in state.summary  # the bill's turn (3) was folded
    assert llm.summary_calls >= 1
    assert any(f.value == BILL for f in state.facts) and any("128" in f.value for f in state.facts)

    last = _draft_prompts(llm)[-1]
    assert BILL in last[-1]["content"] and "128.00" in last[-1]["content"]
    assert last[-1]["content"].rstrip().endswith(FILLER.format(n=30))
    budget = bot.settings.context_window - ANSWER_RESERVE
    biggest_turn = max(t.tokens or 0 for t in state.turns)
    for prompt in _draft_prompts(llm):
        assert _tokens(prompt) <= budget
    usage = state.context_usage
    assert usage["total"] <= usage["budget"] == budget
    assert usage.get("summary", 0) + usage["history"] <= 400 + biggest_turn  # no summary: facts filled it


def test_compression_is_off_while_the_history_fits(open_bot: OpenBot) -> None:
    llm = ScriptedLLM()
    bot = open_bot(llm)
    ticket = bot.open_ticket("wugang@example.com", subject="流水", body=FILLER.format(n=1)).ticket_id
    bot.send(ticket, f"账单号 {BILL}")
    state = bot.state(ticket)
    assert (state.summary, state.summarized_upto, llm.summary_calls) == ("", 0, 0)
    assert any(f.value == BILL for f in state.facts)  # facts are pinned from the first round on
    assert state.facts_upto == len(state.turns) - 1  # scanned up to the reply, which comes after
    assert state.context_usage["history"] > 0 and state.context_usage["latest"] > 0


def test_a_failing_summarizer_changes_nothing_and_the_round_goes_on(open_bot: OpenBot) -> None:
    def broken(prompt: str) -> str:
        raise ModelError("summarizer endpoint down")

    llm = ScriptedLLM(summary=broken)
    bot = open_bot(llm, history_budget=100, keep_last=2)
    ticket = bot.open_ticket("wugang@example.com", subject="流水", body=FILLER.format(n=1)).ticket_id
    result = bot.send(ticket, f"账单号 {BILL}," + FILLER.format(n=2))
    state = bot.state(ticket)
    assert result.outcome == "resolved" and llm.summary_calls >= 1
    assert (state.summary, state.summarized_upto) == ("", 0)
    assert "summarizer endpoint down" in state.summary_error
    assert any(f.value == BILL for f in state.facts)


def test_a_prompt_over_the_window_folds_history_first(open_bot: OpenBot) -> None:
    llm = ScriptedLLM(summary=lambda prompt: "早期:客户反映流水问题。")
    # Compression by budget is effectively off; only the model's window forces the fold.
    bot = open_bot(llm, history_budget=100_000, keep_last=2, context_window=ANSWER_RESERVE + 900)
    ticket = bot.open_ticket("wugang@example.com", subject="流水", body=FILLER.format(n=1)).ticket_id
    results = [bot.send(ticket, FILLER.format(n=n)) for n in range(2, 12)]
    state = bot.state(ticket)
    assert all(r.outcome == "resolved" for r in results)
    assert state.summarized_upto > 0 and llm.summary_calls >= 1
    assert all(_tokens(p) <= 900 for p in llm.prompts if p[0]["content"].startswith("你是"))


def test_a_message_that_cannot_fit_hands_off_with_the_reason(open_bot: OpenBot, database_url: str) -> None:
    bot = open_bot(ScriptedLLM(), context_window=ANSWER_RESERVE + 300)
    huge = "流水对不上," * 400
    result = bot.open_ticket("wugang@example.com", subject="流水", body=huge)
    state = bot.state(result.ticket_id)
    assert result.outcome == "escalated"
    assert (
        "上下文超出模型窗口" in state.handoff_reason and "SUPPORTBOT_CONTEXT_WINDOW" in state.handoff_reason
    )
    assert state.turns[0].content == huge  # nothing of the customer's message is lost or cut
    with psycopg.connect(database_url) as conn:
        assert scalar(conn, "SELECT count(*) FROM demo.escalations") == 1
