"""What the model sees: the ticket, the customer, pinned facts, the summary, recent turns and,
last and labelled, the customer's latest message (models otherwise answer an earlier question)."""

from __future__ import annotations

from collections.abc import Sequence

from .state import SupportState, Turn

LABELS = {
    "customer": "客户",
    "agent": "客服",
    "basics": "发件邮箱:{email}\n主题:{subject}",
    "profile": "客户画像:",
    "facts": "已确认的事实(必须以此为准):",
    "summary": "早期对话摘要:",
    "history": "对话记录:",
    "latest": "客户最新消息:",
    "hits": "帮助中心文章:",
    "findings": "账户查询结果:",
    "problems": "上一版草稿的问题:",
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


def render_turns(turns: Sequence[Turn]) -> str:
    return "\n".join(f"{LABELS[t.role]}:{t.content}" for t in turns)


def ticket_text(state: SupportState) -> str:
    t = state.ticket
    parts = [LABELS["basics"].format(email=t.customer_email, subject=t.subject)]
    if state.profile:
        parts.append(LABELS["profile"] + state.profile)
    if state.facts:
        parts.append(LABELS["facts"] + "\n" + "\n".join(f"- {f.kind}: {f.value}" for f in state.facts))
    if state.summary:
        parts.append(LABELS["summary"] + "\n" + state.summary)
    latest = state.latest_customer_message
    history = [turn for turn in state.turns[state.summarized_upto:] if turn is not latest]
    if history:
        parts.append(LABELS["history"] + "\n" + render_turns(history))
    parts.append(LABELS["latest"] + (latest.content if latest else t.body))
    return "\n\n".join(parts)


def classify_messages(state: SupportState) -> list[dict[str, str]]:
    return [{"role": "system", "content": CLASSIFY_PROMPT}, {"role": "user", "content": ticket_text(state)}]


def draft_messages(state: SupportState) -> list[dict[str, str]]:
    extra = []
    if state.hits:
        extra.append(LABELS["hits"] + "\n" + "\n".join(f"[{h.id}] {h.title}:{h.body}" for h in state.hits))
    if state.findings:
        extra.append(LABELS["findings"] + "\n" + state.findings)
    if state.review is not None and not state.review.passed:
        extra.append(LABELS["problems"] + "\n" + "\n".join(f"- {p}" for p in state.review.problems))
    # The latest message stays last: reference material goes before the ticket text.
    body = "\n\n".join([*extra, ticket_text(state)])
    return [{"role": "system", "content": DRAFT_PROMPT}, {"role": "user", "content": body}]


def review_messages(state: SupportState) -> list[dict[str, str]]:
    cited = "\n".join(f"[{h.id}] {h.title}" for h in state.hits) or "(无)"
    body = f"{LABELS['hits']}\n{cited}\n\n草稿:\n{state.draft}\n\n{ticket_text(state)}"
    return [{"role": "system", "content": REVIEW_PROMPT}, {"role": "user", "content": body}]
