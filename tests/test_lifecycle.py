"""Forget a customer, prune closed tickets, reset and reseed: on a real PostgreSQL, scanned generically."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
import pytest
from psycopg import sql
from support.both_bots import opened_parts
from support.fakes import HUMAN, REFUND, TECH, ScriptedLLM, cite_hits, latest_part, scalar

from supportbot import Settings, SupportBot
from supportbot._state import Triage
from supportbot.backend.demo import load_demo_data
from supportbot.backend.demo._data import CUSTOMERS, DEMO_TODAY
from supportbot.errors import (
    CustomerBusy,
    InvalidInput,
    LeaseLost,
    StepPruned,
    UnknownCustomer,
    UnknownStep,
    UnknownTicket,
)
from supportbot.memory import _facts as facts
from supportbot.memory import _ledger as ledger
from supportbot.memory import _tokens as tokens
from supportbot.reply import _context as context
from supportbot.reply._caches import Caches
from supportbot.store import _lease as lease_repo

SCHEMAS = ("supportbot", "demo")
# 吴刚 as the demo data has him: id, email, name, phone.
WUGANG = ("C0001", "wugang@example.com", "吴刚", "13800001234")


def _route(prompt: str) -> Triage:
    latest = latest_part(prompt)
    if "退款" in latest:
        return REFUND
    return HUMAN if "人工" in latest else TECH


@pytest.fixture
def parts(demo_url: str, front: str) -> Iterator[tuple[SupportBot, Any]]:
    llm = ScriptedLLM(triage=_route, draft=cite_hits)
    with opened_parts(front, demo_url, llm=llm, settings=Settings(database_url=demo_url)) as made:
        yield made


@pytest.fixture
def bot(parts: tuple[SupportBot, Any]) -> SupportBot:
    return parts[0]


@pytest.fixture
def caches(parts: tuple[SupportBot, Any]) -> Caches:
    """The bot's caches of customer text (its dependencies were built here, not read off the bot)."""
    caches: Caches = parts[1].caches
    return caches


def _traces(url: str, needles: Sequence[str]) -> dict[str, int]:
    """Rows per ``schema.table.column`` whose value, as text, contains any needle, in every table."""
    patterns = [f"%{n}%" for n in needles]
    found: dict[str, int] = {}
    with psycopg.connect(url) as conn:
        columns = conn.execute(
            "SELECT c.table_schema, c.table_name, c.column_name FROM information_schema.columns c"
            " JOIN information_schema.tables t USING (table_schema, table_name)"
            " WHERE c.table_schema = ANY(%s) AND t.table_type = 'BASE TABLE' ORDER BY 1, 2, 3",
            (list(SCHEMAS),),
        ).fetchall()
        assert len(columns) > 60  # every table of both schemas, not an empty catalog query
        for schema, table, column in columns:
            query = sql.SQL("SELECT count(*) FROM {} WHERE {}::text LIKE ANY(%s)").format(
                sql.Identifier(schema, table), sql.Identifier(column)
            )
            count = scalar(conn, query, (patterns,))
            if count:
                found[f"{schema}.{table}.{column}"] = count
    return found


def _rows(url: str) -> dict[str, Counter[str]]:
    """Every row of every table of both schemas, as text."""
    with psycopg.connect(url) as conn:
        tables = conn.execute(
            "SELECT schemaname, tablename FROM pg_tables WHERE schemaname = ANY(%s) ORDER BY 1, 2",
            (list(SCHEMAS),),
        ).fetchall()
        return {
            f"{s}.{t}": Counter(
                r[0]
                for r in conn.execute(
                    sql.SQL("SELECT x::text FROM {} x").format(sql.Identifier(s, t))
                ).fetchall()
            )
            for s, t in tables
        }


def _without(rows: dict[str, Counter[str]], needles: Sequence[str]) -> dict[str, Counter[str]]:
    return {
        table: Counter({r: n for r, n in counted.items() if not any(x in r for x in needles)})
        for table, counted in rows.items()
    }


def _hold_lease(url: str, ticket_id: str, owner: str = "worker-elsewhere") -> None:
    """A worker in another process takes the ticket, as it does at the start of a round."""
    with psycopg.connect(url, autocommit=True) as conn:
        assert lease_repo.acquired(lease_repo.queue_acquire_lease(conn, ticket_id, owner, 60)) is not None


# -- forget ------------------------------------------------------------------------------------


def _tickets_in_every_state(bot: SupportBot, demo_url: str) -> dict[str, dict[str, str]]:
    """吴刚, 李娜 and 周杰 with resolved, waiting, escalated and mid-round tickets."""
    made: dict[str, dict[str, str]] = {}
    # Refunds follow the 30-day policy: 李娜 and 周杰 renew their annual plans inside the window.
    with psycopg.connect(demo_url) as conn:
        conn.execute(
            "INSERT INTO demo.invoices"
            " (id, customer_id, subscription_id, amount, currency, issued_on, status)"
            " SELECT 'INV-RENEWAL-' || customer_id, customer_id, id, amount, 'CNY', %s, 'paid'"
            " FROM demo.subscriptions WHERE customer_id IN ('C0002', 'C0007') AND status = 'active'",
            (DEMO_TODAY - timedelta(days=5),),
        )
    for customer in (c for c in CUSTOMERS if c.id in ("C0001", "C0002", "C0007")):
        email = customer.email
        resolved = bot.open_ticket(email, subject="银行流水", body="银行流水又同步失败了,提示 E3001")
        bot.send(
            resolved.ticket_id, f"我是{customer.name},手机 {customer.phone},邮箱 {email},重新授权了还是不行"
        )
        waiting = bot.open_ticket(email, subject="退款", body="年付不想用了,申请退款 100 元")
        escalated = bot.open_ticket(email, subject="投诉", body="我要投诉,转人工")
        busy = bot.open_ticket(email, subject="登录", body="登录以后页面一直在转圈")
        assert (resolved.outcome, waiting.outcome, escalated.outcome) == (
            "resolved",
            "waiting_approval",
            "escalated",
        )
        _hold_lease(demo_url, busy.ticket_id)
        made[email] = {
            "resolved": resolved.ticket_id,
            "waiting": waiting.ticket_id,
            "escalated": escalated.ticket_id,
            "busy": busy.ticket_id,
        }
    return made


def test_forget_leaves_no_trace_in_any_table_and_touches_no_one_else(
    bot: SupportBot, caches: Caches, demo_url: str
) -> None:
    made = _tickets_in_every_state(bot, demo_url)
    mine = sorted(made["wugang@example.com"].values())
    needles = [*WUGANG, *mine]
    before = _rows(demo_url)
    assert _traces(demo_url, WUGANG), "the scan must see him before, or its silence after means nothing"
    lina_state = bot.state(made["lina@example.com"]["resolved"])
    assert caches.size() > 0, "the rounds above fill the bot's caches"
    assert context._BY_TURNS, "and the memo of ticket languages"
    assert ledger._BY_LEDGER, "and the memo of ledgers shown"

    report = bot.forget_customer("WuGang@example.com", force=True)

    assert report.tickets == mine and report.email == "WuGang@example.com"
    assert report.rows["supportbot.tickets"] == 4 and report.rows["demo.customers"] == 1
    assert report.rows["supportbot.turns"] >= 8 and report.rows["supportbot.approvals"] == 1
    assert report.rows["supportbot.customer_profiles"] == 1 and report.rows["demo.refunds"] == 1
    assert report.rows["demo.past_tickets"] >= 3 and report.rows["demo.escalations"] == 1
    assert report.total == sum(report.rows.values())
    assert _traces(demo_url, needles) == {}
    # Nor in this process's memory: the texts kept for token counts and checks are dropped too.
    assert tokens._count.cache_info().currsize == 0 and caches.size() == 0
    assert facts._extract_text.cache_info().currsize == 0  # the summary lines scanned
    assert not context._BY_TURNS  # the turns behind the ticket languages worked out
    assert not context._COUNTED  # and the turns counted for them
    assert not ledger._BY_LEDGER  # the facts behind the ledgers shown
    # Every row that did not mention him is still there, byte for byte; every row that did is gone.
    # The one row added: the audit log's record of the forgetting (free of the needles, as checked above).
    after = _rows(demo_url)
    (logged,) = after.pop("supportbot.audit").elements()
    assert "forget_customer" in logged
    expected = _without(before, needles)
    assert expected.pop("supportbot.audit") == Counter()  # nothing was audited before
    assert after == expected
    assert bot.state(made["lina@example.com"]["resolved"]) == lina_state
    with pytest.raises(UnknownTicket):
        bot.state(mine[0])
    with pytest.raises(UnknownCustomer):
        bot.profile("wugang@example.com")
    # 李娜's refund still waits for its human, and can be decided after his data is gone.
    done = bot.approve(made["lina@example.com"]["waiting"], approver="王经理")
    assert done.outcome == "resolved"


def test_a_busy_ticket_blocks_the_forget_and_nothing_is_deleted(bot: SupportBot, demo_url: str) -> None:
    made = _tickets_in_every_state(bot, demo_url)["wugang@example.com"]
    before = _rows(demo_url)
    with pytest.raises(CustomerBusy) as caught:
        bot.forget_customer("wugang@example.com")
    message = str(caught.value)
    assert made["waiting"] in message and made["busy"] in message and "mid-round" in message
    assert "force=True" in message and "Retry later" in message
    assert set(caught.value.tickets) == {made["waiting"], made["busy"]}
    assert _rows(demo_url) == before

    bot.forget_customer("wugang@example.com", force=True)
    assert _traces(demo_url, [*WUGANG, *made.values()]) == {}
    with psycopg.connect(demo_url, autocommit=True) as conn, pytest.raises(LeaseLost):
        lease_repo.renew_lease(conn, made["busy"], "worker-elsewhere", 30)  # the cancelled round's worker


def test_an_expired_lease_does_not_block_and_an_unknown_email_deletes_nothing(
    bot: SupportBot, demo_url: str
) -> None:
    ticket = bot.open_ticket("chenjing@example.com", subject="发票", body="发票抬头写错了").ticket_id
    with psycopg.connect(demo_url) as conn:  # a worker died mid-round long ago
        conn.execute(
            "UPDATE supportbot.tickets SET lease_owner = 'dead', lease_expires = now() - interval '1 hour'"
            " WHERE id = %s",
            (ticket,),
        )
    before = _rows(demo_url)
    nobody = bot.forget_customer("nobody@example.com")
    assert (nobody.tickets, nobody.total) == ([], 0) and _rows(demo_url) == before
    report = bot.forget_customer("chenjing@example.com")
    assert report.tickets == [ticket] and _traces(demo_url, ["C0003", "chenjing@example.com", "陈静"]) == {}


# -- prune -------------------------------------------------------------------------------------


def _later() -> datetime:
    return datetime.now(UTC) + timedelta(minutes=1)


def _closed_and_open(bot: SupportBot, demo_url: str) -> dict[str, str]:
    three = bot.open_ticket(
        "wugang@example.com", subject="银行流水", body="银行流水同步失败,提示 E3001"
    ).ticket_id
    bot.send(three, "重新授权了还是不行")
    bot.send(three, "好了,谢谢")
    escalated = bot.open_ticket("lina@example.com", subject="发票", body="发票抬头写错了").ticket_id
    bot.send(escalated, "我要投诉,转人工")
    single = bot.open_ticket("chenjing@example.com", subject="发票", body="发票怎么下载").ticket_id
    waiting = bot.open_ticket("sunli@example.com", subject="退款", body="申请退款 100 元").ticket_id
    leased = bot.open_ticket("liuyang@example.com", subject="登录", body="登录报错").ticket_id
    bot.send(leased, "还是登录不了")
    _hold_lease(demo_url, leased)
    return {"three": three, "escalated": escalated, "single": single, "waiting": waiting, "leased": leased}


def test_prune_keeps_every_state_and_reports_what_it_freed(bot: SupportBot, demo_url: str) -> None:
    t = _closed_and_open(bot, demo_url)
    states = {name: bot.state(ticket) for name, ticket in t.items()}
    histories = {name: bot.history(ticket) for name, ticket in t.items()}
    closed = ("three", "escalated", "single")
    rebuilt = {name: {r.seq: bot.state_at(t[name], r.seq) for r in histories[name]} for name in closed}
    assert bot.prune(closed_before=datetime.now(UTC) - timedelta(hours=1)).tickets == []  # all too recent

    report = bot.prune(closed_before=_later())

    # Each closed ticket loses what came before its last round's checkpoint (taken after prepare_context).
    assert report.tickets == sorted(t[name] for name in closed)
    assert report.rows["supportbot.steps"] > 0 and report.rows["supportbot.checkpoints"] >= 3
    assert report.bytes_freed > 0
    for name, ticket in t.items():
        assert bot.state(ticket) == states[name], name
    for name in ("waiting", "leased"):
        assert bot.history(t[name]) == histories[name] and bot.pruned(t[name]) is None
    for name in closed:
        kept = bot.history(t[name])
        mark = bot.pruned(t[name])
        assert mark is not None and kept[0].seq == mark.kept_from > 1 and kept[0].step == "prepare_context"
        assert kept == histories[name][mark.kept_from - 1 :]
        assert mark.steps == mark.kept_from - 1 and mark.bytes > 0
        for record in kept:  # every step that is left still rebuilds exactly
            assert bot.state_at(t[name], record.seq) == rebuilt[name][record.seq]
        with pytest.raises(UnknownStep):
            bot.state_at(t[name], 1)
        with pytest.raises(StepPruned, match="was pruned on"):
            bot.state_at(t[name], 1)
    assert bot.prune(closed_before=_later()).tickets == []  # nothing left to take


def test_a_pruned_ticket_takes_a_follow_up(bot: SupportBot) -> None:
    ticket = bot.open_ticket(
        "wugang@example.com", subject="银行流水", body="银行流水同步失败,提示 E3001"
    ).ticket_id
    bot.send(ticket, "重新授权了还是不行")
    before = bot.state(ticket)
    bot.prune(closed_before=_later())
    again = bot.send(ticket, "又出现了 E3001")
    after = bot.state(ticket)
    assert again.outcome == "resolved" and after.round == before.round + 1
    assert after.turns[: len(before.turns)] == before.turns and len(after.turns) == len(before.turns) + 2
    assert bot.history(ticket)[-1].next_step is None and bot.history(ticket)[-1].round == after.round


def test_a_resent_message_of_a_pruned_ticket_gets_its_round_s_answer(bot: SupportBot) -> None:
    ticket = bot.open_ticket(
        "wugang@example.com", subject="银行流水", body="银行流水同步失败,提示 E3001"
    ).ticket_id
    first = bot.send(ticket, "重新授权了还是不行", message_id="m-2")
    bot.prune(closed_before=_later())  # the round's start record goes: its checkpoint comes after it
    assert bot.history(ticket)[0].step == "prepare_context"
    again = bot.send(ticket, "重新授权了还是不行", message_id="m-2")
    assert again == first and len(bot.state(ticket).turns) == 4


def test_keep_final_leaves_one_step_and_the_same_state(bot: SupportBot, demo_url: str) -> None:
    t = _closed_and_open(bot, demo_url)
    states = {name: bot.state(ticket) for name, ticket in t.items()}
    last = {name: bot.history(ticket)[-1] for name, ticket in t.items()}
    report = bot.prune(closed_before=_later(), keep="final")
    assert report.tickets == sorted([t["three"], t["escalated"], t["single"]]) and report.bytes_freed > 0
    for name, ticket in t.items():
        assert bot.state(ticket) == states[name], name
    for name in ("three", "escalated", "single"):
        assert bot.history(t[name]) == [last[name]]
        assert bot.state_at(t[name], last[name].seq) == states[name]
    assert bot.send(t["single"], "还有一个问题").outcome == "resolved"


def test_prune_rejects_bad_options(bot: SupportBot) -> None:
    with pytest.raises(InvalidInput, match="keep"):
        bot.prune(closed_before=_later(), keep="everything")  # type: ignore[arg-type]
    with pytest.raises(InvalidInput, match="timezone"):
        bot.prune(closed_before=datetime.now())


# -- reset and reseed ----------------------------------------------------------------------------


def test_reseed_never_splices_an_old_conversation_into_a_new_ticket(bot: SupportBot, demo_url: str) -> None:
    """Seed 000: T000153 「银行流水又同步失败了」, a reseed, and the next ticket continued the old turns."""
    with psycopg.connect(demo_url) as conn:
        conn.execute("SELECT setval('supportbot.ticket_numbers', 152)")
    old = bot.open_ticket("wugang@example.com", subject="银行流水", body="银行流水又同步失败了")
    assert old.ticket_id == "T000153"
    bot.send(old.ticket_id, "重新授权了还是不行")

    cleared = bot.reset()
    assert cleared.tickets == ["T000153"] and cleared.total == sum(cleared.rows.values())
    assert cleared.rows["supportbot.turns"] == 4 and cleared.rows["supportbot.tickets"] == 1
    assert cleared.rows["demo.customers"] == 9 and cleared.rows["demo.kb_articles"] > 0
    assert all(
        sum(rows.values()) == 0
        for table, rows in _rows(demo_url).items()
        if table != "supportbot.schema_migrations"
    )
    with psycopg.connect(demo_url) as conn:
        load_demo_data(conn)  # the reseed

    new = bot.open_ticket("wugang@example.com", subject="发票", body="发票抬头写错了")
    assert new.ticket_id == "T000154"  # numbering goes on: no id is ever handed out twice
    state = bot.state(new.ticket_id)
    assert [t.content for t in state.turns] == ["发票抬头写错了", new.reply] and state.round == 1
    assert next(r.seq for r in bot.history(new.ticket_id)) == 1
    with pytest.raises(UnknownTicket):
        bot.state("T000153")

    # Even with numbering rewound by hand, as seed 000's reseed did, nothing is left to splice in:
    # not in the database, not in this process's caches.
    with psycopg.connect(demo_url) as conn:
        conn.execute("SELECT setval('supportbot.ticket_numbers', 152)")
    bot.reset()
    with psycopg.connect(demo_url) as conn:
        load_demo_data(conn)
    reused = bot.open_ticket("lina@example.com", subject="发票", body="发票抬头写错了,请改成拾光文化")
    assert reused.ticket_id == "T000153"
    turns = bot.state("T000153").turns
    assert [t.content for t in turns] == ["发票抬头写错了,请改成拾光文化", reused.reply]
    assert not any("银行流水" in t.content for t in turns)


@pytest.mark.parametrize("mask", [True, False])
def test_mask_pii_setting_reaches_the_refund_reason_and_the_ledger_keeps_the_number(
    demo_url: str, mask: bool
) -> None:
    phone = "13912345678"
    llm = ScriptedLLM(triage=_route, draft=cite_hits)
    settings = Settings(database_url=demo_url, mask_pii=mask)
    with SupportBot.open(demo_url, llm=llm, settings=settings, backend="demo") as bot:
        ticket = bot.open_ticket(
            "wugang@example.com", subject="退款", body=f"希望退款 100 元,请打 {phone} 联系我"
        ).ticket_id
        state = bot.state(ticket)
    assert phone in state.turns[0].content  # raw turns keep what the customer wrote
    ledger = " ".join(f.value for f in state.facts)
    with psycopg.connect(demo_url) as conn:
        reason = scalar(conn, "SELECT reason FROM demo.refunds WHERE ticket_id = %s", (ticket,))
    # The ticket's own ledger shows the number to call back; the reason leaves the ticket.
    assert phone in ledger and "139****5678" not in ledger
    assert (phone in reason, "139****5678" in reason) == (not mask, mask)
