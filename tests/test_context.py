"""What the model sees: section order, sizes per section, and the degradation ladder."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.strategies import conversations

from supportbot import Hit, Settings, SupportState, Turn
from supportbot._records import Finding
from supportbot._state import Review, Role, Ticket
from supportbot.i18n._prompts import (
    SECTIONS,
    PromptSections,
    language_of,
    section_labels,
    system_prompt,
    system_words,
)
from supportbot.memory import _ledger as ledger
from supportbot.memory._compress import PROMPT_LABEL_TOKENS, render_turns, text_tokens
from supportbot.memory._facts import update_ledger
from supportbot.memory._sentences import SENTENCE_KINDS
from supportbot.memory._tokens import count_tokens, turn_tokens, with_tokens
from supportbot.reply import _context as context
from supportbot.reply._caches import Caches
from supportbot.reply._findings import render

NOW = datetime(2026, 10, 15, tzinfo=UTC)
ORDER = ["hits", "findings", "basics", "profile", "facts", "summary", "history", "latest"]


def _state(
    *, hits: int = 3, findings_lines: int = 5, body: str = "银行流水同步失败,提示 E3001"
) -> SupportState:
    texts: list[tuple[Role, str]] = [
        ("customer", "我的账单号是 INV-2026-0415,扣了 ¥128.00。"),
        ("agent", "已为您查询,请稍候。"),
        ("customer", "还有,希望到期前提醒我续费。"),
        ("agent", "好的,我们会在 3 个工作日内回复。"),
        ("customer", body),
    ]
    turns = tuple(
        with_tokens(Turn(role, text, round=1 + i // 2, idx=i)) for i, (role, text) in enumerate(texts)
    )
    articles = tuple(
        Hit(
            id=f"KB-bank-00{i}",
            title=f"银行同步问题 {i}",
            body="请在设置中重新授权银行账户。" * 20,
            url=f"https://help.example.com/kb/KB-bank-00{i}",
            score=1.0 / i,
        )
        for i in range(1, hits + 1)
    )
    findings = "\n".join(
        f"账单 INV-2026-04{i:02d}:3588.00 CNY,2026-04-{i:02d},paid" for i in range(findings_lines)
    )
    return SupportState(
        ticket=Ticket("T000001", "wugang@example.com", "银行流水", texts[0][1], NOW),
        turns=turns,
        summary="客户多次询问银行同步。",
        summarized_upto=1,
        facts=update_ledger((), turns, 0),
        profile="专业版年付 VIP。E3001 已出现 3 次。",
        hits=articles,
        findings=findings,
    )


def _user(prompt: context.Prompt) -> str:
    content = prompt.messages[-1]["content"]
    assert isinstance(content, str)
    return content


def test_sections_come_in_the_seeds_order_with_the_latest_message_last() -> None:
    state = _state()
    prompt = context.draft_prompt(state)
    text = _user(prompt)
    positions = [
        text.index(marker)
        for marker in (
            context.LABELS["hits"],
            context.LABELS["findings"],
            "发件邮箱",
            context.LABELS["profile"],
            context.LABELS["facts"],
            context.LABELS["summary"],
            context.LABELS["history"],
            context.LABELS["latest"],
        )
    ]
    assert positions == sorted(positions)
    assert text.endswith(context.LABELS["latest"] + "银行流水同步失败,提示 E3001")
    assert [k for k in prompt.usage if k in ORDER] == ORDER
    # Turn 0 is covered by the summary, so only its pinned facts are shown, not the turn itself.
    assert "INV-2026-0415" in text and "我的账单号是" not in text


def test_usage_adds_up_and_never_undercounts_the_real_prompt() -> None:
    for state in (
        _state(),
        _state(hits=0, findings_lines=0),
        _state(body="Sync failed again, error E3001. " * 40),
    ):
        prompt = context.draft_prompt(state, budget=5000)
        sections = {k: v for k, v in prompt.usage.items() if k not in ("total", "budget")}
        assert prompt.usage["total"] > sum(sections.values()) and prompt.usage["budget"] == 5000
        real = sum(count_tokens(m["content"]) + 4 for m in prompt.messages)
        assert real <= prompt.tokens <= real * 1.1


def test_a_prompt_that_fits_is_not_degraded() -> None:
    state = _state()
    prompt = context.fit(context.draft_prompt, state, budget=100_000)
    assert prompt is not None and prompt.trim == context.Trim()
    assert _user(prompt).count("[KB-bank-") == 3


def test_the_ladder_drops_hits_before_it_shortens_findings() -> None:
    state = _state(hits=3, findings_lines=40)
    full = context.draft_prompt(state).tokens
    one_hit = context.draft_prompt(state, context.Trim(max_hits=1)).tokens
    prompt = context.fit(context.draft_prompt, state, budget=one_hit)
    assert prompt is not None and prompt.trim == context.Trim(max_hits=1) and prompt.tokens <= one_hit < full
    assert "[KB-bank-001]" in _user(prompt) and "[KB-bank-002]" not in _user(prompt)
    assert context.LABELS["cut"] not in _user(prompt)

    tighter = context.fit(context.draft_prompt, state, budget=one_hit - 1)
    assert tighter is not None and tighter.trim.findings_tokens is not None
    assert context.LABELS["cut"] in _user(tighter) and tighter.tokens < one_hit


def test_the_latest_message_is_never_cut_so_a_huge_one_does_not_fit() -> None:
    huge = "银行流水同步失败," * 800
    state = _state(body=huge)
    assert context.fit(context.draft_prompt, state, budget=2000) is None
    smallest = context.draft_prompt(state, context.LADDER[-1], 2000)
    assert _user(smallest).endswith(huge)
    message = context.over_budget_message(smallest, 2000, _settings())
    assert "latest" in message and "SUPPORTBOT_CONTEXT_WINDOW" in message


def test_review_prompt_carries_the_draft_and_classify_prompt_no_reference() -> None:
    state = _state()
    review = context.review_prompt(dataclasses.replace(state, draft="请重新授权 [KB-bank-001]。"))
    assert "请重新授权 [KB-bank-001]。" in _user(review) and "draft" in review.usage
    classify = context.classify_prompt(state)
    assert "hits" not in classify.usage and context.LABELS["hits"] not in _user(classify)


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_a_prompt_s_instructions_are_in_the_ticket_s_language(lang: str) -> None:
    """The instructions follow the section labels: an English ticket told in Chinese what to do
    would be answered worse, and perhaps in Chinese."""
    state = _state() if lang == "zh" else _english_state()
    state = dataclasses.replace(state, draft="Please re-authorize [KB-bank-001].")
    assert context.ticket_language(state) == lang
    builders = {
        "classify": context.classify_prompt,
        "draft": context.draft_prompt,
        "review": context.review_prompt,
    }
    for name, build in builders.items():
        system, user = build(state).messages
        assert system == {"role": "system", "content": system_prompt(name, lang)}
        assert section_labels(lang)["latest"] in user["content"]
    assert system_prompt("draft", "zh") == context.DRAFT_PROMPT  # the Chinese, under its old name


def test_a_ticket_s_language_is_counted_on_from_its_turns_but_never_from_other_turns() -> None:
    """Each round's turns are counted on from the last count (a round adds a turn or two), which
    is only right while the turns begin with the ones counted: another state of the ticket (a
    fork, a test) is counted anew."""
    chinese, english = _state(), _english_state()
    assert context.ticket_language(chinese) == "zh"
    said = Turn("customer", "Thanks, please also send the invoice to my office.", idx=5)
    more = tuple(dataclasses.replace(said, idx=5 + i) for i in range(4))
    assert context.ticket_language(dataclasses.replace(chinese, turns=(*chinese.turns, *more))) == "en"
    assert context.ticket_language(english) == "en"  # the same ticket id, other turns from the first
    assert context.ticket_language(dataclasses.replace(english, turns=chinese.turns)) == "zh"


def _english_state() -> SupportState:
    """``_state()`` with every customer turn in English (the latest one holds the body)."""
    state = _state(body="The bank sync still fails with error E3001.")
    turns = tuple(
        with_tokens(
            dataclasses.replace(
                turn, content=f"My bill INV-2026-0415 was charged twice ({turn.idx}).", tokens=None
            )
        )
        if turn.role == "customer" and turn.idx != len(state.turns) - 1
        else turn
        for turn in state.turns
    )
    return dataclasses.replace(state, turns=turns)


def _settings() -> Settings:
    return Settings(context_window=3024)


def test_pinned_sentences_come_only_from_folded_turns_and_are_not_capped_by_count() -> None:
    state = _state()  # turn 0 folded; turns 2 (a request) and 3 (a promise) still verbatim in history
    shown = context.pinned_facts(state)
    assert {f.kind for f in shown} >= {"id", "amount"}
    assert not [f for f in shown if f.kind in SENTENCE_KINDS]
    folded = dataclasses.replace(state, summarized_upto=4)
    sentences = [f for f in context.pinned_facts(folded) if f.kind in SENTENCE_KINDS]
    assert [f.kind for f in sentences] == ["request", "promise"]


def test_a_tight_allowance_drops_sentences_before_exact_facts_and_says_how_many() -> None:
    folded = state = _state()
    folded = dataclasses.replace(state, summarized_upto=4)
    everything = context.draft_prompt(folded, facts_allowance=10_000)
    assert context.FACTS_OMITTED not in everything.usage
    exact = [f for f in folded.facts if f.kind not in SENTENCE_KINDS]
    tight = ledger.view(folded.facts, summarized_upto=4, allowance=70)
    assert set(tight.shown) == set(exact) and tight.omitted == 2
    # The facts share the history budget: they get what the summary and the unfolded turns leave,
    # and never less than half of it (here the turns leave less: half of 140 is their room).
    used = text_tokens(folded.summary, turn_tokens) + sum(turn_tokens(t) for t in folded.turns[4:])
    assert 140 - PROMPT_LABEL_TOKENS - used < 70
    prompt = context.draft_prompt(folded, facts_allowance=140)
    assert prompt.usage[context.FACTS_OMITTED] == 2 and "另有2条事实未列出" in _user(prompt)
    assert prompt.usage["facts"] <= 70 + count_tokens(context.LABELS["facts"] + "\n")
    assert "INV-2026-0415" in _user(prompt) and "CNY 128.00" in _user(prompt)
    roomy = context.draft_prompt(folded, facts_allowance=10_000 + used)
    assert context.FACTS_OMITTED not in roomy.usage  # nothing left out while the budget has room


def test_the_summary_yields_its_room_before_a_fact_is_left_out() -> None:
    """A summary folded while the facts still fitted gives its room back once they grow: facts are
    exact and the summary lossy, so it keeps only its newest lines that fit beside them."""
    lines = [f"客户第{i}次说明:银行那边说账户一切正常,让我们找你们处理。" for i in range(1, 9)]
    folded = dataclasses.replace(_state(), summarized_upto=4, summary="\n".join(lines))
    facts = sum(count_tokens(p) for p in ledger.view(folded.facts, summarized_upto=4).pieces)
    turns = sum(turn_tokens(t) for t in folded.turns[4:])
    budget = PROMPT_LABEL_TOKENS + turns + facts + 2  # every fact fits, once the summary yields
    assert facts > budget // 2  # (below half the budget, facts are never left out anyway)
    prompt = context.draft_prompt(folded, facts_allowance=budget)
    assert context.FACTS_OMITTED not in prompt.usage and "summary" not in prompt.usage
    assert "INV-2026-0415" in _user(prompt) and "希望到期前提醒我续费" in _user(prompt)
    # With room to spare, the newest lines that fit stay, in their order.
    assert context._newest_lines("\n".join(lines), text_tokens("\n".join(lines[-3:]), turn_tokens)) == (
        "\n".join(lines[-3:])
    )


# -- the counted and remembered ticket part equals the plain one --------------------------------


def _language(state: SupportState) -> str:
    """The ticket's language: its customer's, by the package's one rule."""
    said = [turn.content for turn in state.turns if turn.role == "customer"]
    return language_of(said or [state.ticket.body])


def _plain_prompt(
    system: str, reference: list[tuple[str, str]], state: SupportState, trim: context.Trim, budget: int
) -> context.Prompt:
    """The prompt as built before sections were counted in pieces and remembered: every section
    rendered from the state and counted whole (history and latest from the turns' stored counts)."""
    t, latest = state.ticket, state.latest_customer_message
    lang = _language(state)
    labels = section_labels(lang)
    sections = [
        *reference,
        ("basics", labels["basics"].format(email=t.customer_email, subject=t.subject)),
    ]
    if state.profile:
        sections.append(("profile", labels["profile"] + state.profile))
    if facts := ledger.render_facts(state.facts, summarized_upto=state.summarized_upto, lang=lang):
        sections.append(("facts", labels["facts"] + "\n" + facts))
    if state.summary:
        sections.append(("summary", labels["summary"] + "\n" + state.summary))
    history = [turn for turn in state.turns[state.summarized_upto :] if turn is not latest]
    if history:
        sections.append(("history", labels["history"] + "\n" + render_turns(history, lang)))
    sections.append(("latest", labels["latest"] + (latest.content if latest else t.body)))
    stored = {
        "history": sum(turn_tokens(turn) for turn in history),
        "latest": turn_tokens(latest) if latest else count_tokens(t.body),
    }
    usage = {"system": count_tokens(system) + 4}
    for name, text in sections:
        usage[name] = stored.get(name, count_tokens(text))
    usage["total"] = sum(usage.values()) + 4 + len(sections)
    usage["budget"] = budget
    body = "\n\n".join(text for _, text in sections)
    return context.Prompt(
        [{"role": "system", "content": system}, {"role": "user", "content": body}], usage, trim
    )


def _plain_reference(state: SupportState, trim: context.Trim) -> list[tuple[str, str]]:
    hits = state.hits if trim.max_hits is None else state.hits[: trim.max_hits]
    sections = []
    if hits:
        articles = "\n".join(f"[{h.id}] {h.title}:{h.body}" for h in hits)
        sections.append(("hits", section_labels(_language(state))["hits"] + "\n" + articles))
    if state.findings:
        findings = state.findings
        if trim.findings_tokens is not None:
            findings = context._clip_tokens(
                findings, trim.findings_tokens, section_labels(_language(state))["cut"]
            )
        sections.append(("findings", section_labels(_language(state))["findings"] + "\n" + findings))
    return sections


def _plain_prompts(state: SupportState, trim: context.Trim) -> list[context.Prompt]:
    reference = _plain_reference(state, trim)
    draft = list(reference)
    if state.review is not None and not state.review.passed:
        problems = "\n".join(f"- {p}" for p in state.review.problems)
        draft.append(("problems", section_labels(_language(state))["problems"] + "\n" + problems))
    evidence = (
        [
            (
                "evidence",
                section_labels(_language(state))["evidence"]
                + "\n"
                + "\n\n".join(text for _, text in reference),
            )
        ]
        if reference
        else []
    )
    instructions = system_words(_language(state))
    return [
        _plain_prompt(instructions["classify"], [], state, trim, 900),
        _plain_prompt(instructions["draft"], draft, state, trim, 900),
        _plain_prompt(
            instructions["review"],
            [*evidence, ("draft", f"{section_labels(_language(state))['draft']}\n{state.draft}")],
            state,
            trim,
            900,
        ),
    ]


_TEXTS = st.sampled_from(
    [
        "",
        "客户多次询问银行同步。",
        "账单 INV-2026-0415:3588.00 CNY,paid\n订阅:专业版年付",
        " 前面有空格",
        "E3001\n",
        "我们会在 3 个工作日内回复 [KB-bank-001]。",
        "Sync failed, error E3001.",
    ]
)


@settings(max_examples=60, deadline=None)
@given(conversations(min_turns=1, max_turns=12), st.data())
def test_prompts_are_the_plain_prompts_byte_for_byte_and_count_for_count(
    turns: tuple[Turn, ...], data: st.DataObject
) -> None:
    """Counting sections from their pieces and remembering the ticket part change no prompt and no
    count, for a state followed by the states a round makes from it (new summary, ledger, draft)."""
    counted = tuple(with_tokens(turn) for turn in turns)
    state = _state()
    caches = Caches()  # one bot's, across the states of the example
    for _ in range(3):
        seen = counted[: data.draw(st.integers(1, len(counted)))]
        upto = data.draw(st.integers(0, len(seen)))
        state = dataclasses.replace(
            state,
            turns=seen,
            summarized_upto=upto,
            facts=update_ledger((), seen, 0),
            summary=data.draw(_TEXTS),
            profile=data.draw(_TEXTS),
            findings=data.draw(_TEXTS),
            draft=data.draw(_TEXTS),
            hits=state.hits[: data.draw(st.integers(0, 3))],
            review=data.draw(st.sampled_from([None, Review(passed=False, problems=["语气", "金额"])])),
        )
        trim = data.draw(st.sampled_from([*context.LADDER, *context.LAST_RUNGS]))
        builders = (context.classify_prompt, context.draft_prompt, context.review_prompt)
        built = [build(state, trim, 900, caches=caches) for build in builders]
        assert [_prose(prompt) for prompt in built] == _plain_prompts(state, trim)
        # The records beside the prose do not depend on what the caches remembered either.
        uncached = [build(state, trim, 900) for build in builders]
        assert [p.messages[-1][SECTIONS] for p in built] == [p.messages[-1][SECTIONS] for p in uncached]


def _prose(prompt: context.Prompt) -> context.Prompt:
    """The prompt as a model's API receives it: role and content, without the records."""
    messages = [{k: v for k, v in m.items() if k != SECTIONS} for m in prompt.messages]
    return dataclasses.replace(prompt, messages=messages)


def test_the_records_beside_a_prompt_are_what_its_sections_show() -> None:
    found = tuple(
        Finding.of(
            "invoice", id=f"INV-{i}", amount="3588.00", currency="CNY", issued_on="2026-04-01", status="paid"
        )
        for i in range(40)
    )
    state = dataclasses.replace(_state(hits=3), findings=render(found), account_findings=found, draft="草稿")
    full = context.draft_prompt(state).messages[-1][SECTIONS]
    assert full == PromptSections(latest="银行流水同步失败,提示 E3001", hits=state.hits, findings=found)
    trim = context.Trim(max_hits=1, findings_tokens=50)
    clipped = context.draft_prompt(state, trim)
    shown = clipped.messages[-1][SECTIONS]
    assert shown.hits == state.hits[:1] and 0 < len(shown.findings) < len(found)
    assert render(shown.findings) + "\n" + context.LABELS["cut"] in clipped.messages[-1]["content"]
    review = context.review_prompt(state).messages[-1][SECTIONS]
    assert review.draft == "草稿" and review.evidence is not None and "草稿" not in review.evidence
    assert "INV-39" in review.evidence and context.classify_prompt(state).messages[-1][SECTIONS].draft is None


def test_forgetting_drops_the_remembered_ticket_parts() -> None:
    caches = Caches()
    context.draft_prompt(_state(), caches=caches)
    assert caches.ticket_parts._items
    caches.clear()
    assert caches.ticket_parts._items == () and caches.facts_sections._items == ()
    assert caches.size() == 0


def test_a_bot_s_caches_are_its_own() -> None:
    mine, theirs = Caches(), Caches()
    context.draft_prompt(_state(), caches=mine)
    assert len(mine.ticket_parts) == 1 and theirs.size() == 0
