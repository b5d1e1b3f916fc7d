"""The memory's floor and its ranks, as properties over generated conversations:

- a customer sentence with a hard token (a digit, a code, an email, a URL, a currency, a numeral
  word) survives compression at any budget large enough to hold it, in any language or form;
- a value that corrected another is never left out while another value of its kind is shown;
- facts are left out only when the shared budget is used up.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from supportbot import Fact, Turn
from supportbot.memory import _ledger as ledger
from supportbot.memory._compress import (
    MIN_SUMMARY_TOKENS,
    PROMPT_LABEL_TOKENS,
    compress,
    shared_allowance,
    text_tokens,
)
from supportbot.memory._facts import extract, update_ledger
from supportbot.memory._tokens import count_tokens, turn_tokens

# Hard tokens of many shapes, none of which the typed extractors were written for in particular.
_TOKEN_SHAPES = (
    "4B",
    "A7-3391",
    "ab-217",
    "ERR_SYNC_42",
    "VPN",
    "XL",
    "(212) 555-0187",
    "212.555.0187",
    "https://status.example.net/incident",
    "www.example.org/help",
    "sam.lee@example.org",
    "$12",
    "37 bucks",
    "forty dollars",
    "€8",
    "三台",
    "17 号楼",
    "两百块",
    "第 3 次",
    "v2.4.1",
    "503 Service Unavailable",
    "7731",
)
_TOKENS = st.sampled_from(_TOKEN_SHAPES)
_WORDS = st.sampled_from(
    [
        "我们这边看到",
        "它一直显示",
        "上次那个",
        "麻烦看一下",
        "we keep seeing",
        "the screen says",
        "my colleague mentioned",
        "after the update",
    ]
)
_FILLER = st.sampled_from(
    [
        "那就麻烦你们了",
        "谢谢,辛苦了",
        "我想想怎么描述这个情况",
        "页面一直在转圈",
        "thanks so much",
        "sorry for the wall of text",
        "I was hoping it would just work",
        "one moment please",
    ]
)


def _filler_turns(draw: st.DrawFn, n: int) -> list[Turn]:
    return [
        Turn(role="customer" if i % 2 == 0 else "agent", content=draw(_FILLER) + "。" + draw(_FILLER))
        for i in range(n)
    ]


@st.composite
def _planted(draw: st.DrawFn) -> tuple[list[Turn], int, str]:
    before, after = draw(st.integers(0, 12)), draw(st.integers(0, 12))
    token = draw(_TOKENS)
    sentence = f"{draw(_WORDS)} {token} {draw(_WORDS)}"
    turns = _filler_turns(draw, before)
    at = len(turns) if len(turns) % 2 == 0 else len(turns) + 1  # a customer turn
    turns = _filler_turns(draw, at)
    turns.append(Turn(role="customer", content=draw(_FILLER) + "。" + sentence + "。" + draw(_FILLER)))
    turns += [Turn(role="agent" if i % 2 == 0 else "customer", content=draw(_FILLER)) for i in range(after)]
    return turns, at, token


def _shown_text(turns: list[Turn], budget: int, keep_last: int) -> tuple[str, int]:
    """What the conversation part of a prompt shows after compress at ``budget``, and facts left out."""
    result = compress(turns, "", 0, budget=budget, keep_last=keep_last, facts_allowance=budget, mask=False)
    pending = turns[result.summarized_upto :]
    used = text_tokens(result.summary, turn_tokens) + sum(turn_tokens(t) for t in pending)
    room = shared_allowance(budget, budget, used=used)
    view = ledger.view(result.facts, summarized_upto=result.summarized_upto, allowance=room)
    shown = "\n".join([result.summary, *(t.content for t in pending), *(f.value for f in view.shown)])
    return shown, view.omitted


@settings(max_examples=150, deadline=None)
@given(_planted(), st.integers(0, 4), st.integers(0, 1500))
def test_a_sentence_with_a_hard_token_survives_any_budget_that_holds_it(
    planted: tuple[list[Turn], int, str], keep_last: int, extra: int
) -> None:
    turns, at, token = planted
    kept = sum(turn_tokens(t) for t in turns[-keep_last:]) if keep_last else 0
    # Room for the labels, the kept turns, the summary's least, and the planted turn's sentences.
    budget = (
        PROMPT_LABEL_TOKENS + kept + MIN_SUMMARY_TOKENS + 2 * count_tokens(turns[at].content) + 40 + extra
    )
    shown, _ = _shown_text(turns, budget, keep_last)
    assert token in shown, (token, budget)


def test_every_shape_of_hard_token_is_pinned_when_no_typed_fact_holds_it() -> None:
    for token in _TOKEN_SHAPES:
        facts = extract(Turn("customer", f"上次那个 {token} 又出现了"), 0, mask=False)
        assert any(token in f.value for f in facts), token


@st.composite
def _corrected(draw: st.DrawFn) -> list[Turn]:
    turns = _filler_turns(draw, draw(st.integers(0, 6)))
    for i in range(draw(st.integers(1, 4))):
        old, new = draw(st.integers(100, 999)), draw(st.integers(1000, 9999))
        turns.append(Turn(role="customer", content=f"升级费是 {old} 元,订单 INV-2026-{i:04d}。"))
        turns += _filler_turns(draw, draw(st.integers(0, 3)))
        turns.append(Turn(role="customer", content=f"不对,升级费应该是 {new} 元。"))
        turns.append(Turn(role="customer", content=f"合同号 {i}HT{old} 已寄出,截止 3/{(i % 27) + 1}。"))
    return turns


@settings(max_examples=100, deadline=None)
@given(_corrected(), st.integers(0, 400))
def test_a_correction_is_never_left_out_while_its_kind_is_shown(turns: list[Turn], allowance: int) -> None:
    facts = update_ledger((), turns, 0, mask=False)
    view = ledger.view(facts, summarized_upto=len(turns), allowance=allowance)
    shown = set(view.shown)
    corrections = [f for f in facts if f.supersedes is not None and f in {g for _, g in _current(facts)}]
    replaced = {facts[f.supersedes] for f in facts if f.supersedes is not None}
    assert not shown & replaced  # a replaced value is never shown as a value of its own
    for kind in {f.kind for f in corrections if f not in shown}:  # a correction of this kind left out
        assert not [f for f in shown if f.kind == kind], f"a {kind} shown while its correction was left out"


def _current(facts: tuple[Fact, ...]) -> list[tuple[int, Fact]]:
    superseded = {f.supersedes for f in facts if f.supersedes is not None}
    return [(i, f) for i, f in enumerate(facts) if i not in superseded]


@settings(max_examples=100, deadline=None)
@given(_corrected(), st.integers(0, 4), st.integers(200, 2000))
def test_facts_are_left_out_only_when_the_budget_is_used_up(
    turns: list[Turn], keep_last: int, budget: int
) -> None:
    result = compress(turns, "", 0, budget=budget, keep_last=keep_last, facts_allowance=budget, mask=False)
    pending = turns[result.summarized_upto :]
    used = text_tokens(result.summary, turn_tokens) + sum(turn_tokens(t) for t in pending)
    room = shared_allowance(budget, budget, used=used)
    view = ledger.view(result.facts, summarized_upto=result.summarized_upto, allowance=room)
    if view.omitted:
        facts_tokens = count_tokens("".join(view.pieces))
        largest = max(count_tokens(ledger.display(f)) for f in result.facts) + 8
        assert PROMPT_LABEL_TOKENS + used + facts_tokens + largest > budget or room == budget // 2
