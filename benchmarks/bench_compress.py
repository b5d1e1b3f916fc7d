"""Compression benchmark: prompt tokens per round on a 200-round ticket, with and without compression.

    python benchmarks/bench_compress.py [--rounds 200]

Workload: one ticket through the real engine and database, a zero-latency scripted model;
customer messages of 60-150 and replies of 150-300 non-repeating Chinese characters. Every 7th
customer message gives a bill number and an amount, every 9th reply makes a dated promise; these
are the pinned facts. "Off" sets the history budget and the model window so high that nothing is
ever folded. Reported: the main model's prompt tokens (counted with tiktoken on the prompt as
sent) for rounds 150-200, the share of pinned facts present in the last prompt, and the time
compression itself takes per round (compress() with an instant summarizer, and prompt building).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import psycopg
from pydantic import BaseModel

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import ChineseText, fresh_database, median

from supportbot import Completion, Settings, SupportBot
from supportbot._state import Review, SupportState, Triage
from supportbot.memory._compress import SUMMARY_PROMPT, compress
from supportbot.memory._sentences import SENTENCE_KINDS
from supportbot.memory._tokens import count_tokens
from supportbot.reply import _context as context

TECH = Triage(
    category="technical",
    needs_account_data=False,
    needs_human=False,
    summary="银行同步失败",
    search_query="E3001 银行流水同步",
)


class Model:
    """Zero-latency model: random replies citing the article, a summary made of the prompt's head."""

    def __init__(self, text: ChineseText) -> None:
        self.text = text
        self.round = 0
        self.draft_prompts: dict[int, list[dict[str, str]]] = {}

    def chat(
        self,
        messages: Sequence[dict[str, str]],
        *,
        schema: type[BaseModel] | None = None,
        temperature: float = 0.0,
    ) -> Completion:
        if schema is Triage:
            return Completion(text=TECH.model_dump_json(), parsed=TECH)
        if schema is Review:
            return Completion(text='{"passed": true}', parsed=Review(passed=True))
        if messages[0]["content"] == SUMMARY_PROMPT:
            return Completion(text=messages[-1]["content"][:300])
        self.draft_prompts[self.round] = [dict(m) for m in messages]
        promise = f"我们会在 {self.round % 5 + 1} 个工作日内回复您。" if self.round % 9 == 0 else ""
        return Completion(text=self.text(150, 300) + promise + "[KB-bank-001]")


def seed(url: str) -> None:
    with psycopg.connect(url) as conn, conn.transaction():
        conn.execute(
            "INSERT INTO demo.customers (id, name, email, is_vip, created_at)"
            " VALUES ('C1', '吴刚', 'wugang@example.com', true, '2025-01-01')"
        )
        conn.execute(
            "INSERT INTO demo.kb_articles VALUES ('KB-bank-001', '银行流水同步失败 E3001', 'bank',"
            " 'E3001 表示银行授权过期,请重新授权。', 'https://h/kb/1')"
        )


def message(text: ChineseText, n: int) -> str:
    body = text(60, 150)
    if n % 7 == 0:
        body += f"账单号 INV-2026-{n:04d},扣了 ¥{n}.00。"
    return body


def run(url: str, rounds: int, *, compressed: bool) -> tuple[Model, SupportState]:
    model = Model(ChineseText(seed=11))
    settings = (
        Settings(database_url=url)
        if compressed
        else Settings(database_url=url, history_budget=10**9, context_window=10**9)
    )
    with SupportBot.open(url, llm=model, settings=settings, backend="demo") as bot:  # type: ignore[arg-type]
        model.round = 1
        ticket = bot.open_ticket("wugang@example.com", subject="流水", body=message(model.text, 1)).ticket_id
        for n in range(2, rounds + 1):
            model.round = n
            bot.send(ticket, message(model.text, n))
        return model, bot.state(ticket)


def prompt_tokens(messages: list[dict[str, str]]) -> int:
    return sum(count_tokens(m["content"]) + 4 for m in messages)


def facts_present(state: SupportState, prompt: str) -> dict[str, float]:
    exact = [f for f in state.facts if f.kind not in SENTENCE_KINDS]
    sentences = [f for f in state.facts if f.kind in SENTENCE_KINDS]

    # Amounts are shown normalized ("CNY 196.00"), so a fact counts as present by value or key.
    def share(facts):
        return sum(f.value in prompt or f.key in prompt for f in facts) / len(facts) if facts else 1.0

    return {
        "exact_facts": len(exact),
        "exact_present": share(exact),
        "sentence_facts": len(sentences),
        "sentence_present": share(sentences),
    }


def overhead_ms(state: SupportState, settings: Settings) -> dict[str, float]:
    """Per-round cost of compression itself, replaying the ticket's growth with an instant summarizer."""
    summary, upto, facts, scanned = "", 0, (), 0
    fold, build = [], []
    for end in range(2, len(state.turns) + 1, 2):
        turns = state.turns[:end]
        started = time.perf_counter()
        result = compress(
            turns,
            summary,
            upto,
            budget=settings.history_budget,
            keep_last=settings.keep_last,
            summary_cap=settings.summary_cap,
            facts=facts,
            facts_upto=scanned,
            summarize=lambda prev, new: "早期摘要。",
        )
        fold.append((time.perf_counter() - started) * 1000)
        summary, upto, facts, scanned = result.summary, result.summarized_upto, result.facts, end
        view = SupportState(
            ticket=state.ticket, turns=turns, summary=summary, summarized_upto=upto, facts=facts
        )
        started = time.perf_counter()
        context.fit(context.draft_prompt, view, context.prompt_budget(settings))
        build.append((time.perf_counter() - started) * 1000)
    return {
        "compress_ms_median": median(fold),
        "compress_ms_max": max(fold),
        "prompt_build_ms_median": median(build),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=200)
    args = parser.parse_args()
    report: dict[str, object] = {"rounds": args.rounds}
    window = range(max(1, args.rounds - 50), args.rounds + 1)
    for compressed in (True, False):
        with fresh_database(f"bench_compress_{int(compressed)}") as url:
            seed(url)
            started = time.perf_counter()
            model, state = run(url, args.rounds, compressed=compressed)
            elapsed = time.perf_counter() - started
        tokens = [prompt_tokens(model.draft_prompts[r]) for r in window if r in model.draft_prompts]
        last = model.draft_prompts[max(model.draft_prompts)][-1]["content"]
        key = "on" if compressed else "off"
        report[key] = {
            "prompt_tokens_median": median(tokens),
            "prompt_tokens_max": max(tokens),
            "summarized_upto": state.summarized_upto,
            "turns": len(state.turns),
            "ms_per_round": elapsed * 1000 / args.rounds,
            **facts_present(state, last),
        }
        if compressed:
            settings = Settings()
            biggest = max(t.tokens or 0 for t in state.turns)
            fixed = {
                k: v
                for k, v in state.context_usage.items()
                if k not in ("history", "summary", "total", "budget")
            }
            # The bound: budget + keep_last turns + the fixed sections (system, basics, facts...).
            report["on"]["bound"] = (
                settings.history_budget
                + settings.keep_last * biggest  # type: ignore[index]
                + sum(fixed.values())
            )
            report["overhead"] = overhead_ms(state, settings)
    on, off = report["on"], report["off"]
    report["saving"] = 1 - on["prompt_tokens_median"] / off["prompt_tokens_median"]  # type: ignore[index]
    print(json.dumps(report, indent=2, ensure_ascii=False))


if __name__ == "__main__":
    main()
