"""The optional model pass: it may add facts the rules missed, never ones its source turn lacks."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator

import psycopg
import pytest
from support.fakes import TECH, ScriptedLLM, seed_business
from support.openai_server import ScriptedServer, completion

from supportbot import Settings, SupportBot, Turn
from supportbot._state import Review
from supportbot.i18n._prompts import system_prompt
from supportbot.llm._openai import OpenAICompatible
from supportbot.memory._assist import ProposedFact, ProposedFacts, accept, assist_messages
from supportbot.memory._facts import update_ledger

TURNS = [
    Turn("customer", "升级费是 1680 元"),
    Turn("customer", "我们是在杭州分公司用的,负责对接的是小周,她下个季度休产假"),
]


def _proposal(**changes: object) -> ProposedFact:
    fields: dict[str, object] = {
        "kind": "person",
        "value": "小周",
        "canonical": "对接人:小周",
        "source_turn": 1,
        "quote": "负责对接的是小周",
        "subject": "person:小周",
    }
    return ProposedFact.model_validate({**fields, **changes})


def test_a_proposal_that_quotes_its_turn_is_kept_with_its_source_role() -> None:
    ledger = update_ledger((), TURNS, 0)
    [fact] = accept(ProposedFacts(facts=[_proposal()]), TURNS, 1, ledger)
    assert (fact.kind, fact.value, fact.key, fact.turn, fact.role) == (
        "person",
        "小周",
        "对接人:小周",
        1,
        "customer",
    )


@pytest.mark.parametrize(
    "changes",
    [
        {"quote": "负责对接的是小吴"},  # not in the turn: invented
        {"value": "小吴"},  # the value is not in its quote
        {"source_turn": 0},  # a turn this pass was not asked about
        {"source_turn": 7},
        {"quote": ""},
        {
            "kind": "amount",
            "value": "1680 元",
            "canonical": "CNY 1680.00",
            "quote": "1680 元",
            "source_turn": 0,
        },
    ],
)
def test_a_proposal_without_a_literal_quote_or_already_held_is_dropped(changes: dict[str, object]) -> None:
    ledger = update_ledger((), TURNS, 0)
    assert (
        accept(
            ProposedFacts(facts=[_proposal(**changes)]),
            TURNS,
            1 if changes.get("source_turn") != 0 else 0,
            ledger,
        )
        == []
    )


def test_a_model_correction_supersedes_only_a_current_fact_of_its_kind() -> None:
    turns = [*TURNS, Turn("customer", "哦对,那笔升级费最后谈成了一千九")]
    ledger = update_ledger((), turns, 0)
    fix = _proposal(
        kind="amount",
        value="一千九",
        canonical="CNY 1900.00",
        source_turn=2,
        quote="最后谈成了一千九",
        supersedes=0,
    )
    wrong_kind = _proposal(source_turn=2, value="升级费", canonical="x", quote="那笔升级费", supersedes=0)
    facts = accept(ProposedFacts(facts=[fix, wrong_kind]), turns, 2, ledger)
    assert [(f.key, f.supersedes) for f in facts] == [("CNY 1900.00", 0), ("x", None)]


def test_the_request_lists_the_new_turns_and_the_pinned_facts() -> None:
    ledger = update_ledger((), TURNS, 0)
    [system, user] = assist_messages(TURNS, 1, ledger)
    assert "quote" in system["content"]
    assert "[1] customer:" in user["content"] and "[0]" not in user["content"]
    assert "(0) amount: CNY 1680.00" in user["content"]


def test_an_english_ticket_s_request_is_worded_in_english() -> None:
    turns = [Turn("customer", "The upgrade fee is 1680 CNY"), Turn("customer", "Our contact there is Zhou")]
    [system, user] = assist_messages(turns, 0, (), lang="en")
    assert system == {"role": "system", "content": system_prompt("assist", "en")}
    assert user["content"] == (
        "New conversation:\n[0] customer: The upgrade fee is 1680 CNY"
        "\n[1] customer: Our contact there is Zhou\n\nFacts already pinned:\n(none)"
    )


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    with ScriptedServer() as s:
        yield s


@contextlib.contextmanager
def _assisted_bot(
    database_url: str, server: ScriptedServer, proposals: ProposedFacts
) -> Iterator[SupportBot]:
    """A bot whose fact-assist pass asks the scripted server (which proposes ``proposals``, then
    triages and passes the review); the demo business system seeded."""
    with psycopg.connect(database_url) as conn:
        seed_business(conn)
    server.script(
        completion(proposals.model_dump_json()),
        completion(TECH.model_dump_json()),
        completion(Review(passed=True).model_dump_json()),
    )
    small = OpenAICompatible(base_url=server.url, api_key="k", model="small", timeout=5.0, max_retries=0)
    settings = Settings(database_url=database_url, fact_assist=True)
    with SupportBot.open(
        database_url, llm=ScriptedLLM(), small_llm=small, settings=settings, backend="demo"
    ) as bot:
        yield bot


def test_with_a_real_small_model_the_pass_runs_in_the_round(
    database_url: str, server: ScriptedServer
) -> None:
    proposals = ProposedFacts(
        facts=[
            _proposal(source_turn=0, quote="负责对接的是小周"),
            _proposal(source_turn=0, value="老吴", canonical="对接人:老吴", quote="对接人是老吴"),  # invented
        ]
    )
    with _assisted_bot(database_url, server, proposals) as bot:
        ticket = bot.open_ticket("wugang@example.com", subject="对接", body=TURNS[1].content).ticket_id
        state = bot.state(ticket)
    people = [(f.key, f.role, f.turn) for f in state.facts if f.kind == "person"]
    assert people == [("对接人:小周", "customer", 0)]
    asked = json.dumps(server.requests[0].body, ensure_ascii=False)
    assert "找出清单里还没有的事实" in asked
    assert state.round_spend.calls >= 3  # the pass is paid for like any model call


def test_an_english_ticket_s_pass_is_asked_in_english(database_url: str, server: ScriptedServer) -> None:
    with _assisted_bot(database_url, server, ProposedFacts()) as bot:
        bot.open_ticket("wugang@example.com", subject="contact", body="Our contact person there is Zhou")
    system, user = server.requests[0].body["messages"]
    assert system["content"].startswith(system_prompt("assist", "en"))  # then the schema, as always
    assert user["content"].startswith("New conversation:\n[0] customer: Our contact person there is Zhou")
