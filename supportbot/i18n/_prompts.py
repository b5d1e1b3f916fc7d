"""The words prompts are made of, and the language a customer writes in.

The labels that head each section of a prompt, the speaker labels of a rendered conversation and
the layout of a summary request live here, once: the context builder, the guardrails and
compression write with them, and the test fakes find their way in a prompt with them. A label
changed here changes everywhere at once.

A prompt also carries the records its sections were rendered from (:class:`PromptSections`,
:class:`SummarySections`, under the ``SECTIONS`` key of its user message): the offline model
reads those, so no code parses the prose back.

:func:`is_english` decides the language of a reply: the offline model writes English to a customer
who wrote English, and so do the system's own messages (a handoff, a refund decision).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from .._records import Finding, Hit
from .._state import Role, Turn

__all__ = [
    "EVIDENCE_LABEL",
    "LABELS",
    "NO_SUMMARY",
    "ROLES_BY_LABEL",
    "SECTIONS",
    "SPEAKER_LABELS",
    "SUMMARY_NEW_LABEL",
    "SUMMARY_PREVIOUS_LABEL",
    "PromptSections",
    "SummarySections",
    "is_english",
]

# The sections of the classify, draft and review prompts (see supportbot.context).
LABELS: Mapping[str, str] = {
    "basics": "发件邮箱:{email}\n主题:{subject}",
    "profile": "客户画像:",
    # The facts are the customer's word unless marked as the agent's (ledger.AGENT_MARK): a
    # customer must not be able to write something that reads as confirmed by us.
    "facts": "钉住的事实(从对话原样摘录,数字以此为准;标[客服]的是客服所说,其余是客户所说、未经核实):",
    "summary": "早期对话摘要:",
    "history": "对话记录:",
    "latest": "客户最新消息:",
    "hits": "帮助中心文章:",
    "findings": "账户查询结果:",
    "problems": "上一版草稿的问题:",
    # A reviewer's note on the paused refund: what the agent should ask or tell the customer.
    "reviewer": "审核同事的留言(据此回复客户;退款仍在审核,不要说已批准或已拒绝):",
    "draft": "草稿:",
    "cut": "(以下内容过长,已截断)",
}
# Heads the section of a review prompt that holds the data a draft must agree with.
EVIDENCE_LABEL = "核对用资料(金额、时限和单号须与此一致):"

# Who said a line of a rendered conversation (memory.compress.render_turns), and back.
SPEAKER_LABELS: Mapping[str, str] = {"customer": "客户", "agent": "客服"}
ROLES_BY_LABEL: Mapping[str, Role] = {"客户": "customer", "客服": "agent"}

# The two parts of a summary request (memory.compress.summary_messages).
SUMMARY_PREVIOUS_LABEL = "已有纪要:"
SUMMARY_NEW_LABEL = "新增对话:"
NO_SUMMARY = "(无)"

# The key of a prompt's user message under which its PromptSections travel (never sent by a client).
SECTIONS = "sections"


@dataclass(frozen=True, slots=True)
class PromptSections:
    """What a prompt's sections show, as records: the context builder attaches them to the user
    message (under ``SECTIONS``) beside the prose it rendered from them, so a model that reads
    structure (the offline model) never parses the prose back. Only what the prompt shows: the
    hits and findings left after trimming, the draft and evidence only in a review prompt."""

    latest: str  # the customer's latest message
    hits: tuple[Hit, ...] = ()
    findings: tuple[Finding, ...] = ()
    draft: str | None = None  # the draft under review
    evidence: str | None = None  # a review prompt's text without the draft, when it has evidence
    reviewer_note: str | None = None  # a reviewer's note the reply answers from (SupportBot.respond)


@dataclass(frozen=True, slots=True)
class SummarySections:
    """What a summary request shows, as records (attached like ``PromptSections``): the summary so
    far (stripped; "" for none) and the turns to merge into it, or None for a request to condense
    the summary alone."""

    previous: str
    turns: tuple[Turn, ...] | None


_CJK = re.compile(r"[\u3400-\u9fff]")
_LATIN_WORD = re.compile(r"[A-Za-z]{2,}")


def is_english(text: str) -> bool:
    """True for a message in English: Latin words and no Chinese characters."""
    return not _CJK.search(text) and len(_LATIN_WORD.findall(text)) >= 2
