"""Compression: folds when due and only then, keeps facts, bounds the summary, survives failures."""

from __future__ import annotations

import re
from collections.abc import Sequence

import pytest
from hypothesis import given
from hypothesis import strategies as st
from support.strategies import Budget, budgets, conversations

from supportbot import Fact, Turn
from supportbot.errors import InvalidInput
from supportbot.llm.offline import OfflineModel
from supportbot.memory._compress import (
    SUMMARY_PROMPT,
    SUMMARY_PROMPTS,
    Compression,
    Summarizer,
    _longest,
    compress,
    extractive_summarize,
    render_turns,
    summary_messages,
    text_tokens,
    truncate_to_tokens,
)
from supportbot.memory._facts import extract, update_ledger
from supportbot.memory._tokens import turn_tokens, with_tokens


class Recorder:
    """A fake summarizer that records its calls and answers with a short fixed-shape text."""

    def __init__(self, reply: str = "摘要:客户反馈账单问题。") -> None:
        self.reply = reply
        self.calls: list[tuple[str, tuple[Turn, ...]]] = []

    def __call__(self, previous_summary: str, turns: Sequence[Turn]) -> str:
        self.calls.append((previous_summary, tuple(turns)))
        return self.reply


def verbose(previous_summary: str, turns: Sequence[Turn]) -> str:
    """A summarizer that never shortens anything: the worst case for the summary cap."""
    return (previous_summary + "\n" + render_turns(turns)).strip()


def broken(previous_summary: str, turns: Sequence[Turn]) -> str:
    raise RuntimeError("model unavailable\nstack details")


def pending_tokens(result: Compression, turns: Sequence[Turn]) -> int:
    return text_tokens(result.summary, turn_tokens) + sum(
        turn_tokens(t) for t in turns[result.summarized_upto :]
    )


# -- the seed's example, in our API ------------------------------------------------------------


def test_long_conversation_folds_all_but_the_last_four() -> None:
    turns = [
        Turn(role="customer" if i % 2 == 0 else "agent", content="我的账单有问题" * 80) for i in range(8)
    ]
    summarizer = Recorder()
    result = compress(turns, "", 0, budget=500, keep_last=4, summarize=summarizer)
    assert result.summarized_upto == 4
    assert len(summarizer.calls) == 1 and result.summarizer_calls == 1
    assert summarizer.calls[0] == ("", tuple(turns[:4]))
    assert result.folded == range(4)
    assert result.summary == summarizer.reply
    assert result.triggered_by == "budget" and result.error is None
    assert result.tokens_after < result.tokens_before


def test_short_conversation_is_left_alone() -> None:
    turns = [Turn(role="customer" if i % 2 == 0 else "agent", content="你好") for i in range(6)]
    summarizer = Recorder()
    result = compress(turns, "", 0, budget=500, keep_last=4, summarize=summarizer)
    assert (result.summary, result.summarized_upto, result.summarizer_calls) == ("", 0, 0)
    assert summarizer.calls == [] and result.triggered_by is None and len(result.folded) == 0


# -- budget properties -------------------------------------------------------------------------


@given(conversations(), budgets)
def test_under_budget_nothing_changes(turns: tuple[Turn, ...], limits: Budget) -> None:
    """Summarizing costs a model call and loses wording; it must not happen when everything fits."""
    budget = sum(turn_tokens(t) for t in turns) + limits.budget  # always enough room
    summarizer = Recorder()
    result = compress(turns, "", 0, budget=budget, keep_last=limits.keep_last, summarize=summarizer)
    assert (result.summary, result.summarized_upto) == ("", 0)
    assert summarizer.calls == [] and result.tokens_after == result.tokens_before <= budget


@given(conversations(min_turns=1), budgets)
def test_over_budget_folds_all_but_keep_last(turns: tuple[Turn, ...], limits: Budget) -> None:
    """The pair of the test above: over budget, the old turns must really be folded, in one call."""
    keep_last = min(limits.keep_last, len(turns) - 1)  # so that something is foldable
    budget = sum(turn_tokens(t) for t in turns) - 1  # one token short
    summarizer = Recorder()
    result = compress(turns, "", 0, budget=budget, keep_last=keep_last, summarize=summarizer)
    assert result.summarized_upto == len(turns) - keep_last
    assert [c[1] for c in summarizer.calls] == [tuple(turns[: len(turns) - keep_last])]
    assert result.summary == summarizer.reply and result.triggered_by == "budget"


@given(conversations(), st.data(), budgets)
def test_summarized_upto_only_moves_forward(
    turns: tuple[Turn, ...], data: st.DataObject, limits: Budget
) -> None:
    """Turns folded earlier exist only in the summary; moving back would send them twice or lose them."""
    start = data.draw(st.integers(0, len(turns)))
    result = compress(
        turns,
        "旧摘要。",
        start,
        budget=limits.budget,
        keep_last=limits.keep_last,
        summary_cap=limits.summary_cap,
        summarize=Recorder(),
    )
    assert result.summarized_upto >= start
    assert result.summarized_upto == start or result.summarized_upto <= len(turns) - limits.keep_last


@given(conversations(), budgets)
def test_after_compression_the_history_fits(turns: tuple[Turn, ...], limits: Budget) -> None:
    """Either the history fits the budget or it is down to the keep_last turns we promise to keep verbatim.

    An identity "compressor" fails this as soon as a conversation is over budget.
    """
    result = compress(
        turns,
        "",
        0,
        budget=limits.budget,
        keep_last=limits.keep_last,
        summary_cap=limits.summary_cap,
        summarize=Recorder("摘要。"),
    )
    assert result.tokens_after == pending_tokens(result, turns)
    assert result.tokens_after <= limits.budget or len(turns) - result.summarized_upto <= limits.keep_last


@given(conversations(max_turns=24), budgets, st.sampled_from(["short", "verbose", "extractive"]))
def test_growing_conversation_stays_bounded(turns: tuple[Turn, ...], limits: Budget, kind: str) -> None:
    """Compressed round by round, the prompt history stays bounded however long the ticket gets.

    Exact invariant after every round: tokens(summary + pending) <= max(budget, summary_cap +
    tokens(last keep_last turns)). Not simply <= budget: the last keep_last turns stay verbatim
    whatever their size, and the summary may take up to summary_cap next to them.
    """
    summarizers: dict[str, Summarizer] = {
        "short": Recorder(),
        "verbose": verbose,
        "extractive": extractive_summarize,
    }
    summarize = summarizers[kind]
    turns = tuple(with_tokens(t) for t in turns)  # counted once, as the engine stores them
    summary, upto = "", 0
    ledger: tuple[Fact, ...] = ()
    for end in range(1, len(turns) + 1):
        seen = turns[:end]
        result = compress(
            seen,
            summary,
            upto,
            budget=limits.budget,
            keep_last=limits.keep_last,
            summary_cap=limits.summary_cap,
            summarize=summarize,
            facts=ledger,
        )
        assert result.error is None and result.summarized_upto >= upto
        summary, upto, ledger = result.summary, result.summarized_upto, result.facts
        recent = (
            sum(turn_tokens(t) for t in seen[max(0, len(seen) - limits.keep_last) :])
            if limits.keep_last
            else 0
        )
        assert pending_tokens(result, seen) <= max(limits.budget, limits.summary_cap + recent)
        assert text_tokens(summary, turn_tokens) <= limits.summary_cap
        # Every fact from a folded turn survives in the ledger, whatever the summary kept.
        keys = {(f.kind, f.key) for f in ledger}
        assert all((f.kind, f.key) in keys for i in range(upto) for f in extract(seen[i], i))


@given(conversations(min_turns=1), budgets)
def test_facts_of_folded_turns_are_in_the_ledger(turns: tuple[Turn, ...], limits: Budget) -> None:
    """A summary may drop "INV-2026-0042"; the ledger is the guarantee that it is still known."""
    result = compress(turns, "", 0, budget=0, keep_last=limits.keep_last, summarize=Recorder("无。"))
    keys = {(f.kind, f.key) for f in result.facts}
    for i in result.folded:
        assert {(f.kind, f.key) for f in extract(turns[i], i)} <= keys
    assert result.facts == update_ledger((), turns, 0)


@given(conversations(min_turns=1), budgets)
def test_raising_summarizer_changes_nothing(turns: tuple[Turn, ...], limits: Budget) -> None:
    """A model outage must cost one compression, not the round: state stays as it was, with a reason."""
    result = compress(turns, "旧摘要。", 0, budget=0, keep_last=limits.keep_last, summarize=broken)
    assert (result.summary, result.summarized_upto, len(result.folded)) == ("旧摘要。", 0, 0)
    if len(turns) > limits.keep_last:
        assert result.error == "summarizer failed: RuntimeError: model unavailable"
        assert result.summarizer_calls == 1 and result.triggered_by == "budget"
        assert result.facts == update_ledger((), turns, 0)  # facts need no model
    else:
        assert result.error is None and result.summarizer_calls == 0


def test_summarizer_returning_not_text_is_reported() -> None:
    turns = [Turn(role="customer", content="x" * 50)] * 3
    not_text = lambda previous, new: None  # noqa: E731
    result = compress(turns, "", 0, budget=0, keep_last=1, summarize=not_text)  # type: ignore[arg-type]
    assert result.error == "summarizer failed: TypeError: summarizer returned NoneType, expected str"
    assert result.summarized_upto == 0


@given(conversations(), budgets, st.sampled_from([verbose, extractive_summarize]))
def test_same_inputs_same_output(turns: tuple[Turn, ...], limits: Budget, summarize: object) -> None:
    """Replaying a stored ticket must rebuild the same history, or resumed rounds would diverge."""
    options = {
        "budget": limits.budget,
        "keep_last": limits.keep_last,
        "summary_cap": limits.summary_cap,
        "summarize": summarize,
    }
    assert compress(turns, "", 0, **options) == compress(turns, "", 0, **options)  # type: ignore[arg-type]


@given(
    conversations(min_turns=1), st.integers(0, 120), st.sampled_from(["verbose", "extractive", "condenses"])
)
def test_summary_never_exceeds_its_cap(turns: tuple[Turn, ...], cap: int, kind: str) -> None:
    """The summary is re-sent every round; without a cap it would grow with the ticket."""

    def condenses(previous: str, new: Sequence[Turn]) -> str:
        return verbose(previous, new) if new else previous[: cap // 4]

    summarize = {"verbose": verbose, "extractive": extractive_summarize, "condenses": condenses}[kind]
    result = compress(turns, "", 0, budget=0, keep_last=0, summary_cap=cap, summarize=summarize)
    assert result.error is None
    assert text_tokens(result.summary, turn_tokens) <= cap
    assert result.summarizer_calls in (1, 2)


def test_oversized_summary_is_condensed_then_cut_at_a_sentence() -> None:
    calls: list[int] = []

    def stubborn(previous: str, turns: Sequence[Turn]) -> str:
        calls.append(len(turns))
        return "第一句很短。" + "第二句非常长" * 100 + "。"

    turns = [Turn(role="customer", content="账单问题")] * 3
    result = compress(turns, "", 0, budget=0, keep_last=1, summary_cap=40, summarize=stubborn)
    assert calls == [2, 0]  # the second call condenses the summary alone
    assert result.summary == "第一句很短。"


# Chinese and ASCII words, digits, ids and the characters that end a sentence, so that cuts fall
# both at sentence ends and inside words, where token counts are least regular.
_summary_pieces = st.sampled_from(
    [
        "账单",
        "同步失败",
        "客户:",
        "客服:",
        "鋐嘌柄眿",
        "user@example.com",
        "INV-2026-0415",
        "E3001",
        " 10 元",
        "hello",
        " world",
        "3588",
        "。",
        "！",
        "；",
        "\n",
        ". ",
        "…",
        " ",
    ]
)
summary_texts = st.lists(_summary_pieces, max_size=60).map("".join)


def _fits(text: str, cap: int) -> bool:
    return text_tokens(text, turn_tokens) <= cap


@given(summary_texts, st.integers(0, 200))
def test_truncation_keeps_the_longest_sentence_prefix_that_fits(text: str, cap: int) -> None:
    """The cut fits the cap and ends at a sentence end, one sentence more would not fit; when no
    sentence fits, the first is cut by characters (marked "…") and one character more would not fit."""
    result = truncate_to_tokens(text, cap, count=turn_tokens)
    assert _fits(result, cap)
    ends = [m.end() for m in re.finditer(r"[。！？!?；;\n]+|(?<=[.])\s+", text) if m.end() < len(text)]
    sentences = [text[:end].rstrip() for end in [*ends, len(text)]]
    first = sentences[0]
    char_cuts = ["", *(first[:n].rstrip() + "…" for n in range(1, len(first) + 1))]
    assert result in sentences or result in char_cuts
    by_sentence = (
        result in sentences
        and result != ""
        and (result == sentences[-1] or not _fits(sentences[_last_index(sentences, result) + 1], cap))
    )
    by_chars = (
        result in char_cuts
        and not (first and _fits(first, cap))
        and (result == char_cuts[-1] or not _fits(char_cuts[_last_index(char_cuts, result) + 1], cap))
    )
    # A cut that would keep no more than a speaker's label ("客户…") keeps nothing instead.
    label = next((f"{name}:" for name in ("客户", "客服") if first.startswith(f"{name}:")), None)
    only_label = (
        result == ""
        and label is not None
        and not (first and _fits(first, cap))
        and not any(_fits(cut, cap) for cut in char_cuts[len(label) + 1 :])
    )
    assert by_sentence or by_chars or only_label


@given(st.integers(0, 300), st.data())
def test_search_from_a_guess_finds_what_a_binary_search_finds(upper: int, data: st.DataObject) -> None:
    """With counts monotone in prefix length, the cut does not depend on the guess it starts from,
    and a good guess costs two or three counts."""
    boundary = data.draw(st.integers(0, upper))
    near = data.draw(st.booleans())  # the usual case: the token boundary of the whole text is close
    guess = boundary + data.draw(st.integers(-1, 1)) if near else data.draw(st.integers(-2, upper + 2))
    probes: list[int] = []

    def fits(n: int) -> bool:
        probes.append(n)
        return n <= boundary

    assert _longest(upper, fits, guess=guess) == boundary
    assert 0 not in probes and all(0 < n <= upper for n in probes)
    if abs(guess - boundary) <= 1:
        assert len(probes) <= 3


def _last_index(items: list[str], item: str) -> int:
    # rstrip() makes neighbouring cuts equal ("ab" and "ab "): the search stops at the last of them.
    return len(items) - 1 - items[::-1].index(item)


def test_condensing_pass_is_enough_when_it_fits() -> None:
    turns = [Turn(role="customer", content="账单问题" * 50)] * 3
    result = compress(
        turns,
        "",
        0,
        budget=0,
        keep_last=1,
        summary_cap=30,
        summarize=lambda p, t: verbose(p, t) if t else "客户:账单问题。",
    )
    assert (result.summary, result.summarizer_calls) == ("客户:账单问题。", 2)


# -- other triggers and option checks ----------------------------------------------------------


def test_too_many_pending_turns_triggers() -> None:
    turns = [Turn(role="customer", content="好")] * 10
    result = compress(turns, "", 0, budget=10_000, keep_last=4, max_pending_turns=8, summarize=Recorder())
    assert (result.triggered_by, result.summarized_upto) == ("max_pending_turns", 6)


def test_context_window_fraction_triggers() -> None:
    turns = [Turn(role="customer", content="好", tokens=100)] * 6
    result = compress(
        turns,
        "",
        0,
        budget=10_000,
        keep_last=2,
        context_window=1000,
        trigger_fraction=0.5,
        summarize=Recorder(),
    )
    assert (result.triggered_by, result.summarized_upto) == ("context_window", 4)


def test_trigger_with_nothing_foldable_does_nothing() -> None:
    turns = [Turn(role="customer", content="好", tokens=1000)] * 4
    result = compress(turns, "", 0, budget=10, keep_last=4, summarize=Recorder())
    assert (result.summarized_upto, result.triggered_by, result.summarizer_calls) == (0, None, 0)


@pytest.mark.parametrize(
    "options",
    [
        {"context_window": 8000},
        {"trigger_fraction": 0.8},
        {"context_window": 8000, "trigger_fraction": 1.5},
        {"keep_last": -1},
        {"budget": -1},
    ],
)
def test_bad_options_are_rejected(options: dict[str, object]) -> None:
    with pytest.raises(InvalidInput):
        compress([Turn(role="customer", content="hi")], "", 0, **options)  # type: ignore[arg-type]


def test_summarized_upto_beyond_the_turns_is_rejected() -> None:
    with pytest.raises(InvalidInput, match="summarized_upto=3"):
        compress([Turn(role="customer", content="hi")], "", 3)


# -- prompt helpers and the extractive summarizer ----------------------------------------------


def test_summary_prompt_names_what_must_be_kept() -> None:
    for must in ("诉求", "单号", "金额", "承诺", "没有解决"):
        assert must in SUMMARY_PROMPT


def test_the_english_summary_prompt_names_what_must_be_kept_too() -> None:
    for must in ("request", "reference number", "amount", "promise", "not solved"):
        assert must in SUMMARY_PROMPTS["en"]
    # It names the two parts of the request by the labels an English request shows.
    user = summary_messages("", [Turn(role="customer", content="hi")], lang="en")[1]["content"]
    for label in ("Summary so far", "New conversation"):
        assert f'"{label}"' in SUMMARY_PROMPTS["en"] and f"{label}:" in user


def test_summary_messages() -> None:
    turns = [
        Turn(role="customer", content="账单多扣了"),
        Turn(role="agent", content="我们会在 3 个工作日内退款"),
    ]
    system, user = summary_messages("", turns)
    assert system == {"role": "system", "content": SUMMARY_PROMPT}
    assert user["role"] == "user" and "(无)" in user["content"]
    assert "客户:账单多扣了\n客服:我们会在 3 个工作日内退款" in user["content"]
    _, condense = summary_messages("旧纪要", [])
    assert "旧纪要" in condense["content"] and "新增对话" in condense["content"]


def test_an_english_ticket_s_summary_request_is_worded_in_english() -> None:
    turns = [
        Turn(role="customer", content="I was charged twice"),
        Turn(role="agent", content="We will refund you within 3 business days"),
    ]
    system, user = summary_messages("", turns, lang="en")
    assert system == {"role": "system", "content": SUMMARY_PROMPTS["en"]}
    assert "Summary so far:\n(none)" in user["content"]
    assert "Customer:I was charged twice\nAgent:We will refund you within 3 business days" in user["content"]
    _, condense = summary_messages("Old summary", [], lang="en")
    assert "Old summary" in condense["content"] and "no new conversation" in condense["content"]
    assert not re.search(r"[\u3400-\u9fff]", system["content"] + user["content"] + condense["content"])


def test_extractive_summary_keeps_fact_sentences() -> None:
    turns = [
        Turn(
            role="customer",
            content="你好。银行流水又同步失败了,报错 E3001。顺便说一句天气不错。希望到期前提醒我。",
        ),
        Turn(role="agent", content="抱歉给您带来不便。需要重新授权。我们会在 3 个工作日内回复。"),
        Turn(role="customer", content="好的。"),
    ]
    summary = extractive_summarize("客服:已核对账单号 B20260915001。", turns)
    assert summary.splitlines() == [
        "客服:已核对账单号 B20260915001。",
        "客户:你好",
        "客户:银行流水又同步失败了,报错 E3001",
        "客户:希望到期前提醒我",
        "客服:我们会在 3 个工作日内回复",
        "客户:好的",
    ]
    assert extractive_summarize(summary, turns) == summary  # idempotent: nothing is added twice


@given(conversations(), st.integers(0, 400))
def test_extractive_summary_is_bounded(turns: tuple[Turn, ...], max_chars: int) -> None:
    """The offline summarizer must respect its own bound, or the cap would always fall to truncation."""
    summary = extractive_summarize("", turns, max_chars=max_chars)
    assert len(summary) <= max_chars


def test_the_offline_summary_labels_speakers_in_the_ticket_s_language_whatever_the_fold_holds() -> None:
    # A fold of one-word turns reads as no language on its own: the ticket's language decides.
    turns = [Turn(role="customer", content="Alright"), Turn(role="customer", content="Cheers...")]
    summary = OfflineModel().chat(summary_messages("", turns, lang="en")).text
    assert summary.splitlines() == ["Customer:Alright", "Customer:Cheers..."]
