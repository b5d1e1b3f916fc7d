"""The offline model and the draft guardrails on their own: no database, no network."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from supportbot import Hit, Turn
from supportbot._records import Finding, RefundBasis
from supportbot._state import Review, Triage
from supportbot.i18n._prompts import SECTIONS, PromptSections
from supportbot.llm.offline import OfflineModel, compose_reply, triage
from supportbot.memory._compress import summary_messages
from supportbot.memory._money import money_in
from supportbot.reply import _guardrails as guardrails
from supportbot.reply._findings import basis_finding
from supportbot.reply._guardrails import EVIDENCE_LABEL, claims_approval, draft_problems, durations

ARTICLES = (
    Hit(
        "KB-bank-001",
        "银行流水同步失败,提示 E3001 怎么办",
        "E3001 表示银行授权已经过期。授权的有效期为 90 天。请在「设置 → 银行账户」中点击「重新授权」。",
    ),
    Hit(
        "KB-bank-003",
        "如何重新授权银行账户",
        "进入「设置 → 银行账户」。点击「重新授权」后会跳转到银行的授权页面。",
    ),
    Hit("KB-bank-002", "同步失败提示 E3002:银行系统维护或接口限流", "E3002 表示银行端暂时无法响应。"),
)


def ask(latest: str, hits: tuple[Hit, ...] = (), findings: tuple[Finding, ...] = ()) -> PromptSections:
    """What a draft prompt's sections show, as the context builder attaches them."""
    return PromptSections(latest=latest, hits=hits, findings=findings)


@pytest.mark.parametrize(
    ("message", "category", "account", "human"),
    [
        ("招商银行流水同步失败,提示 E3001", "technical", False, False),
        ("My bank sync fails with E3002", "technical", False, False),
        ("年付不想用了,申请退款 100 元", "refund", True, False),
        ("I want my money back", "refund", True, False),
        ("发票抬头写错了", "invoice", True, False),
        ("Please resend my invoice", "invoice", True, False),
        ("API 返回 E2002 怎么办", "api", False, False),
        ("忘记密码了,登录不上", "account", False, False),
        ("I can't log in, 2FA code never arrives", "account", False, False),
        ("想从基础版升级到专业版", "plan_change", True, False),
        ("Why was I charged twice this month?", "billing", True, False),
        ("转人工", "other", False, True),
        ("我要投诉,你们再不处理我就找律师", "other", False, True),
        ("I want to speak to a human agent about my bill", "billing", True, True),
        ("你好", "other", False, False),
    ],
)
def test_triage_in_chinese_and_english(message: str, category: str, account: bool, human: bool) -> None:
    result = triage(message)
    assert (result.category, result.needs_account_data, result.needs_human) == (category, account, human)
    assert result.search_query


def test_english_words_search_with_the_chinese_help_center_terms() -> None:
    assert "退款" in triage("please refund me").search_query
    assert (
        "E3002" in triage("bank sync E3002").search_query and "银行" in triage("bank sync E3002").search_query
    )


def test_reply_cites_the_articles_that_fit_and_skips_other_error_codes() -> None:
    reply = compose_reply(ask("流水同步失败,提示 E3001,怎么重新授权银行账户?", ARTICLES))
    assert "[KB-bank-001]" in reply and "[KB-bank-003]" in reply and "KB-bank-002" not in reply
    assert reply.startswith("您好") and "重新授权" in reply
    assert "同步失败提示 E3002:银行系统维护或接口限流" not in reply


def test_a_title_with_a_colon_is_kept_whole() -> None:
    reply = compose_reply(
        ask(
            "E3002 what now",
            (Hit("KB-bank-002", "同步失败提示 E3002:银行系统维护", "E3002 表示银行端暂时无法响应。"),),
        )
    )
    assert "“同步失败提示 E3002:银行系统维护”: E3002 表示银行端暂时无法响应。 [KB-bank-002]" in reply


def test_english_question_gets_english_framing_and_account_findings() -> None:
    findings = (
        Finding.of("subscription", plan="专业版", cycle="年付", status="active", renews_on=""),
        basis_finding(
            RefundBasis.of(
                "pro_rata",
                invoice="INV-1",
                paid_on="2026-10-02",
                paid="3588.00",
                period=365,
                as_of="2026-10-15",
                used=13,
                unused=352,
                amount="3460.21",
            ),
            committed="",
            refundable="3460.21",
        ),
        Finding.of("refund_filed", refund="R000007", amount="100.00", currency="CNY"),
    )
    reply = compose_reply(ask("I would like a refund of 100 CNY please", ARTICLES, findings))
    assert reply.startswith("Hello!") and "Your account:" in reply
    assert "13 of its 365 days were used by 2026-10-15, so the 352 unused days come to 3460.21 CNY" in reply
    assert "R000007" not in reply  # the decision, stated by the system, replaces the pending request
    assert claims_approval(reply) is None


def test_no_articles_means_no_citation_and_no_invention() -> None:
    reply = compose_reply(ask("你好"))
    assert "[KB-" not in reply and "正在为您核实" in reply


def test_review_rejects_missing_citation_unknown_article_and_approval_claims() -> None:
    model = OfflineModel()

    def review(draft: str, evidence: str = "") -> Review:
        shown = PromptSections(
            latest="退款",
            hits=(Hit("KB-bank-001", "银行流水同步失败", ""),),
            draft=draft,
            evidence=f"{evidence}\n\n帮助中心文章:\n[KB-bank-001] 银行流水同步失败" if evidence else None,
        )
        message = {"role": "user", "content": f"草稿:\n{draft}", SECTIONS: shown}
        parsed = model.chat([{"role": "system", "content": "review"}, message], schema=Review).parsed
        assert isinstance(parsed, Review)
        return parsed

    assert review("请重新授权 [KB-bank-001]。").passed
    assert review("请重新授权。").problems == ["没有引用帮助中心文章"]
    assert "引用了不存在的文章:KB-x-9" in review("见 [KB-bank-001] 和 [KB-x-9]。").problems
    assert not review("您的退款已批准 [KB-bank-001]。").passed
    evidence = f"{EVIDENCE_LABEL}\n账单 INV-1:349.00 CNY"
    assert review("您的账单是 349 元 [KB-bank-001]。", evidence).passed
    assert review("我们将退您 500 元 [KB-bank-001]。", evidence).problems == ["金额在资料中没有依据:500"]


@pytest.mark.parametrize(
    ("draft", "problem"),
    [
        ("", "草稿为空"),
        ("退款将在 3 个工作日内到账 [KB-a]。", "承诺了资料中没有依据的时限:3 个工作日"),
        ("Refunds arrive within 24 hours [KB-a].", "承诺了资料中没有依据的时限:24 hours"),
        ("已为您退款 [KB-a]。", "草稿声称退款已批准或已执行"),
        ("李娜的邮箱是 lina@example.com [KB-a]。", "草稿含有不属于本客户资料的邮箱:lina@example.com"),
        ("客户 C0002 的账单 INV-C0002-20260605 [KB-a]。", "草稿含有不属于本客户资料的客户编号:C0002"),
        ("客户的账单 INV-C0002-20260605 [KB-a]。", "草稿含有不属于本客户资料的账单号:INV-C0002-20260605"),
        ("我们保证明天解决 [KB-a]。", "草稿作出了无依据的保证"),
        ("年付套餐将于 2026-10-31 续费 [KB-a]。", "日期在资料中没有依据:2026-10-31"),
        ("Your plan renews on Oct 31 [KB-a].", "日期在资料中没有依据:Oct 31"),
        ("续费日是 10月31日 [KB-a]。", "日期在资料中没有依据:10月31日"),
        ("好" * 1501 + "[KB-a]", "草稿过长"),
    ],
)
def test_guardrails_refuse_what_the_data_does_not_support(draft: str, problem: str) -> None:
    evidence = "wugang@example.com C0001 INV-C0001-20251103 3588.00 CNY 通常 3 至 7 个工作日到账 2026-11-03"
    problems = draft_problems(draft, known_articles={"KB-a"}, evidence=evidence)
    assert any(p.startswith(problem) for p in problems), problems


def test_guardrails_pass_what_the_data_supports() -> None:
    evidence = "wugang@example.com INV-C0001-20251103:3588.00 CNY 审批通过后通常 3 至 7 个工作日到账"
    draft = (
        "您的账单 INV-C0001-20251103 实付 ¥3,588.00,审批通过后通常 3 至 7 个工作日到账,"
        "结果会发到 wugang@example.com [KB-a]。"
    )
    assert draft_problems(draft, known_articles={"KB-a"}, evidence=evidence) == []


@pytest.mark.parametrize(
    "draft",
    [
        "您的套餐于 2026-10-01 续费 [KB-a]。",
        "您的套餐于 2026年10月1日 续费 [KB-a]。",
        "您的套餐于 10月1日 续费 [KB-a]。",
        "Your plan renewed on October 1, 2026 [KB-a].",
        "Your plan renewed on 10/1/2026 [KB-a].",
        "我们明天联系您,或者下周五 [KB-a]。",  # relative words are the review's to judge
    ],
)
def test_a_date_the_records_hold_passes_in_any_form(draft: str) -> None:
    evidence = '{"renews_on": "2026-10-01"} Subscription: 专业版 年付, renews on 2026-10-01'
    assert draft_problems(draft, known_articles={"KB-a"}, evidence=evidence) == []


def test_a_date_the_records_hold_without_a_year_supports_the_same_day() -> None:
    evidence = "客户说 10月1日 扣了款"
    assert draft_problems("2026-10-01 的扣款 [KB-a]。", known_articles={"KB-a"}, evidence=evidence) == []
    problems = draft_problems("2026-10-02 的扣款 [KB-a]。", known_articles={"KB-a"}, evidence=evidence)
    assert problems == ["日期在资料中没有依据:2026-10-02"]


def test_time_limits_written_with_look_alike_letters_are_read_not_crashed_on() -> None:
    # Case-insensitive matching takes "ſ" for "s" and "İ" for "i"; the unit must still be known.
    assert [(low, unit) for low, _, unit, _ in durations("3 dayſ 内回复,5 MİNUTES 后再试")] == [
        (3, "day"),
        (5, "minute"),
    ]
    assert draft_problems("我们 3 dayſ 内回复 [KB-a]。", known_articles={"KB-a"}, evidence="3 days") == []


# Characters at the patterns' edges (every character a match can start with, and the look-alikes
# that case-insensitive matching folds onto them: ſ, K, İ, ı), CJK, digits and whole phrases.
_EDGE_TEXT = st.lists(
    st.sampled_from(
        [
            *"已退申审批保一肯绝个工天小分周星月元块钱美人¥￥$.,-/~～:：",
            *"abcdghimrstuwyACDGHIRUWſ\u212aİı0123456789 \n",
            "已为您退款",
            "退款已到账",
            "审批通过了",
            "批准了您的退款",
            "has been approved",
            "i've refunded",
            "approved your refund",
            "refund is on its way",
            "保证",
            "一定会",
            "guaranteed",
            "definitely will",
            "US$ 15",
            "RMB",
            "CNY",
            "USD",
            "人民币",
            "100 元",
            "3 块钱",
            "12 dollars",
            "3 至 7 个工作日",
            "3-7 business days",
            "24 hours",
            "2 个星期",
            "6 months",
            "C12345",
            "INV-2026-0415",
            "R000012",
            "13812345678",
            "user@example.com",
            "鋐嘌柄",
        ]
    ),
    max_size=30,
).map("".join)

# Patterns whose look-behind moved after their first character, and what they were before.
_PLAIN_IDENTIFIERS = {
    "客户编号": r"(?<![A-Za-z0-9-])C[0-9]{4,}(?![0-9])",
    "账单号": r"(?<![A-Za-z0-9-])INV-[A-Za-z0-9]+(?:-[A-Za-z0-9]+)*",
    "退款单号": r"(?<![A-Za-z0-9-])R[0-9]{6}(?![0-9])",
    "手机号": r"(?<![0-9])1[3-9][0-9]{9}(?![0-9])",
}


def _matches(pattern: re.Pattern[str], text: str) -> list[tuple[tuple[int, int], tuple[str | None, ...]]]:
    return [(m.span(), m.groups()) for m in pattern.finditer(text)]


@given(_EDGE_TEXT)
def test_guardrail_patterns_match_exactly_like_their_plain_forms(text: str) -> None:
    """The look-aheads naming where a match can start, and the moved look-behinds, are there for
    speed only: without them the patterns must find the same matches with the same groups."""
    for pattern in (
        guardrails._DURATION,
        guardrails._APPROVAL_CLAIM,
        guardrails._GUARANTEE,
    ):
        plain = re.compile(re.sub(r"\(\?=\[[^\]]*\]\)", "", pattern.pattern), pattern.flags)
        assert plain.pattern != pattern.pattern
        assert _matches(pattern, text) == _matches(plain, text), pattern.pattern[:30]
    for kind, pattern in guardrails._IDENTIFIERS:
        if kind in _PLAIN_IDENTIFIERS:
            assert _matches(pattern, text) == _matches(re.compile(_PLAIN_IDENTIFIERS[kind]), text), kind


def test_summary_prompt_gets_an_extractive_summary() -> None:
    turns = [
        Turn("customer", "你好。账单 INV-C0001-20251103 多扣了 349 元,请尽快处理。"),
        Turn("agent", "收到,我们会在 3 个工作日内回复您。"),
    ]
    model = OfflineModel()
    summary = model.chat(summary_messages("", turns)).text
    assert "INV-C0001-20251103" in summary and "349 元" in summary and "3 个工作日" in summary
    assert summary.startswith("客户:")
    condensed = model.chat(summary_messages(summary, ())).text
    assert "INV-C0001-20251103" in condensed and len(condensed) <= len(summary)


def test_an_english_summary_request_is_known_by_its_english_instructions() -> None:
    turns = [
        Turn("customer", "Hello. Bill INV-C0001-20251103 charged me 349 CNY twice, please fix it."),
        Turn("agent", "Got it, we will reply within 3 business days."),
    ]
    model = OfflineModel()
    summary = model.chat(summary_messages("", turns, lang="en")).text
    assert summary.startswith("Customer:") and "INV-C0001-20251103" in summary
    condensed = model.chat(summary_messages(summary, (), lang="en")).text
    assert "INV-C0001-20251103" in condensed and len(condensed) <= len(summary)


def test_same_messages_same_completion_and_streaming_matches() -> None:
    messages: list[dict[str, object]] = [
        {"role": "system", "content": "draft"},
        {"role": "user", "content": "客户最新消息:E3001 怎么办", SECTIONS: ask("E3001 怎么办", ARTICLES)},
    ]
    pieces: list[str] = []
    first = OfflineModel(on_token=pieces.append).chat(messages)
    second = OfflineModel().chat(messages)
    assert first == second and "".join(pieces) == first.text
    assert first.usage.prompt_tokens > 0 and first.usage.completion_tokens > 0 and first.cost == 0.0
    triaged = OfflineModel().chat(messages, schema=Triage)
    assert triaged == OfflineModel().chat(messages, schema=Triage) and isinstance(triaged.parsed, Triage)


@pytest.mark.parametrize(
    "draft",
    [
        "请重新授权 [KB-a]。",
        "退款 ¥3,588.00 将在 3 至 7 个工作日到账 [KB-a]。",
        "我们将退您 500 元 [KB-a]。",
        "李娜的邮箱是 lina@example.com [KB-a]。",
        "已为您退款 [KB-a]。",
        "",
    ],
)
def test_guardrails_build_the_evidence_only_for_a_draft_that_needs_it(draft: str) -> None:
    evidence = "wugang@example.com INV-C0001-20251103:3588.00 CNY 审批通过后通常 3 至 7 个工作日到账"
    built: list[str] = []

    def build() -> str:
        built.append(evidence)
        return evidence

    lazily = draft_problems(draft, known_articles={"KB-a"}, evidence=build)
    assert lazily == draft_problems(draft, known_articles={"KB-a"}, evidence=evidence)
    states_something = bool(
        any(m.value is not None for m in money_in(draft)) or durations(draft) or "@" in draft
    )
    assert len(built) == int(states_something)
