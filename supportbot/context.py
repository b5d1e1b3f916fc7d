"""What the model sees, within a token budget.

Order, as in the seed: reference material (help-center hits, account findings), then ticket
basics → customer profile → pinned facts → early-conversation summary → recent turns → the
customer's latest message, last and labelled (models otherwise answer an earlier question).

When a prompt does not fit, :func:`fit` degrades it one rung at a time: fewer help-center hits,
then shorter account findings. Folding more history needs the summarizer, so the step does that
(see ``steps._prompt``) before giving up with ``ContextBudgetExceeded``. The latest customer
message is never cut. Every prompt reports its size per section (``Prompt.usage``), which the
steps keep in ``state.context_usage`` so operators can see how full the context is.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from .config import Settings
from .guardrails import EVIDENCE_LABEL
from .memory.compress import render_turns
from .memory.facts import SENTENCE_KINDS, render_facts
from .memory.tokens import MESSAGE_OVERHEAD, count_tokens, turn_tokens
from .state import Fact, SupportState

LABELS = {
    "basics": "发件邮箱:{email}\n主题:{subject}",
    "profile": "客户画像:",
    "facts": "已确认的事实(必须以此为准):",
    "summary": "早期对话摘要:",
    "history": "对话记录:",
    "latest": "客户最新消息:",
    "hits": "帮助中心文章:",
    "findings": "账户查询结果:",
    "problems": "上一版草稿的问题:",
    "draft": "草稿:",
    "cut": "(以下内容过长,已截断)",
}

CLASSIFY_PROMPT = (
    "你是客服工单分诊助手。阅读工单,判断类别(billing/refund/invoice/account/technical/plan_change/api/other)、"
    "是否需要查询客户账户数据、是否必须转人工(投诉升级、法律威胁、安全事件、明确要求人工),"
    "用一句话复述客户诉求,并给出检索帮助中心用的查询词(保留错误码和产品名词)。只输出 JSON。"
)
DRAFT_PROMPT = (
    "你是客服。根据帮助中心文章和账户查询结果回复客户最新的消息。引用文章时写出编号,如 [KB-bank-001];"
    "不要承诺数据里没有依据的金额或时间;不要编造。语气礼貌、简洁。"
)
REVIEW_PROMPT = (
    "你是客服质检。检查草稿:是否回答了客户最新的问题、引用是否来自给出的文章、有没有无依据的金额或承诺、"
    "有没有其他客户的数据。只输出 JSON:passed 和 problems。"
)

# Room left in the model's window for its answer: the prompt may use context_window minus this.
ANSWER_RESERVE = 1024


@dataclass(frozen=True, slots=True)
class Trim:
    """One rung of the degradation ladder: how much reference material a prompt may carry."""

    max_hits: int | None = None  # None: all retrieved articles
    findings_tokens: int | None = None  # None: the account findings in full
    sentence_facts: int = 5  # most recent pinned requests/promises shown (ids, codes, amounts: all)


# Fewer hits first (the best hit comes first and stays), then shorter findings.
LADDER: tuple[Trim, ...] = (
    Trim(),
    Trim(max_hits=2),
    Trim(max_hits=1),
    Trim(max_hits=1, findings_tokens=200),
    Trim(max_hits=1, findings_tokens=50),
)
# Once history is folded, older pinned sentences go last; exact ids, codes and amounts never do.
LAST_RUNGS: tuple[Trim, ...] = (
    Trim(max_hits=1, findings_tokens=50, sentence_facts=3),
    Trim(max_hits=1, findings_tokens=50, sentence_facts=0),
)


@dataclass(frozen=True, slots=True)
class Prompt:
    messages: list[dict[str, str]]
    usage: dict[str, int]  # tokens per section, plus "total" and "budget"
    trim: Trim = Trim()

    @property
    def tokens(self) -> int:
        return self.usage["total"]


Builder = Callable[[SupportState, Trim, int], Prompt]


def prompt_budget(settings: Settings) -> int:
    """Tokens a prompt may use: the model's window minus room for its answer."""
    return max(settings.context_window - ANSWER_RESERVE, 0)


def fit(build: Builder, state: SupportState, budget: int, ladder: Sequence[Trim] = LADDER) -> Prompt | None:
    """The first rung of ``ladder`` whose prompt fits ``budget``; None when even the last does not."""
    for trim in ladder:
        prompt = build(state, trim, budget)
        if prompt.tokens <= budget:
            return prompt
    return None


def classify_prompt(state: SupportState, trim: Trim = Trim(), budget: int = 0) -> Prompt:
    return _prompt(CLASSIFY_PROMPT, [], state, trim, budget)


def draft_prompt(state: SupportState, trim: Trim = Trim(), budget: int = 0) -> Prompt:
    sections = _reference(state, trim)
    if state.review is not None and not state.review.passed:
        sections.append(("problems", LABELS["problems"] + "\n" + "\n".join(f"- {p}" for p in state.review.problems)))
    return _prompt(DRAFT_PROMPT, sections, state, trim, budget)


def review_prompt(state: SupportState, trim: Trim = Trim(), budget: int = 0) -> Prompt:
    """The draft, after the articles and findings it was written from: a reviewer asked to catch
    unsupported amounts or another customer's data needs to see what the draft may rely on."""
    evidence = [text for name, text in _reference(state, trim) if name in ("hits", "findings")]
    sections = [("evidence", EVIDENCE_LABEL + "\n" + "\n\n".join(evidence))] if evidence else []
    sections.append(("draft", f"{LABELS['draft']}\n{state.draft}"))
    return _prompt(REVIEW_PROMPT, sections, state, trim, budget)


def over_budget_message(prompt: Prompt, budget: int, settings: Settings) -> str:
    largest = sorted(((n, k) for k, n in prompt.usage.items() if k not in ("total", "budget")), reverse=True)[:3]
    parts = ", ".join(f"{k} {n}" for n, k in largest)
    return (
        f"the prompt needs {prompt.tokens} tokens but may use {budget} (context_window {settings.context_window} "
        f"minus {ANSWER_RESERVE} for the answer), even with one help-center article, shortened findings and the "
        f"history folded into the summary; largest sections: {parts}. Set SUPPORTBOT_CONTEXT_WINDOW to your "
        "model's window if it is larger, or ask the customer for a shorter message"
    )


def ticket_sections(state: SupportState, trim: Trim = Trim()) -> list[tuple[str, str]]:
    """The ticket part of every prompt, in the seed's order, the latest message last."""
    t = state.ticket
    sections = [("basics", LABELS["basics"].format(email=t.customer_email, subject=t.subject))]
    if state.profile:
        sections.append(("profile", LABELS["profile"] + state.profile))
    if facts := pinned_facts(state, trim.sentence_facts):
        sections.append(("facts", LABELS["facts"] + "\n" + render_facts(facts)))
    if state.summary:
        sections.append(("summary", LABELS["summary"] + "\n" + state.summary))
    latest = state.latest_customer_message
    history = [turn for turn in state.turns[state.summarized_upto:] if turn is not latest]
    if history:
        sections.append(("history", LABELS["history"] + "\n" + render_turns(history)))
    sections.append(("latest", LABELS["latest"] + (latest.content if latest else t.body)))
    return sections


def pinned_facts(state: SupportState, sentence_limit: int) -> list[Fact]:
    """Every exact fact (id, code, amount, date); requests and promises only from folded turns
    (newer ones are in the history verbatim), the most recent ``sentence_limit`` of them."""
    sentences = [f for f in state.facts if f.kind in SENTENCE_KINDS and f.turn < state.summarized_upto]
    shown = set(map(id, sentences[len(sentences) - sentence_limit:] if sentence_limit else []))
    return [f for f in state.facts if f.kind not in SENTENCE_KINDS or id(f) in shown]


def ticket_text(state: SupportState) -> str:
    return "\n\n".join(text for _, text in ticket_sections(state))


def _reference(state: SupportState, trim: Trim) -> list[tuple[str, str]]:
    sections = []
    hits = state.hits if trim.max_hits is None else state.hits[: trim.max_hits]
    if hits:
        sections.append(("hits", LABELS["hits"] + "\n" + "\n".join(f"[{h.id}] {h.title}:{h.body}" for h in hits)))
    if state.findings:
        findings = state.findings
        if trim.findings_tokens is not None:
            findings = _clip_tokens(findings, trim.findings_tokens)
        sections.append(("findings", LABELS["findings"] + "\n" + findings))
    return sections


def _prompt(system: str, reference: list[tuple[str, str]], state: SupportState, trim: Trim, budget: int) -> Prompt:
    sections = [*reference, *ticket_sections(state, trim)]
    usage = {"system": _tokens(system) + MESSAGE_OVERHEAD}
    for name, text in sections:
        usage[name] = _stored_tokens(state, name) if name in ("history", "latest") else _tokens(text)
    # +1 per section for the blank line that joins it to the next.
    usage["total"] = sum(usage.values()) + MESSAGE_OVERHEAD + len(sections)
    usage["budget"] = budget
    body = "\n\n".join(text for _, text in sections)
    return Prompt([{"role": "system", "content": system}, {"role": "user", "content": body}], usage, trim)


def _stored_tokens(state: SupportState, section: str) -> int:
    # Each turn's count is stored with it (a turn never changes), so the conversation costs no
    # counting here; the label in front of each turn is within MESSAGE_OVERHEAD.
    latest = state.latest_customer_message
    if section == "latest":
        return turn_tokens(latest) if latest else _tokens(state.ticket.body)
    return sum(turn_tokens(t) for t in state.turns[state.summarized_upto:] if t is not latest)


@functools.lru_cache(maxsize=512)
def _tokens(text: str) -> int:
    # Sections repeat within a round (three prompts share the ticket part) and across rounds
    # (profile, articles), so each distinct text is counted once.
    return count_tokens(text)


def _clip_tokens(text: str, limit: int) -> str:
    if _tokens(text) <= limit:
        return text
    lines, kept = text.splitlines(), []
    for line in lines:
        if _tokens("\n".join([*kept, line])) > limit:
            break
        kept.append(line)
    return "\n".join(kept) + "\n" + LABELS["cut"]
