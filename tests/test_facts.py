"""Fact extraction: table-driven examples per kind, then properties over generated conversations."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st
from support.strategies import AnnotatedTurn, annotated_conversations, annotated_turns, conversations

from supportbot import Fact, Turn
from supportbot._state import Role
from supportbot.errors import InvalidInput
from supportbot.memory import _facts as facts
from supportbot.memory import _sentences as sentences
from supportbot.memory import _typed as typed
from supportbot.memory._facts import extract, update_ledger
from supportbot.memory._ledger import render_facts
from supportbot.memory._ledger import view as ledger_view
from supportbot.memory._tokens import count_joined, count_tokens

ROLES: list[Role] = ["customer", "agent"]


def found(text: str, role: Role = "customer") -> set[tuple[str, str]]:
    return {(f.kind, f.key) for f in extract(Turn(role=role, content=text), 0)}


def keys_of(kind: str, text: str, role: Role = "customer") -> list[str]:
    return [f.key for f in extract(Turn(role=role, content=text), 0) if f.kind == kind]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("发票号 INV-2026-0042 还没收到", ["INV-2026-0042"]),
        ("账单号 B20260915001 扣款两次", ["B20260915001"]),
        ("my ticket is T000153", ["T000153"]),
        ("订单号 123456789 一直没发货", ["123456789"]),
        ("订单号:987654321", ["987654321"]),
        ("order number 123456789 was charged twice", ["123456789"]),
        ("refund #55512345 is pending", ["55512345"]),
        ("退款单号是 20260915", ["20260915"]),
        ("电话 13800138000", []),  # a bare digit run is not an id without a word naming one
        ("USD2000 and E3001 are not ids", []),
        ("订单 2026-09-15 下的", []),
    ],
)
def test_ids(text: str, expected: list[str]) -> None:
    assert keys_of("id", text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("同步失败,报错E3001", ["E3001"]),
        ("I keep getting error E4012 on login", ["E4012"]),
        ("错误码:403", ["403"]),
        ("error code 5001", ["5001"]),
        ("错误码 E3001,还是 E3001", ["E3001"]),
        ("E20260915001 is too long for a code", []),
    ],
)
def test_error_codes(text: str, expected: list[str]) -> None:
    assert keys_of("error_code", text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("扣了 ¥128.00", ["CNY 128.00"]),
        ("扣了 ￥128", ["CNY 128.00"]),
        ("多扣了128 元", ["CNY 128.00"]),
        ("退款128.5元", ["CNY 128.50"]),
        ("一共 1,280.00 元", ["CNY 1280.00"]),
        ("合同金额 1.5万元", ["CNY 15000.00"]),
        ("才 30块钱", ["CNY 30.00"]),
        ("RMB 99 per month", ["CNY 99.00"]),
        ("charged $20 twice", ["USD 20.00"]),
        ("charged 20 USD", ["USD 20.00"]),
        ("退了 20美元", ["USD 20.00"]),
        ("€15 and 15 EUR", ["EUR 15.00"]),
        ("$20 ¥128.00 and 20 USD", ["USD 20.00", "CNY 128.00"]),  # deduplicated by key
        ("20 USD 30 元", ["USD 20.00", "CNY 30.00"]),  # read left to right, not "USD 30"
        ("买了2块硬盘", []),  # 块 alone is a measure word
        ("version 2.0 of the app", []),
    ],
)
def test_amounts(text: str, expected: list[str]) -> None:
    assert keys_of("amount", text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("到期日 2026-09-15", ["2026-09-15"]),
        ("到期日 2026/9/5", ["2026-09-05"]),
        ("2026年9月15日扣的款", ["2026-09-15"]),
        ("9月15日扣的款", ["--09-15"]),
        ("9 月 15 号", ["--09-15"]),
        ("due Sept 15 2026", ["2026-09-15"]),
        ("due September 15th, 2026", ["2026-09-15"]),
        ("due 15 Sept 2026", ["2026-09-15"]),
        ("due Sept 15", ["--09-15"]),
        ("Sept 15 2026-09-16", ["2026-09-16", "--09-15"]),  # a year is not the start of another date
        ("2026-02-30 is not a day", []),
        ("Mark 12 and March", []),
        ("INV-2026-09-15", []),  # inside an id
    ],
)
def test_dates(text: str, expected: list[str]) -> None:
    assert sorted(keys_of("date", text)) == sorted(expected)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("您好。我们会在 3 个工作日内回复您。祝好", ["我们会在3个工作日内回复您"]),
        ("已为您提交退款申请", ["已为您提交退款申请"]),
        ("Thanks! We will reply within 2 days. Bye", ["we will reply within 2 days"]),
        ("I'll escalate this to billing.", ["i'll escalate this to billing"]),
        ("Refunds are issued within 5 business days.", ["refunds are issued within 5 business days"]),
        ("请稍后再试。", []),
    ],
)
def test_promises_from_agents(text: str, expected: list[str]) -> None:
    assert keys_of("promise", text, role="agent") == expected
    assert keys_of("promise", text, role="customer") == []  # a customer cannot promise for us


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("授权总是过期。希望到期前提醒我。", ["希望到期前提醒我"]),
        ("请帮我查一下这笔扣款", ["请帮我查一下这笔扣款"]),
        ("Please remind me before it expires!", ["please remind me before it expires"]),
        ("I'd like a refund.", ["i'd like a refund"]),
        ("Could you check the invoice?", ["could you check the invoice"]),
        ("It broke again.", []),
    ],
)
def test_requests_from_customers(text: str, expected: list[str]) -> None:
    assert keys_of("request", text, role="customer") == expected
    assert (
        keys_of("request", text, role="agent") == []
    )  # "please send a screenshot" is not the customer's ask


def test_sentence_keys_ignore_spacing_case_and_end_punctuation() -> None:
    ledger = update_ledger(
        (),
        [
            Turn(role="agent", content="我们会在 3 个工作日内回复您。"),
            Turn(role="agent", content="我们会在3个工作日内回复您!"),
            Turn(role="agent", content="We will reply within 2 days."),
            Turn(role="agent", content="we will  reply within 2 days"),
        ],
        0,
    )
    assert [(f.kind, f.turn) for f in ledger] == [("promise", 0), ("promise", 2)]


def test_long_sentences_are_clipped() -> None:
    [fact] = extract(Turn(role="customer", content="请帮我" + "看看" * 500), 0)
    assert len(fact.value) <= 160 and fact.value.endswith("…")


def test_facts_come_in_order_of_appearance() -> None:
    facts = extract(Turn(role="customer", content="E3001 then ¥5 then INV-2026-0001 on 2026-01-02"), 7)
    assert [f.kind for f in facts] == ["error_code", "amount", "id", "date"]
    assert {f.turn for f in facts} == {7}


def test_ledger_keeps_first_turn_and_order() -> None:
    turns = [
        Turn(role="customer", content="账单号 B20260915001 多扣了 ¥128.00"),
        Turn(role="agent", content="我查到 B20260915001 确实扣了两次 128 元。我们会在 3 个工作日内退款。"),
        Turn(role="customer", content="还有报错 E3001"),
    ]
    ledger = update_ledger((), turns, 0)
    assert [(f.kind, f.key, f.turn) for f in ledger] == [
        ("id", "B20260915001", 0),
        ("amount", "CNY 128.00", 0),
        ("promise", "我们会在3个工作日内退款", 1),
        ("error_code", "E3001", 2),
    ]
    assert update_ledger(ledger, turns, 0) == ledger  # rescanning adds nothing


def test_ledger_start_counts_positions_in_the_full_list() -> None:
    turns = [Turn(role="customer", content="报错 E1111"), Turn(role="customer", content="报错 E2222")]
    [fact] = update_ledger((), turns, 1)
    assert (fact.key, fact.turn) == ("E2222", 1)
    with pytest.raises(InvalidInput):
        update_ledger((), turns, -1)


def test_render_groups_by_kind_with_labels() -> None:
    facts = (
        Fact("amount", "¥128.00", "CNY 128.00", 0),
        Fact("id", "B20260915001", "B20260915001", 0),
        Fact("promise", "我们会在 3 个工作日内退款", "我们会在3个工作日内退款", 1),
        Fact("date", "9月15日", "--09-15", 1),
        Fact("id", "INV-2026-0042", "INV-2026-0042", 2),
        Fact("promise", "明天给您回电。", "明天给您回电", 3),
    )
    # Sentences share their kind's line (a line each cost 2-3 tokens more), end marks dropped.
    assert render_facts(facts) == "\n".join(
        [
            "- 单号: B20260915001, INV-2026-0042",
            "- 金额: CNY 128.00",
            "- 日期: 9月15日",
            "- 客服已承诺: 我们会在3个工作日内退款；明天给您回电",
        ]
    )
    english = render_facts(facts, lang="en")
    assert english.startswith("- Reference numbers: B20260915001")
    assert english.endswith(": 我们会在3个工作日内退款; 明天给您回电")
    assert render_facts(()) == ""


@given(st.sampled_from(ROLES).flatmap(annotated_turns))
def test_planted_facts_are_found(annotated: AnnotatedTurn) -> None:
    """Every fact planted by the strategy must come out with the key written next to it."""
    assert set(annotated.expected) <= found(annotated.turn.content, annotated.turn.role)


@given(conversations(max_turns=10))
def test_roles_gate_promises_and_requests(turns: tuple[Turn, ...]) -> None:
    """Only an agent can commit the company; only a customer's asks are customer requests."""
    for i, turn in enumerate(turns):
        kinds = {f.kind for f in extract(turn, i)}
        assert "promise" not in kinds or turn.role == "agent"
        assert "request" not in kinds or turn.role == "customer"


@given(annotated_conversations(max_turns=10), st.data())
def test_ledger_is_incremental(annotated: tuple[AnnotatedTurn, ...], data: st.DataObject) -> None:
    """Scanning in two steps must equal scanning at once, or the ledger would depend on when rounds ran."""
    turns = [a.turn for a in annotated]
    split = data.draw(st.integers(0, len(turns)))
    at_once = update_ledger((), turns, 0)
    in_steps = update_ledger(update_ledger((), turns[:split], 0), turns, split)
    assert in_steps == at_once
    current = [f for _, f in facts.current_facts(at_once)]
    assert len({(f.kind, f.key) for f in current}) == len(current)
    first_seen = {(f.kind, f.key): f.turn for f in at_once}
    for i, a in enumerate(annotated):
        assert all(first_seen[k] <= i for k in a.expected)


# -- speed-ups that must not change a match -----------------------------------------------------

# Characters at the patterns' edges (every character a match can start with, and the look-alikes
# that case-insensitive matching folds onto them: ſ, K, İ, ı), CJK, digits, punctuation, and whole
# phrases so that matches do occur.
_EDGE_PIECES = st.sampled_from(
    [
        *"我本同工专会将稍已为希请麻能可帮给提需要订账发退单流号码是:：#。！？!?；;.,-_+@'$¥￥€人万元块钱美欧",
        *"ABCEINRUVbcdeiknoprstuvwxyſ\u212aİı0123456789 \n\t",
        "INV-2026-0415",
        "E3001",
        "T000153",
        "订单号 123456789",
        "refund no. 55512345",
        "USD 20",
        "20 元",
        "3 块钱",
        "我们会",
        "会在",
        "已为您申请",
        "工作日内",
        "we will",
        "I'll",
        "will reply",
        "within 3 days",
        "I've filed",
        "希望",
        "please",
        "could you",
        "I'd like",
        "I need",
        "remind me",
        "help me",
        "账单",
        "鋐嘌柄",
        "错误码",
        "错误代码是 ",
        "报错码:",
        "error code ",
        "ERROR\tCODE is ",
        "Error Code #",
        "E",
        "e",
    ]
)
edge_texts = st.lists(_EDGE_PIECES, max_size=30).map("".join)

# Patterns whose look-behind moved after their first character, and what they were before.
_PLAIN_FORMS = {
    typed._ERROR_CODE: r"(?<![A-Za-z0-9])[Ee][0-9]{3,5}(?![A-Za-z0-9])",
    # Possessive on purpose: "INV-2026-0415A" is not the id "INV-2026" (and no run is re-split).
    typed._PREFIXED_ID: r"(?<![A-Za-z0-9-])[A-Za-z]{1,4}-?[0-9]{4,}+(?:-[0-9]++)*+(?![A-Za-z0-9])",
    typed._NAMED_CODE: r"(?<![A-Za-z0-9-])[A-Z]{2,6}-[0-9]{3}(?![A-Za-z0-9-])",
}
# Patterns that gained a leading look-ahead naming the characters a match can start with.
_WITH_LOOKAHEAD = (
    typed._ERROR_CODE_AFTER_LABEL,
    sentences.PROMISE,
    sentences.REPORTED_PROMISE,
    sentences._REQUEST,
    sentences._SENTENCE_END,
)


def without_lookahead(pattern: re.Pattern[str]) -> re.Pattern[str]:
    return re.compile(re.sub(r"^\(\?=\[[^\]]*\]\)", "", pattern.pattern), pattern.flags)


def matches(pattern: re.Pattern[str], text: str) -> list[tuple[tuple[int, int], tuple[str | None, ...]]]:
    return [(m.span(), m.groups()) for m in pattern.finditer(text)]


@given(edge_texts)
def test_fast_patterns_match_exactly_like_their_plain_forms(text: str) -> None:
    """The look-aheads and moved look-behinds are there for speed only: same matches, same groups."""
    for fast in _WITH_LOOKAHEAD:
        assert fast.pattern.startswith("(?=[")
        assert matches(fast, text) == matches(without_lookahead(fast), text), fast.pattern[:40]
    for pattern, plain in _PLAIN_FORMS.items():
        assert matches(pattern, text) == matches(re.compile(plain), text), plain


_WISH_TEXTS = st.lists(
    st.sampled_from(
        [
            *"希提以今下到望醒后次期前rinRIN\u212aİıſ 的",
            "希望",
            "提醒",
            "以后",
            "今后",
            "下次",
            "到期前",
            "remind",
            "Remind",
            "in the future",
            "IN future",
            "next time",
            "NEXT TIME",
            "inner",
            "print",
            "鋐嘌柄",
        ]
    ),
    max_size=20,
).map("".join)


@given(_WISH_TEXTS)
def test_the_lasting_wish_pattern_matches_like_its_plain_form(text: str) -> None:
    """LASTING_WISH gained a look-ahead for speed only; lasting_wish remembers its answer."""
    from supportbot.run import _ticket_record as record

    assert record.LASTING_WISH.pattern.startswith("(?=[")
    assert matches(record.LASTING_WISH, text) == matches(without_lookahead(record.LASTING_WISH), text)
    wishes: dict[str, bool] = {}
    expected = without_lookahead(record.LASTING_WISH).search(text) is not None
    assert record.lasting_wish(text, wishes) is expected and wishes == {text: expected}
    assert record.lasting_wish(text, wishes) is expected  # remembered


@given(edge_texts, st.sampled_from(["customer", "agent"]))
def test_texts_without_a_digit_are_not_scanned_for_exact_facts_and_lose_none(text: str, role: Role) -> None:
    """The digit check before the id, code, amount and date scans is there for speed only."""
    scanned = list(typed.scan(text, role, None, ()))
    gated = [*typed._error_codes(text), *typed._ids(text), *typed._amounts(text, "CNY"), *typed._phones(text)]
    rest = [*typed._dates(text, None), *typed._contacts(text, ())]
    assert [f for f in scanned if f.kind not in sentences.SENTENCE_KINDS] == gated + rest
    assert typed.mentions_fact(text) == bool(
        gated
        or rest
        or list(typed.scan(text, "agent", None, ()))
        or list(typed.scan(text, "customer", None, ()))
    )


@given(edge_texts, st.sampled_from([("promise", sentences.PROMISE), ("request", sentences._REQUEST)]))
def test_texts_without_a_marker_are_not_cut_into_sentences_and_lose_none(
    text: str, marker: tuple[str, re.Pattern[str]]
) -> None:
    """The whole-text check before cutting into sentences is there for speed only."""
    kind, pattern = marker
    pieces = [p.strip() for p in sentences._SENTENCE_END.split(text)]
    # Sentence by sentence, each checked for a marker on its own: the same values.
    expected = [
        f.value
        for p in pieces
        if p and pattern.search(p)
        for f in sentences.sentences_marked(p, kind, pattern)
    ]
    assert [f.value for f in sentences.sentences_marked(text, kind, pattern)] == expected


def test_a_long_ledger_renders_as_before_and_counts_as_its_text() -> None:
    ids = [f"R{i:06d}" for i in range(40)]
    ledger = (
        *(Fact("id", v, v, i) for i, v in enumerate(ids)),
        Fact("amount", "10 元", "CNY 10.00", 3),
        Fact("request", "请退款 10 元", "请退款10元", 2),
    )
    text = render_facts(ledger)
    assert text == "- 单号: " + ", ".join(ids) + "\n- 金额: CNY 10.00\n- 客户诉求: 请退款10元"
    pieces = ledger_view(ledger, summarized_upto=10).pieces
    assert len(pieces) > 3  # the id line is cut, so a new id recounts one piece
    assert count_joined(pieces) == count_tokens(text)


def test_a_plan_from_the_backend_catalogue_is_pinned_where_the_form_alone_would_miss_it() -> None:
    """Plan names are the business system's own words: a catalogue name with no `…版` shape is a
    fact only because the backend listed it, and compress() passes the catalogue on."""
    from supportbot.memory._compress import compress

    said = Turn("customer", "我们现在用的是旗舰套餐,想改成年付", round=1, idx=0)
    assert [f.kind for f in extract(said, 0)] == ["request"]  # 想改成年付 asks; no plan without the catalogue
    assert ("plan", "旗舰套餐") in [(f.kind, f.value) for f in extract(said, 0, plans=["旗舰套餐"])]
    turns = tuple(
        Turn("customer", said.content if i == 0 else f"第{i}条补充", round=1, idx=i) for i in range(6)
    )
    folded = compress(turns, "", 0, budget=1, keep_last=2, plans=["旗舰套餐"])
    assert ("plan", "旗舰套餐") in [(f.kind, f.value) for f in folded.facts]


def test_the_demo_backend_lists_its_plan_catalogue(demo_url: str) -> None:
    from supportbot import Settings, SupportBot
    from supportbot.backend.base import ListsPlans

    with SupportBot.open(demo_url, backend="demo", settings=Settings(database_url=demo_url)) as bot:
        assert isinstance(bot.backend, ListsPlans)
        assert set(bot.backend.list_plans()) == {"基础版", "专业版", "企业版"}


def test_a_request_a_later_yes_status_settles_ranks_after_open_ones() -> None:
    """Satisfied requests and promises are kept but ranked last, so a tight allowance drops them
    before an open request (the display policy of memory/_ledger.py)."""
    from supportbot.memory._ledger import units

    turns = (
        Turn("customer", "我想申请退款 200 元", round=1, idx=0),
        Turn("customer", "另外请帮我开一张发票", round=1, idx=1),
        Turn("customer", "退款我已经收到了", round=2, idx=2),
    )
    shown = {u.fact.value: u.tier for u in units(update_ledger((), turns, 0, mask=False), summarized_upto=3)}
    settled, still_open = shown["我想申请退款 200 元"], shown["请帮我开一张发票"]
    assert settled > still_open
    assert shown["200 元"] < still_open  # the amount itself stays an exact value, first


def test_an_agent_replys_citations_are_not_its_facts() -> None:
    """A reply's article citation, as drafted or as sent (a link to the article), is the reply's
    reference: not pinned as an id, not kept in a promise's words. A customer who quotes one is
    read as before."""
    turns = [
        Turn(
            role="agent",
            content="我们会在周五前处理[KB-refund-001](https://help.example.com/kb/KB-refund-001),请放心",
        ),
        Turn(
            role="agent", content="Please re-authorise the bank. [KB-bank-001] We will email you by Friday."
        ),
        Turn(role="customer", content="你们说的[KB-bank-001]我看过了,订单号 A12345678"),
    ]
    ledger = facts.update_ledger((), turns, 0)
    said = [(f.role, f.kind, f.value) for f in ledger]
    assert ("agent", "promise", "我们会在周五前处理,请放心") in said
    assert ("agent", "promise", "We will email you by Friday.") in said
    assert not [s for s in said if s[0] == "agent" and ("KB-" in s[2] or "http" in s[2])], said
    assert ("customer", "id", "KB-bank-001") in said and ("customer", "id", "A12345678") in said
