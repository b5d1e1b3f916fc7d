"""A deterministic offline model: keyword triage, replies composed from help-center articles,
review by rules, extractive summaries.

It is not AI. It lets the CLI, the demo and the tests run with no API key and no network. It reads
the records the prompts are rendered from (``prompts.PromptSections``, attached to a prompt's
user message by ``supportbot.context``) rather than the prose a real model reads, so the whole
pipeline is exercised without parsing text back. Same messages in, same completion out: nothing
here depends on time, randomness or set ordering.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from pydantic import BaseModel

from .._records import MODEL_ONLY, REFUND_OUTCOMES, Finding
from .._state import Review, Triage, Turn
from ..errors import ModelError
from ..i18n._prompts import SECTIONS, PromptSections, SummarySections, is_english, problem_words
from ..memory._compress import SUMMARY_PROMPTS, extractive_summarize
from ..memory._tokens import MESSAGE_OVERHEAD, count_tokens
from ..reply import _guardrails as guardrails
from ..reply._findings import render_line
from ..reply._search import terms
from .base import Completion, Message, Usage

__all__ = ["OfflineModel", "compose_reply", "review", "sections_of", "summarize", "triage"]

# (category, words that signal it, help-center terms to search with). Checked in order: the first
# category with a matching word wins, so the more specific requests come first.
_CATEGORIES: tuple[tuple[str, tuple[str, ...], str], ...] = (
    (
        "refund",
        (
            "退款",
            "退钱",
            "退费",
            "退我",
            "把钱退",
            "想退",
            "要退",
            "申请退",
            "帮我退",
            "能不能退",
            "refund",
            "money back",
            "chargeback",
        ),
        "退款",
    ),
    (
        "invoice",
        ("发票", "抬头", "税号", "开票", "红冲", "专票", "invoice", "receipt", "tax id", "vat"),
        "发票",
    ),
    (
        "technical",
        ("同步", "流水", "银行", "对账单", "授权", "sync", "bank", "statement", "transactions"),
        "银行 流水 同步",
    ),
    ("api", ("api", "接口", "密钥", "webhook", "回调", "限流", "速率", "rate limit", "429"), "API 密钥 速率"),
    (
        "account",
        (
            "密码",
            "登录",
            "登不上",
            "账号",
            "验证码",
            "两步验证",
            "锁定",
            "成员",
            "权限",
            "password",
            "log in",
            "login",
            "sign in",
            "2fa",
            "two-factor",
            "verification code",
            "locked",
            "team member",
        ),
        "密码 登录 验证码",
    ),
    (
        "plan_change",
        (
            "升级",
            "降级",
            "套餐",
            "年付",
            "月付",
            "自动续费",
            "取消订阅",
            "upgrade",
            "downgrade",
            "plan",
            "cancel my subscription",
            "auto-renew",
            "annual",
            "monthly",
        ),
        "套餐 升级 降级",
    ),
    (
        "billing",
        (
            "扣费",
            "扣款",
            "账单",
            "续费",
            "收费",
            "多扣",
            "付款",
            "charge",
            "charged",
            "billing",
            "bill",
            "payment",
        ),
        "账单 扣费",
    ),
)
# Extra search terms for English words, because the help center is written in Chinese.
_GLOSSARY: tuple[tuple[str, str], ...] = (
    ("refund", "退款 退款政策"),
    ("invoice", "发票"),
    ("tax id", "纳税人识别号"),
    ("bank", "银行"),
    ("sync", "同步"),
    ("statement", "流水"),
    ("authoriz", "授权"),
    ("password", "忘记密码"),
    ("2fa", "两步验证"),
    ("two-factor", "两步验证"),
    ("verification code", "验证码"),
    ("locked", "账户被锁定"),
    ("api key", "API 密钥"),
    ("rate limit", "速率限制"),
    ("webhook", "Webhook 回调"),
    ("upgrade", "升级套餐"),
    ("downgrade", "降级套餐"),
    ("cancel", "取消自动续费"),
    ("price", "套餐与价格"),
    ("plan", "套餐"),
    ("missing", "缺失"),
    ("duplicate", "重复"),
    ("team", "团队成员"),
)
_HUMAN_WORDS = (
    "转人工",
    "人工客服",
    "找人工",
    "真人",
    "投诉",
    "律师",
    "起诉",
    "报警",
    "消协",
    "12315",
    "曝光",
    "被盗",
    "盗刷",
    "盗号",
    "human agent",
    "real person",
    "talk to a human",
    "speak to a human",
    "speak to someone",
    "lawyer",
    "complaint",
    "sue ",
    "legal action",
    "hacked",
    "fraud",
)
_URGENT_WORDS = ("紧急", "十万火急", "马上", "立刻", "尽快", "urgent", "asap", "immediately")
_ACCOUNT_CATEGORIES = {"refund", "billing", "plan_change", "invoice"}
_ERROR_CODE = re.compile(r"(?<![A-Za-z0-9])E[0-9]{4}(?![0-9])", re.IGNORECASE)
_SENTENCE = re.compile(r"[^。!?!?\n]+[。!?!?]?")
_ACTION = re.compile(r"请|点击|进入|可以在|可以使用|需要|建议|please|click|go to", re.IGNORECASE)
_WANTS_BILLS = re.compile(r"账单|扣|发票|invoice|charge|bill", re.IGNORECASE)

MAX_ARTICLES = 3
# A summary request is known by its instructions, in any language: a request from another caller
# carries no records to tell it by.
_SUMMARY_SYSTEMS = frozenset(prompt.strip() for prompt in SUMMARY_PROMPTS.values())


class OfflineModel:
    """Deterministic stand-in for a chat model; same input, same output; costs nothing."""

    model = "offline"

    def __init__(self, *, on_token: Callable[[str], None] | None = None) -> None:
        self._on_token = on_token  # free-text replies are passed on line by line, like a stream

    def __repr__(self) -> str:
        return "OfflineModel()"

    def chat(
        self, messages: Sequence[Message], *, schema: type[BaseModel] | None = None, temperature: float = 0.0
    ) -> Completion:
        system = messages[0]["content"] if messages and messages[0].get("role") == "system" else ""
        message = messages[-1] if messages else {"role": "user", "content": ""}
        shown = sections_of(message)
        if schema is Triage:
            parsed: BaseModel = triage(shown.latest.strip())
        elif schema is Review:
            parsed = review(shown)
        elif schema is not None:
            raise ModelError(f"the offline model cannot produce {schema.__name__}; configure a real model")
        elif system.strip() in _SUMMARY_SYSTEMS:
            text = summarize(_summary_request(message))
            return Completion(text=text, usage=_usage(messages, text), model=self.model)
        else:
            text = compose_reply(shown)
            if self._on_token is not None:
                for piece in text.splitlines(keepends=True):
                    self._on_token(piece)
            return Completion(text=text, usage=_usage(messages, text), model=self.model)
        text = parsed.model_dump_json()
        return Completion(text=text, parsed=parsed, usage=_usage(messages, text), model=self.model)


# -- triage ---------------------------------------------------------------------------------------


class AsyncOfflineModel:
    """``OfflineModel`` for ``AsyncSupportBot`` (``AsyncLLM``): it computes its answer at once, with
    no I/O to wait for."""

    model = "offline"

    def __init__(self, *, on_token: Callable[[str], None] | None = None) -> None:
        self._model = OfflineModel(on_token=on_token)

    def __repr__(self) -> str:
        return "AsyncOfflineModel()"

    async def chat(
        self,
        messages: Sequence[Message],
        *,
        schema: type[BaseModel] | None = None,
        temperature: float = 0.0,
    ) -> Completion:
        return self._model.chat(messages, schema=schema, temperature=temperature)


def sections_of(message: Message) -> PromptSections:
    """What a prompt's sections show (``prompts.PromptSections``); a message that carries none, from
    another caller, is taken as the customer's message alone."""
    shown = message.get(SECTIONS)
    return shown if isinstance(shown, PromptSections) else PromptSections(latest=str(message["content"]))


def triage(message: str) -> Triage:
    """Category, account need, handoff and search terms from keywords in Chinese and English."""
    lowered = message.lower()
    codes = sorted({c.upper() for c in _ERROR_CODE.findall(message)})
    category = next((c for c, words, _ in _CATEGORIES if _has_any(lowered, words)), None)
    if category is None or (category in ("account", "billing", "plan_change") and codes):
        # An error code says more than a generic word: E3xxx are bank sync, E2xxx the API.
        category = "technical" if any(c.startswith("E3") for c in codes) else "api" if codes else category
    category = category or "other"
    needs_human = _has_any(lowered, _HUMAN_WORDS)
    return Triage(
        category=category,  # type: ignore[arg-type]
        needs_account_data=category in _ACCOUNT_CATEGORIES,
        needs_human=needs_human,
        urgency="high" if needs_human or _has_any(lowered, _URGENT_WORDS) else "normal",
        summary=_first_sentence(message)[:60],
        search_query=" ".join(dict.fromkeys([*codes, *_search_terms(lowered), message[:80]])),
    )


def _search_terms(lowered: str) -> list[str]:
    found = [zh for _, words, zh in _CATEGORIES if _has_any(lowered, words)]
    found += [zh for en, zh in _GLOSSARY if en in lowered]
    return found


def _has_any(lowered: str, words: Sequence[str]) -> bool:
    for word in words:
        if word.isascii() and word.strip().isalnum():
            # Whole words only, so "plan" does not fire inside "explanation".
            if re.search(rf"(?<![a-z]){re.escape(word.strip())}(?![a-z])", lowered):
                return True
        elif word in lowered:
            return True
    return False


# -- drafting -------------------------------------------------------------------------------------


def compose_reply(shown: PromptSections) -> str:
    """A reply from the offered articles (each cited), the account findings and a closing line.

    English when the customer wrote in English; the help center is Chinese, so quoted article
    sentences stay as written.
    """
    latest = shown.latest.strip()
    english = is_english(latest)
    if shown.reviewer_note:
        return _relay(shown.reviewer_note, english=english)
    chosen = _relevant([(h.id, h.title.strip(), h.body.strip()) for h in shown.hits], latest)
    lines = ["Hello!" if english else "您好!"]
    for n, (article_id, title, body) in enumerate(chosen):
        sentences = _key_sentences(body, latest, limit=3 if n == 0 else 2)
        if english:
            lead = "Regarding" if n == 0 else "See also"
            lines.append(f"{lead} “{title}”: {''.join(sentences)} [{article_id}]")
        else:
            lead = "关于" if n == 0 else "另请参考"
            lines.append(f"{lead}「{title}」:{''.join(sentences)} [{article_id}]")
    if not chosen:
        lines.append(
            "We have received your question and are looking into it."
            if english
            else "我们已收到您的问题,正在为您核实。"
        )
    account = _account_lines(shown.findings, latest, english=english)
    if account:
        lines.append("Your account:" if english else "您的账户信息:")
        lines += [f"- {line}" for line in account]
    lines.append(
        "If you have any other questions, just reply to this message."
        if english
        else "如果还有问题,欢迎随时回复。"
    )
    return "\n".join(lines)


def _relay(note: str, *, english: bool) -> str:
    """The offline model's answer to a reviewer's note: it is no writer, so it passes the note on
    as the reviewer wrote it, saying that the refund is still being reviewed."""
    if english:
        return (
            f"Hello! Your refund request is still being reviewed. Our reviewer asks: {note.strip()}\n"
            "Please reply to this message."
        )
    return f"您好!您的退款申请还在审核中。审核同事需要您确认:{note.strip()}\n请直接回复本工单。"


def _relevant(articles: list[tuple[str, str, str]], latest: str) -> list[tuple[str, str, str]]:
    """The best article, plus others whose titles share at least two terms with the question and
    do not concern a different error code."""
    if not articles:
        return []
    codes = {c.upper() for c in _ERROR_CODE.findall(latest)}
    # The question's own words (English ones translated), not the category's search terms: those
    # would make every article of the category look relevant.
    lowered = latest.lower()
    asked = set(terms(" ".join([latest, *(zh for en, zh in _GLOSSARY if en in lowered)])))
    chosen = [articles[0]]
    for article in articles[1:]:
        title_codes = {c.upper() for c in _ERROR_CODE.findall(article[1])}
        if codes and title_codes and not title_codes & codes:
            continue
        if len(asked & set(terms(article[1]))) >= 2 or (title_codes & codes):
            chosen.append(article)
        if len(chosen) == MAX_ARTICLES:
            break
    return chosen


def _key_sentences(body: str, latest: str, *, limit: int) -> list[str]:
    """The first sentence, those naming the customer's error code, and the first instruction."""
    sentences = [s.strip() for s in _SENTENCE.findall(body) if s.strip()]
    if not sentences:
        return []
    codes = {c.upper() for c in _ERROR_CODE.findall(latest)}
    keep = {0}
    keep |= {i for i, s in enumerate(sentences) if codes & {c.upper() for c in _ERROR_CODE.findall(s)}}
    action = next((i for i, s in enumerate(sentences) if i and _ACTION.search(s)), None)
    if action is not None:
        keep.add(action)
    return [sentences[i] for i in sorted(keep)[:limit]]


def _account_lines(found: Sequence[Finding], latest: str, *, english: bool) -> list[str]:
    """The findings a customer is told: the account, invoices when asked about, the outcome of a
    refund request (in English for an English question); never what is for the model only."""
    wants_bills = bool(_WANTS_BILLS.search(latest))
    lines = []
    for finding in found:
        outcome = finding.kind in REFUND_OUTCOMES
        if finding.kind in MODEL_ONLY or (finding.kind == "invoice" and not wants_bills):
            continue
        text = render_line(finding, "en" if english and outcome else "zh")
        if outcome and not english:
            text = text.replace("客户申请", "您申请")
        lines += [line.strip() for line in text.splitlines() if line.strip()]
    return lines


# -- review ---------------------------------------------------------------------------------------


def review(shown: PromptSections) -> Review:
    """The draft of a review prompt, judged by ``guardrails.draft_problems`` against the rest of it.

    Amounts, time limits and identifiers are checked only when the prompt carries the evidence
    (``PromptSections.evidence``); without it a right draft quoting an invoice would be refused.
    """
    if shown.draft is None:
        return Review(passed=False, problems=[problem_words(shown.language)["no_draft"]])
    problems = guardrails.draft_problems(
        shown.draft.strip(),
        known_articles={h.id for h in shown.hits},
        evidence=shown.evidence or "",
        check_facts=shown.evidence is not None,
        lang=shown.language,
    )
    return Review(passed=not problems, problems=problems)


# -- summaries ------------------------------------------------------------------------------------


def summarize(request: SummarySections) -> str:
    """An extractive summary for a ``memory.compress.summary_messages`` request."""
    if request.turns is None:  # the condense-only pass: the summary's lines, less the replaced ones
        return extractive_summarize(request.previous, ())
    return extractive_summarize(request.previous, request.turns, lang=request.language)


def _summary_request(message: Message) -> SummarySections:
    request = message.get(SECTIONS)
    if isinstance(request, SummarySections):
        return request
    # Not a request of ours: the whole text as the customer's words.
    return SummarySections(previous="", turns=(Turn(role="customer", content=str(message["content"])),))


def _first_sentence(text: str) -> str:
    found = _SENTENCE.findall(text.strip())
    return found[0].strip() if found else text.strip()


def _usage(messages: Sequence[Message], text: str) -> Usage:
    # Counted like a real chat model's usage, so per-round token figures mean the same offline.
    prompt = sum(count_tokens(m["content"]) + MESSAGE_OVERHEAD for m in messages)
    return Usage(prompt_tokens=prompt, completion_tokens=count_tokens(text))
