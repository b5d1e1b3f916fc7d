"""What the system says of a ticket, to its customer and to the host, and what it tells the model
of it, is in the ticket's language."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from decimal import Decimal
from typing import NamedTuple

import pytest
from pydantic import BaseModel
from support.fakes import HUMAN, REFUND, TECH, ScriptedLLM, cite_hits, rows

from supportbot import Completion, OfflineModel, SupportBot, i18n
from supportbot.errors import ModelError
from supportbot.i18n._prompts import system_prompt, system_words
from supportbot.llm.base import Message

OpenBot = Callable[..., SupportBot]


class Ticket(NamedTuple):
    lang: i18n.Language
    subject: str
    question: str  # answered from the help center
    human: str  # asks for a person
    refund: str  # asks for a refund of {amount} CNY
    follow_up: str  # the question again, the {n}th time


CHINESE = Ticket(
    "zh",
    "求助",
    "银行流水同步失败,提示 E3001",
    "发票又开错了,转人工",
    "申请退款 {amount} 元",
    "第 {n} 次重新授权了,银行流水还是同步失败,提示 E3001",
)
ENGLISH = Ticket(
    "en",
    "help",
    "The bank sync fails with error E3001, what should I do?",
    "My invoice is wrong again, I want to talk to a person",
    "I would like a refund of {amount} CNY please",
    "I re-authorized it {n} times and the bank sync still fails with error E3001",
)
BOTH = pytest.mark.parametrize("ticket", [CHINESE, ENGLISH], ids=["zh", "en"])


def says(of: Ticket, key: str, /, **fields: object) -> str:
    return i18n.translator("round", of.lang)(key, **fields)


@BOTH
def test_a_hand_off_is_told_to_the_customer_and_the_host_in_the_ticket_s_language(
    open_bot: OpenBot, database_url: str, ticket: Ticket
) -> None:
    bot = open_bot(ScriptedLLM(triage=HUMAN))
    result = bot.open_ticket("lina@example.com", subject=ticket.subject, body=ticket.human)
    assert result.outcome == "escalated"
    assert result.reply == says(ticket, "handoff.reply", ticket=result.ticket_id)
    [(reason,)] = rows(
        database_url, "SELECT reason FROM demo.escalations WHERE ticket_id = %s", result.ticket_id
    )
    assert reason == bot.state(result.ticket_id).handoff_reason == says(ticket, "handoff.triage")


@BOTH
def test_a_model_fault_is_reported_to_the_host_in_the_ticket_s_language(
    open_bot: OpenBot, database_url: str, ticket: Ticket
) -> None:
    def down(prompt: str) -> str:
        raise ModelError("upstream returned 503 three times")

    bot = open_bot(ScriptedLLM(triage=TECH, draft=down))
    result = bot.open_ticket("wugang@example.com", subject=ticket.subject, body=ticket.question)
    assert result.outcome == "escalated"
    [(reason,)] = rows(
        database_url, "SELECT reason FROM demo.escalations WHERE ticket_id = %s", result.ticket_id
    )
    assert reason == says(
        ticket, "handoff.model_failed", step="draft", error="upstream returned 503 three times"
    )


@BOTH
def test_a_resolved_ticket_s_record_states_its_resolution_in_the_ticket_s_language(
    open_bot: OpenBot, database_url: str, ticket: Ticket
) -> None:
    bot = open_bot(ScriptedLLM(triage=TECH, draft=cite_hits))
    result = bot.open_ticket("wugang@example.com", subject=ticket.subject, body=ticket.question)
    assert result.outcome == "resolved"
    [(facts,)] = rows(database_url, "SELECT facts FROM demo.past_tickets WHERE id = %s", result.ticket_id)
    assert facts["resolution"] == says(ticket, "resolution.cited", articles="KB-bank-001")


@BOTH
def test_a_refund_decision_is_stated_in_the_ticket_s_language(open_bot: OpenBot, ticket: Ticket) -> None:
    bot = open_bot(ScriptedLLM(triage=REFUND, draft=cite_hits))
    asked = bot.open_ticket(
        "wugang@example.com", subject=ticket.subject, body=ticket.refund.format(amount=100)
    )
    assert asked.outcome == "waiting_approval"
    approved = bot.approve(asked.ticket_id, approver="王经理")
    ids = {"refund": "R000001", "amount": "100.00", "currency": "CNY"}
    assert approved.reply.endswith("\n\n" + says(ticket, "refund.approved", **ids))

    again = bot.open_ticket(
        "wugang@example.com", subject=ticket.subject, body=ticket.refund.format(amount=50)
    )
    rejected = bot.reject(again.ticket_id, approver="王经理", note="duplicate")
    expected = says(ticket, "refund.rejected", refund="R000002") + says(
        ticket, "refund.reason", note="duplicate"
    )
    assert rejected.reply.endswith("\n\n" + expected)


@BOTH
def test_an_edited_approval_states_both_amounts_in_the_ticket_s_language(
    open_bot: OpenBot, ticket: Ticket
) -> None:
    bot = open_bot(ScriptedLLM(triage=REFUND, draft=cite_hits))
    asked = bot.open_ticket(
        "wugang@example.com", subject=ticket.subject, body=ticket.refund.format(amount=100)
    )
    done = bot.approve(asked.ticket_id, approver="王经理", amount=Decimal("60.00"), note="partial")
    text = says(
        ticket, "refund.approved_edited", refund="R000001", approved="60.00", amount="100.00", currency="CNY"
    )
    assert done.reply.endswith(text + says(ticket, "refund.note", note="partial"))


class RecordingModel:
    """The offline model, keeping the messages of every request it answers."""

    def __init__(self) -> None:
        self.inner = OfflineModel()
        self.requests: list[list[Message]] = []
        self._lock = threading.Lock()

    def chat(
        self, messages: Sequence[Message], *, schema: type[BaseModel] | None = None, temperature: float = 0.0
    ) -> Completion:
        with self._lock:
            self.requests.append(list(messages))
        return self.inner.chat(messages, schema=schema, temperature=temperature)


@BOTH
def test_the_model_is_instructed_in_the_ticket_s_language(open_bot: OpenBot, ticket: Ticket) -> None:
    """Triage, draft, review and summary requests each carry their instructions in the language
    their sections are labelled in: the ticket's, never the other one."""
    model = RecordingModel()
    bot = open_bot(model, history_budget=120, keep_last=2)  # a small budget: the history is folded
    tid = bot.open_ticket("wugang@example.com", subject=ticket.subject, body=ticket.question).ticket_id
    for n in range(2, 5):
        bot.send(tid, ticket.follow_up.format(n=n))
    assert bot.state(tid).summarized_upto > 0
    systems = {str(request[0]["content"]) for request in model.requests}
    assert systems == {
        system_prompt(name, ticket.lang) for name in ("classify", "draft", "review", "summary")
    }
    summaries = [r for r in model.requests if r[0]["content"] == system_prompt("summary", ticket.lang)]
    previous = system_words(ticket.lang)["summary.previous"]
    assert all(str(r[1]["content"]).startswith(previous) for r in summaries)


def test_the_ticket_s_sentences_are_in_both_catalogues_and_the_english_ones_are_english() -> None:
    """tests/test_i18n.py checks every domain for the same keys and fields; these two are the
    ones the round and the findings speak from, so they must be among them."""
    assert {"round", "findings"} <= set(i18n.domains())
    for domain in ("round", "findings"):
        assert i18n.catalog(domain, "en").keys() == i18n.catalog(domain, "zh").keys()
    english = says(ENGLISH, "handoff.reply", ticket="T1")
    assert english.isascii() and not says(CHINESE, "handoff.reply", ticket="T1").isascii()


@BOTH
def test_what_is_wrong_with_a_draft_is_told_to_the_model_in_the_ticket_s_language(
    open_bot: OpenBot, ticket: Ticket
) -> None:
    """A draft the rule checks refuse (no article cited, an amount nothing supports) is redrafted
    from a list of its problems, and a draft is reviewed against the data it must agree with: both
    are labelled and worded in the ticket's language, as the rest of the prompt is."""
    drafts: list[str] = []

    def draft(prompt: str) -> str:
        drafts.append(prompt)
        return "Refunds of 777 CNY are paid." if len(drafts) == 1 else cite_hits(prompt)

    model = ScriptedLLM(draft=draft)
    bot = open_bot(model)
    bot.open_ticket("wugang@example.com", subject=ticket.subject, body=ticket.question)
    assert len(drafts) == 2
    words = i18n.catalog("prompt", ticket.lang)
    told = [words["problem.no_citation"], words["problem.amount"].format(values="777")]
    other = i18n.catalog("prompt", "en" if ticket.lang == "zh" else "zh")
    assert all(problem in drafts[1] for problem in told)
    assert other["problem.no_citation"] not in drafts[1]
    reviews = [
        p[-1]["content"] for p in model.prompts if p[0]["content"] == system_prompt("review", ticket.lang)
    ]
    assert reviews and all(words["section.evidence"] in review for review in reviews)
