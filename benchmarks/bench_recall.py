"""Recall benchmark: do the facts a customer gives reach the final draft prompt of a long ticket?

    python benchmarks/bench_recall.py [--rounds 56] [--seeds 3]

Workload: generated long Chinese tickets (one per seed), run through the real engine with the
offline model against a fresh PostgreSQL, at history budgets 800, 1,200 and 2,000 tokens with
the last 4 turns kept, and once with compression off (the reference). Each ticket plants facts
of 13 categories in the surface forms customers use (Chinese numerals, ``1.2万``, ``2.8k``,
``两百块``, ``3/25``, ``下周五``, ``上个月12号``, lower-case ids, digit-first ids after a label,
phones, emails, addresses, people with roles, plans, statuses), corrections of amounts and dates,
a status that flips, agent promises (the agent's reply of that round ends with it) and promises
the customer reports, among filler that uses request words without asking anything.

Reported: recall per category in the final draft prompt (a fact counts when its canonical value
or its words as written appear in it; a sentence when its words appear), whether every corrected
fact shows its current value as current (the old value only after "原为", and no summary line
stating it without the new one), the final prompt's conversation part (facts + summary + history
+ latest) against the history budget, facts left out, extraction time per turn, and extraction
time against text length on pathological input (linear when ms per 1,000 characters stays flat).
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import date, timedelta
from pathlib import Path

from pydantic import BaseModel

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import fresh_database, median

from supportbot import Completion, Settings, SupportBot
from supportbot._state import SupportState, Turn
from supportbot.llm.offline import OfflineModel
from supportbot.memory._facts import extract
from supportbot.memory._mask import mask_text
from supportbot.reply._context import DRAFT_PROMPT, FACTS_OMITTED

BUDGETS = (800, 1200, 2000)
EMAIL = "recall-bench@example.com"  # not a demo customer: no refund flow, no approval pauses

FILLER = (
    "我们这边一直在用你们的系统,整体还可以",
    "那就麻烦你们了",
    "谢谢,辛苦了",
    "请稍等,我找一下记录",
    "我想说你们的客服态度挺好的",
    "我想想怎么描述这个情况",
    "财务那边一直在催这个事情",
    "登录以后页面一直在转圈",
    "我刚才又刷新了一下页面",
    "这个问题已经影响到我们月底结账了",
    "我们团队有好几个人在用这个账号",
    "之前也遇到过类似的情况,后来自己好了",
    "感谢你们的耐心",
    "说实话这个流程有点复杂",
    "我把截图发给同事看了一下",
    "系统提示让我联系管理员",
)


@dataclass
class Planted:
    category: str
    round: int
    shows: tuple[str, ...]  # any of these in the prompt counts as recalled
    old: tuple[str, ...] = ()  # a correction: what the value it corrects looks like
    replaced: bool = False  # a value corrected later: scored by the correction, not by recall


@dataclass
class Ticket:
    messages: list[str] = field(default_factory=list)
    replies: dict[int, str] = field(default_factory=dict)  # round -> sentence the agent adds
    planted: list[Planted] = field(default_factory=list)


def _chinese(n: int) -> str:
    digits = "零一二三四五六七八九"
    thousands, rest = divmod(n, 1000)
    hundreds = rest // 100
    text = f"{digits[thousands]}千" if thousands else ""
    return text + (f"{digits[hundreds]}百" if hundreds else "") + "元"


def generate(rng: random.Random, rounds: int) -> Ticket:
    """A ticket of ``rounds`` customer messages with facts planted in varied forms."""
    ticket = Ticket()
    plants = _plants(rng)
    slots = sorted(rng.sample(range(1, rounds - 2), min(len(plants), rounds - 3)))
    by_round = dict(zip(slots, plants, strict=False))
    for r in range(rounds):
        filler = "。".join(rng.sample(FILLER, 2)) + "。"
        text, planted = by_round.get(r, (None, []))
        if text is None:
            ticket.messages.append(filler)
            continue
        message = filler + text if rng.random() < 0.5 else text + filler
        ticket.messages.append(message)
        for p in planted:
            p.round = r
            ticket.planted.append(p)
            if p.category == "agent_promise":
                ticket.replies[r] = p.shows[0] + "。"
    return ticket


Plant = tuple[str, list[Planted]]


def _plants(rng: random.Random) -> list[Plant]:
    n = rng.randint(10, 99)
    fee_old, fee_new = 1680 + n, 1860 + n
    amounts: list[Plant] = [
        (f"升级费说是 {fee_old} 元,有点贵。", [Planted("amount", 0, (f"CNY {fee_old}.00",), replaced=True)]),
        (f"退款金额应该是{_chinese(3500)}吧。", [Planted("amount", 0, ("CNY 3500.00",))]),
        (f"报价大概 2.{n % 9 + 1}k 左右。", [Planted("amount", 0, (f"CNY 2{n % 9 + 1}00.00",))]),
        ("合同总价 1.2万,已经付了。", [Planted("amount", 0, ("CNY 12000.00",))]),
        ("上个月多扣了两百块。", [Planted("amount", 0, ("CNY 200.00",))]),
        (f"手续费 {n} 块,不合理。", [Planted("amount", 0, (f"CNY {n}.00",))]),
    ]
    correction: Plant = (
        f"不好意思我说错了,升级费应该是 {fee_new} 元,不是 {fee_old} 元。",
        [Planted("amount", 0, (f"CNY {fee_new}.00",), old=(f"CNY {fee_old}.00", f"{fee_old} 元"))],
    )
    ids: list[Plant] = [
        (f"发票号是 inv-2026-{n:04d}。", [Planted("id", 0, (f"INV-2026-{n:04d}",))]),
        (f"合同号 2026HT{n:04d},麻烦核对。", [Planted("id", 0, (f"2026HT{n:04d}",))]),
        (f"订单号:{rng.randint(10**8, 10**9 - 1)}。", []),
        (f"账单 B2026{n:02d}15001 扣款两次。", [Planted("id", 0, (f"B2026{n:02d}15001",))]),
    ]
    order = ids[2][0].split(":")[1].rstrip("。")
    ids[2] = (ids[2][0], [Planted("id", 0, (order,))])
    codes: list[Plant] = [
        (f"报错代码是 AUTH-{400 + n % 99}。", [Planted("error_code", 0, (f"AUTH-{400 + n % 99}",))]),
        (f"页面弹出 e{3000 + n},看不懂。", [Planted("error_code", 0, (f"E{3000 + n}",))]),
        (f"错误码:E{4000 + n}。", [Planted("error_code", 0, (f"E{4000 + n}",))]),
    ]
    phone = f"139{rng.randint(1000, 9999)}{rng.randint(1000, 9999)}"
    contacts: list[Plant] = [
        (
            f"我的手机 {phone[:3]} {phone[3:7]} {phone[7:]},有事打我。",
            [Planted("phone", 0, (mask_text(phone), phone))],
        ),
        (f"座机 021-6{n:02d}45678 也行。", [Planted("phone", 0, (mask_text(f"021-6{n:02d}45678"),))]),
        (
            f"邮箱是 Zhang.Li{n}@Example.com,发到这里。",
            [Planted("email", 0, (mask_text(f"zhang.li{n}@example.com"),))],
        ),
        (
            f"收货地址:上海市浦东新区张江路 {n} 号 3 楼。",
            [Planted("address", 0, (f"上海市浦东新区张江路 {n} 号 3 楼", f"上海市浦东新区张江路{n}号3楼"))],
        ),
        ("这事我们财务小刘在跟。", [Planted("person", 0, ("财务小刘",))]),
        ("对接人王经理明天出差。", [Planted("person", 0, ("王经理",))]),
        ("我们用的是专业版年付。", [Planted("plan", 0, ("专业版年付",))]),
        ("之前试过企业版。", [Planted("plan", 0, ("企业版",))]),
    ]
    statuses: list[Plant] = [
        ("还没有收到退款。", [Planted("status", 0, ("未收到退款",), replaced=True)]),
        ("两步验证我从来没开过。", [Planted("status", 0, ("未开通两步验证",))]),
    ]
    flip: Plant = (
        "对了,退款我已经收到了。",
        [Planted("status", 0, ("已收到退款",), old=("未收到退款",))],
    )
    promises: list[Plant] = [
        (
            "你们能不能 48 小时内给个答复?",
            [Planted("agent_promise", 0, ("我们会在 48 小时内给您答复",))],
        ),
        (
            "上次客服答应免费延长一个月。",
            [Planted("customer_promise", 0, ("上次客服答应免费延长一个月",))],
        ),
        (
            "之前你们经理承诺过给我们开专票。",
            [Planted("customer_promise", 0, ("之前你们经理承诺过给我们开专票",))],
        ),
        (
            "能否 3 个工作日内把发票寄出?",
            [Planted("agent_promise", 0, ("已为您登记,3 个工作日内寄出发票",))],
        ),
    ]
    requests: list[Plant] = [
        ("请帮我把发票抬头改成公司全称。", [Planted("request", 0, ("请帮我把发票抬头改成公司全称",))]),
        ("希望到期前提醒我续费。", [Planted("request", 0, ("希望到期前提醒我续费",))]),
        ("麻烦把多扣的钱退回原卡。", [Planted("request", 0, ("麻烦把多扣的钱退回原卡",))]),
    ]
    dates = [
        ("下周五之前要处理完。", "next_friday"),
        ("3/25 那天扣的款。", "3/25"),
        ("上个月12号开始出问题。", "last_month_12"),
        ("2026年3月5日签的合同。", "2026-03-05"),
    ]
    date_plants: list[Plant] = [(text, [Planted("date", 0, (rule,))]) for text, rule in dates]
    date_correction: Plant = (
        "续费日是 4月1日。",
        [Planted("date", 0, ("续费日 YEAR-04-01",), replaced=True)],
    )
    date_fix: Plant = (
        "不对,续费日应该是 4月3日。",
        [Planted("date", 0, ("续费日 YEAR-04-03",), old=("YEAR-04-01",))],
    )
    head = [*amounts, *ids, *codes, *contacts, *statuses, *promises, *requests, *date_plants]
    rng.shuffle(head)
    # Corrections after what they correct: the first half holds the originals.
    early = [amounts[0], statuses[0], date_correction]
    rest = [p for p in head if p not in early]
    return [*early, *rest[: len(rest) // 2], correction, flip, date_fix, *rest[len(rest) // 2 :]]


def resolve_dates(ticket: Ticket, turns: Sequence[Turn]) -> None:
    """Expected canonical dates, from each customer turn's own day (computed here independently)."""
    customer = [t for t in turns if t.role == "customer"]
    for p in ticket.planted:
        if p.category != "date":
            continue
        when = customer[p.round].created_at
        assert when is not None
        day = when.date()
        rule = p.shows[0]
        if rule == "next_friday":
            value = day - timedelta(days=day.weekday()) + timedelta(days=11)
            p.shows = (value.isoformat(),)
        elif rule == "3/25":
            p.shows = (date(day.year, 3, 25).isoformat(),)
        elif rule == "last_month_12":
            first = day.replace(day=1) - timedelta(days=1)
            p.shows = (first.replace(day=12).isoformat(),)
        else:
            p.shows = tuple(s.replace("YEAR", str(day.year)) for s in p.shows)
            p.old = tuple(s.replace("YEAR", str(day.year)) for s in p.old)


class Model(OfflineModel):
    """The offline model; on rounds with a scripted promise the draft ends with it."""

    def __init__(self, replies: dict[int, str]) -> None:
        super().__init__()
        self.replies = replies
        self.round = 0
        self.last_draft: list[dict[str, str]] = []

    def chat(
        self,
        messages: Sequence[dict[str, str]],
        *,
        schema: type[BaseModel] | None = None,
        temperature: float = 0.0,
    ) -> Completion:
        completion = super().chat(messages, schema=schema, temperature=temperature)  # type: ignore[arg-type]
        if schema is None and messages[0]["content"] == DRAFT_PROMPT:
            self.last_draft = [dict(m) for m in messages]
            if self.round in self.replies:
                return Completion(
                    text=completion.text + "\n" + self.replies[self.round], usage=completion.usage
                )
        return completion


def run(url: str, ticket: Ticket, budget: int | None) -> tuple[SupportState, str, dict[str, int]]:
    settings = (
        Settings(database_url=url, history_budget=budget, keep_last=4)
        if budget is not None
        else Settings(database_url=url, history_budget=10**9, context_window=10**9)
    )
    model = Model(ticket.replies)
    with SupportBot.open(url, llm=model, small_llm=OfflineModel(), settings=settings, backend="demo") as bot:  # type: ignore[arg-type]
        model.round = 0
        ticket_id = bot.open_ticket(EMAIL, subject="账单和发票问题", body=ticket.messages[0]).ticket_id
        for r, message in enumerate(ticket.messages[1:], start=1):
            model.round = r
            bot.send(ticket_id, message)
        state = bot.state(ticket_id)
    return state, model.last_draft[-1]["content"], state.context_usage


def score(ticket: Ticket, state: SupportState, prompt: str, usage: dict[str, int]) -> dict[str, object]:
    per: dict[str, list[bool]] = {}
    for p in ticket.planted:
        if not p.replaced:
            per.setdefault(p.category, []).append(any(s in prompt for s in p.shows))
    start = prompt.find("钉住的事实")
    facts_part = prompt[start : prompt.find("\n\n", start)] if start >= 0 else ""
    current = []
    for p in ticket.planted:
        if not p.old:
            continue
        shown = any(s in prompt for s in p.shows)
        stale = any(_stale(facts_part, old) for old in p.old)
        summary_stale = any(
            old in line and not any(s in line for s in p.shows)
            for line in state.summary.splitlines()
            for old in p.old
        )
        current.append(shown and not stale and not summary_stale)
    conversation = sum(usage.get(k, 0) for k in ("facts", "summary", "history", "latest"))
    return {
        "recall": {k: sum(v) / len(v) for k, v in sorted(per.items())},
        "missed": sorted(
            {p.shows[0] for p in ticket.planted if not p.replaced and not any(s in prompt for s in p.shows)}
        ),
        "corrections_current": f"{sum(current)}/{len(current)}",
        "conversation_tokens": conversation,
        "prompt_tokens": usage.get("total", 0),
        "facts_tokens": usage.get("facts", 0),
        "facts_omitted": usage.get(FACTS_OMITTED, 0),
    }


def _stale(facts_part: str, old: str) -> bool:
    """``old`` in the facts section other than as a replaced value ("原为 …")."""
    at = facts_part.find(old)
    while at >= 0:
        if facts_part.rfind("原为", max(0, at - 12), at) < 0:
            return True
        at = facts_part.find(old, at + 1)
    return False


def extraction_ms(turns: Sequence[Turn]) -> float:
    times = []
    for i, turn in enumerate(turns):
        started = time.perf_counter()
        extract(turn, i)
        times.append((time.perf_counter() - started) * 1000)
    return median(times)


def pathological() -> dict[str, dict[int, float]]:
    """Extraction time against length: ms per 1,000 characters should stay flat (linear time)."""
    rng = random.Random(3)
    makers = {
        "digits": lambda n: "".join(rng.choice("0123456789") for _ in range(n)),
        "yuan": lambda n: "元" * n,
        "numerals_yuan": lambda n: ("三千五百" * (n // 8) + "元" * (n // 2))[:n],
        "brackets": lambda n: "(" * (n // 2) + "[{" + ")" * (n // 2),
        "mixed": lambda n: "".join(rng.choice("ab1元-.@号 E3001下周五¥,。订单号") for _ in range(n)),
        "email_like": lambda n: "a" * (n - 10) + "@b.c" + ".d" * 3,
    }
    report: dict[str, dict[int, float]] = {}
    for name, make in makers.items():
        report[name] = {}
        for n in (2000, 8000, 32000):
            turn = Turn(role="customer", content=make(n))
            elapsed = min(_timed(turn) for _ in range(3))  # the least disturbed of three
            report[name][n] = round(elapsed / (n / 1000), 3)  # ms per 1,000 characters
    return report


def _timed(turn: Turn) -> float:
    started = time.perf_counter()
    extract(turn, 0)
    return (time.perf_counter() - started) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=56)
    parser.add_argument("--seeds", type=int, default=2)
    args = parser.parse_args()
    report: dict[str, object] = {"rounds": args.rounds, "seeds": args.seeds}
    runs: dict[str, list[dict[str, object]]] = {}
    ext: list[float] = []
    for seed in range(args.seeds):
        for budget in (*BUDGETS, None):
            ticket = generate(random.Random(seed), args.rounds)
            name = f"budget_{budget}" if budget else "off"
            with fresh_database(f"bench_recall_{seed}_{name}") as url:
                state, prompt, usage = run(url, ticket, budget)
            resolve_dates(ticket, state.turns)
            result = score(ticket, state, prompt, usage)
            result["facts_planted"] = len(ticket.planted)
            result["ledger_size"] = len(state.facts)
            runs.setdefault(name, []).append(result)
            if budget == 1200:
                ext.append(extraction_ms(state.turns))
    for name, results in runs.items():
        categories = sorted({c for r in results for c in r["recall"]})  # type: ignore[attr-defined]
        report[name] = {
            "recall": {
                c: round(median([r["recall"][c] for r in results if c in r["recall"]]), 3)  # type: ignore[index]
                for c in categories
            },
            "recall_min": {
                c: min(r["recall"][c] for r in results if c in r["recall"])  # type: ignore[index]
                for c in categories
            },
            "runs": results,
        }
    report["extraction_ms_per_turn_median"] = round(median(ext), 4)
    report["pathological_ms_per_1000_chars"] = pathological()
    print(json.dumps(report, indent=1, ensure_ascii=False))


if __name__ == "__main__":
    main()
