"""A deterministic offline model: keyword triage, replies composed from help-center articles.

It is not AI. It lets the CLI, the demo and the tests run with no API key and no network, and
it reads the same prompts a real model would, so the whole pipeline is exercised.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from pydantic import BaseModel

from ..errors import ModelError
from ..state import Review, Triage
from .base import Completion, Message, Usage

_CATEGORY_WORDS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("refund", ("退款", "退钱", "退费", "refund", "money back")),
    ("invoice", ("发票", "抬头", "invoice")),
    ("technical", ("同步", "银行", "流水", "报错", "sync", "bank", "error")),
    ("plan_change", ("升级", "降级", "套餐", "upgrade", "downgrade", "plan")),
    ("account", ("密码", "登录", "账号", "验证码", "password", "login", "2fa")),
    ("api", ("api", "接口", "密钥", "rate limit", "token")),
    ("billing", ("扣费", "账单", "续费", "扣款", "charge", "bill", "billing")),
)
_HUMAN_WORDS = ("转人工", "人工客服", "投诉", "律师", "起诉", "报警", "human agent", "lawyer", "complaint", "sue ")
_ACCOUNT_CATEGORIES = {"refund", "billing", "plan_change", "invoice"}
_ERROR_CODE = re.compile(r"\bE\d{4}\b")
_ARTICLE = re.compile(r"^\[(KB-[A-Za-z0-9-]+)\] ([^:]+):(.*)$", re.MULTILINE)
_SENTENCE = re.compile(r"[^。!?!?\n]+[。!?!?]?")

LATEST_LABEL = "客户最新消息:"


class OfflineModel:
    """Deterministic stand-in for a chat model; same input, same output."""

    model = "offline"

    def __init__(self, *, on_token: Callable[[str], None] | None = None) -> None:
        self._on_token = on_token  # free-text replies are passed on line by line, like a stream

    def chat(
        self, messages: Sequence[Message], *, schema: type[BaseModel] | None = None, temperature: float = 0.0
    ) -> Completion:
        prompt = messages[-1]["content"] if messages else ""
        if schema is Triage:
            parsed: BaseModel = triage(latest_message(prompt))
        elif schema is Review:
            parsed = Review(passed=bool(prompt.strip()), problems=[])
        elif schema is not None:
            raise ModelError(f"the offline model cannot produce {schema.__name__}; configure a real model")
        else:
            text = compose_reply(prompt)
            if self._on_token is not None:
                for piece in text.splitlines(keepends=True):
                    self._on_token(piece)
            return Completion(text=text, usage=_usage(messages, text), model=self.model)
        text = parsed.model_dump_json()
        return Completion(text=text, parsed=parsed, usage=_usage(messages, text), model=self.model)


def latest_message(prompt: str) -> str:
    at = prompt.rfind(LATEST_LABEL)
    return prompt[at + len(LATEST_LABEL):].strip() if at >= 0 else prompt.strip()


def triage(message: str) -> Triage:
    lowered = message.lower()
    category = next((c for c, words in _CATEGORY_WORDS if any(w in lowered for w in words)), "other")
    codes = _ERROR_CODE.findall(message)
    query = " ".join([*codes, message[:60]])
    return Triage(
        category=category,  # type: ignore[arg-type]
        needs_account_data=category in _ACCOUNT_CATEGORIES,
        needs_human=any(w in lowered for w in _HUMAN_WORDS),
        urgency="high" if "紧急" in message or "urgent" in lowered else "normal",
        summary=message[:40],
        search_query=query,
    )


def compose_reply(prompt: str) -> str:
    """A reply built from the top article's first sentences, citing it, plus account findings."""
    lines = ["您好!"]
    article = _ARTICLE.search(prompt)
    if article:
        sentences = _SENTENCE.findall(article[3].strip())[:2]
        lines.append(f"关于「{article[2].strip()}」:{''.join(sentences).strip()} [{article[1]}]")
    else:
        lines.append("我们已收到您的问题,正在为您核实。")
    for line in prompt.splitlines():
        if line.startswith(("已创建退款申请", "客户申请退款", "没有可退款")):
            lines.append(line.replace("客户申请", "您申请"))
    lines.append("如果还有问题,欢迎随时回复。")
    return "\n".join(lines)


def _usage(messages: Sequence[Message], text: str) -> Usage:
    # Characters, not tokens: the offline model costs nothing, this only shows relative size.
    return Usage(prompt_tokens=sum(len(m["content"]) for m in messages), completion_tokens=len(text))
