"""A scripted model that records every prompt, and a small business dataset for engine tests."""

from __future__ import annotations

import asyncio
import re
import threading
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import psycopg
from psycopg import sql
from pydantic import BaseModel

from supportbot._state import Review, Triage
from supportbot.i18n._prompts import section_labels
from supportbot.llm.base import Completion, Message, Usage
from supportbot.memory._compress import SUMMARY_PROMPTS

TECH = Triage(
    category="technical",
    needs_account_data=False,
    needs_human=False,
    urgency="normal",
    summary="银行同步失败",
    search_query="E3001 银行流水同步失败",
)
REFUND = Triage(
    category="refund",
    needs_account_data=True,
    needs_human=False,
    urgency="normal",
    summary="申请退款",
    search_query="退款 年付",
)
HUMAN = Triage(
    category="other",
    needs_account_data=False,
    needs_human=True,
    urgency="high",
    summary="要求人工",
    search_query="人工",
)


T = TypeVar("T")


def latest_part(prompt: str) -> str:
    """The prompt from its latest-message label on: what a script looks at to choose its answer."""
    at = max(prompt.rfind(section_labels(lang)["latest"]) for lang in ("zh", "en"))
    return prompt[at:]


def is_summary_request(messages: Sequence[Message]) -> bool:
    """Whether ``messages`` ask for a summary: its instructions, in any ticket's language."""
    return messages[0]["content"] in SUMMARY_PROMPTS.values()


def refund_if_asked(prompt: str) -> Triage:
    """REFUND when the customer's latest message asks for one, else TECH."""
    return REFUND if "退款" in latest_part(prompt) else TECH


def cite_hits(prompt: str) -> str:
    """A draft that cites exactly the articles the prompt offers."""
    ids = sorted(set(re.findall(r"^\[(KB-[\w-]+)\]", prompt, re.MULTILINE)))
    return "您好,请按文章操作 " + " ".join(f"[{i}]" for i in ids) + "。"


class ScriptedLLM:
    """Answers by script: a triage, drafts and reviews chosen from the prompt; keeps every prompt."""

    def __init__(
        self,
        *,
        triage: Triage | Callable[[str], Triage] = TECH,
        draft: str | Callable[[str], str] = "您好,E3001 是银行授权过期,请重新授权 [KB-bank-001]。",
        review: Callable[[str], Review] | None = None,
        summary: Callable[[str], str] | None = None,
        cost: float = 0.0,
    ) -> None:
        self.triage = triage  # what it classifies; a test may change its mind mid-ticket
        self._draft, self._review, self._cost = draft, review, cost
        self._summary = summary or (lambda prompt: "客户反映的问题见下方事实清单。")
        self.summary_calls = 0
        self.prompts: list[list[dict[str, str]]] = []
        self._lock = threading.Lock()

    def before(self, schema: type[BaseModel] | None) -> None:
        """Called as each request arrives, before it is answered (a draft asks with no schema):
        where a test's model fails, waits or dies."""

    def chat(
        self, messages: Sequence[Message], *, schema: type[BaseModel] | None = None, temperature: float = 0.0
    ) -> Completion:
        self.before(schema)
        with self._lock:
            self.prompts.append([dict(m) for m in messages])
        prompt = messages[-1]["content"]
        parsed: Any
        if is_summary_request(messages):
            with self._lock:
                self.summary_calls += 1
            text = self._summary(prompt)
            return Completion(text=text, usage=Usage(len(prompt), len(text)), cost=self._cost)
        if schema is Triage:
            parsed = self.triage(prompt) if callable(self.triage) else self.triage
        elif schema is Review:
            parsed = self._review(prompt) if self._review else Review(passed=True)
        else:
            text = self._draft(prompt) if callable(self._draft) else self._draft
            return Completion(text=text, usage=Usage(len(prompt), len(text)), cost=self._cost)
        return Completion(
            text=parsed.model_dump_json(), parsed=parsed, usage=Usage(len(prompt), 10), cost=self._cost
        )

    def user_prompts(self) -> list[str]:
        return [p[-1]["content"] for p in self.prompts if not is_summary_request(p)]


def seed_business(conn: psycopg.Connection) -> None:
    """Two customers, a paid annual invoice and the articles the scripted drafts cite."""
    with conn.transaction():
        conn.execute(
            "INSERT INTO demo.customers (id, name, company, email, phone, is_vip, created_at) VALUES"
            " ('C9001', '吴刚', '刚记贸易', 'wugang@example.com', '13800001234', true, '2025-01-10'),"
            " ('C9002', '李娜', '娜娜工作室', 'lina@example.com', '13900005678', false, '2025-03-02')"
        )
        conn.execute(
            "INSERT INTO demo.subscriptions VALUES"
            " ('S9001', 'C9001', '专业版', '年付', 'active', '2025-10-01', '2026-10-01', 3588.00),"
            " ('S9002', 'C9002', '基础版', '月付', 'active', '2026-08-01', '2026-12-01', 99.00)"
        )
        conn.execute(
            "INSERT INTO demo.invoices VALUES"
            " ('INV-9001', 'C9001', 'S9001', 3588.00, 'CNY', '2026-10-01', 'paid'),"
            " ('INV-9002', 'C9002', 'S9002', 99.00, 'CNY', '2026-11-01', 'paid')"
        )
        conn.execute(
            "INSERT INTO demo.kb_articles VALUES"
            " ('KB-bank-001', '银行流水同步失败 E3001', 'bank',"
            " 'E3001 表示银行授权已过期,授权有效期为 90 天。请在设置中重新授权银行账户。',"
            " 'https://help.example.com/kb/KB-bank-001'),"
            " ('KB-refund-001', '退款政策', 'refund',"
            " '年付套餐在付款后 30 天内可按比例退款,退款需人工审批。',"
            " 'https://help.example.com/kb/KB-refund-001')"
        )


def rows(url: str, query: str, *params: object) -> list[tuple[Any, ...]]:
    """The rows a query returns, on a connection of its own."""
    with psycopg.connect(url) as conn:
        return conn.execute(query, params).fetchall()


def scalar(
    conn: psycopg.Connection, query: str | sql.Composed, params: Sequence[object] | None = None
) -> Any:
    """The first column of the one row a query returns."""
    row = conn.execute(query, params).fetchone()
    assert row is not None, query
    return row[0]


# -- input hygiene: what a refused call must leave unchanged ---------------------------------------


def row_counts(conn: psycopg.Connection) -> dict[str, int]:
    """Rows of every table in the supportbot and demo schemas, found in the catalog (so a table a
    later migration adds is counted too)."""
    tables = conn.execute(
        "SELECT schemaname, tablename FROM pg_tables WHERE schemaname IN ('supportbot', 'demo')"
        " ORDER BY schemaname, tablename"
    ).fetchall()
    counts = sql.SQL(" UNION ALL ").join(
        sql.SQL("SELECT {}, count(*) FROM {}").format(sql.Literal(f"{s}.{t}"), sql.Identifier(s, t))
        for s, t in tables
    )
    return {name: int(n) for name, n in conn.execute(counts).fetchall()}


class AsyncModel:
    """A synchronous test model (ScriptedLLM, the offline model) as an ``AsyncLLM``: the same
    answers and records, awaited; ``delay`` seconds of (asynchronous) latency per call."""

    def __init__(self, inner: Any, *, delay: float = 0.0, threaded: bool = True) -> None:
        self.inner, self.delay, self.threaded = inner, delay, threaded

    async def chat(
        self, messages: Sequence[Message], *, schema: type[BaseModel] | None = None, temperature: float = 0.0
    ) -> Completion:
        if self.delay:
            await asyncio.sleep(self.delay)
        if not self.threaded:  # a model that never blocks: answered on the loop
            answered: Completion = self.inner.chat(messages, schema=schema, temperature=temperature)
            return answered
        # In a thread: a test's model may block on purpose (a round held mid-flight while the test
        # acts), which on the loop itself would stop every other call. The bot starts no thread.
        completion: Completion = await asyncio.to_thread(
            self.inner.chat, messages, schema=schema, temperature=temperature
        )
        return completion

    def __getattr__(self, name: str) -> Any:  # prompts, summary_calls, user_prompts()
        return getattr(self.inner, name)


def present(value: T | None) -> T:
    """``value``, failing the test where it is None (a field a ticket in this state must have)."""
    assert value is not None
    return value
