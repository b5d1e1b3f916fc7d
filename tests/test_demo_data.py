"""The demo data: consistent on its own, idempotent to load, and telling the stories the docs promise."""

from __future__ import annotations

import itertools
import re
from collections import Counter
from datetime import timedelta
from decimal import ROUND_HALF_UP, Decimal
from typing import Any

import psycopg
from psycopg import sql
from psycopg.rows import dict_row
from psycopg_pool import ConnectionPool

from supportbot import Customer, PastTicket, Subscription
from supportbot.backend.demo import load_demo_data
from supportbot.backend.demo._backend import DemoBackend
from supportbot.backend.demo._data import (
    CUSTOMERS,
    DEMO_TODAY,
    INVOICES,
    KB_ARTICLES,
    PAST_TICKETS,
    PLAN_PRICES,
    SUBSCRIPTIONS,
    demo_profile_inputs,
)
from supportbot.memory._profile import build_profile, fingerprint

TABLES = ("kb_articles", "customers", "subscriptions", "invoices", "past_tickets")


def _snapshot(conn: psycopg.Connection[Any]) -> dict[str, list[dict[str, Any]]]:
    with conn.cursor(row_factory=dict_row) as cur:
        query = sql.SQL("SELECT * FROM {} ORDER BY id")
        return {
            table: cur.execute(query.format(sql.Identifier("demo", table))).fetchall() for table in TABLES
        }


# -- the data on its own ------------------------------------------------------------------------


def test_articles_have_stable_ids_urls_and_a_few_sentences() -> None:
    assert 15 <= len(KB_ARTICLES) <= 30
    assert len({a.id for a in KB_ARTICLES}) == len(KB_ARTICLES)
    for article in KB_ARTICLES:
        assert re.fullmatch(r"KB-[a-z]+-\d{3}", article.id)
        assert article.url == f"https://help.example.com/kb/{article.id}"
        assert 3 <= article.body.count("。") <= 6, article.id
    corpus = "".join(a.title + a.body for a in KB_ARTICLES)
    for topic in (
        "E3001",
        "90 天",
        "E3002",
        "发票抬头",
        "30 天内",
        "人工审核",
        "升级",
        "两步验证",
        "API 密钥",
        "E2002",
    ):
        assert topic in corpus


def test_amounts_follow_the_price_list() -> None:
    subs = {s.id: s for s in SUBSCRIPTIONS}
    for sub in SUBSCRIPTIONS:
        assert sub.amount == PLAN_PRICES[(sub.plan, sub.billing_cycle)]
    assert PLAN_PRICES[("专业版", "年付")] == Decimal("3588.00")
    for invoice in INVOICES:
        sub = subs[invoice.subscription_id or ""]
        assert (invoice.customer_id, invoice.amount, invoice.currency) == (sub.customer_id, sub.amount, "CNY")
        assert sub.started_on <= invoice.issued_on <= DEMO_TODAY


def test_dates_and_statuses_agree() -> None:
    created = {c.id: c.created_at for c in CUSTOMERS}
    active = Counter(s.customer_id for s in SUBSCRIPTIONS if s.status == "active")
    assert max(active.values()) == 1
    for sub in SUBSCRIPTIONS:
        assert created[sub.customer_id] <= sub.started_on <= DEMO_TODAY
        if sub.status == "active":
            assert sub.renews_on is not None and sub.renews_on > DEMO_TODAY
        else:
            assert sub.renews_on is None
    for ticket in PAST_TICKETS:
        if ticket.resolved_on is not None:
            assert created[ticket.customer_id] <= ticket.resolved_on <= DEMO_TODAY
    assert len({c.email for c in CUSTOMERS}) == len({c.phone for c in CUSTOMERS}) == len(CUSTOMERS) >= 8


def test_wugang_lost_the_bank_authorization_every_90_days() -> None:
    days = sorted(t.resolved_on for t in PAST_TICKETS if t.customer_id == "C0001" and t.resolved_on)
    assert [d.strftime("%Y-%m") for d in days] == ["2026-04", "2026-07", "2026-09"]
    assert all(later - earlier == timedelta(days=90) for earlier, later in itertools.pairwise(days))


def test_the_refund_was_pro_rata_and_within_what_was_paid() -> None:
    (refund,) = [t for t in PAST_TICKETS if t.facts.get("category") == "refund"]
    (invoice,) = [i for i in INVOICES if i.id in refund.facts["ids"]]
    paid, refunded = (Decimal(a) for a in refund.facts["amounts"])
    assert refund.resolved_on is not None and (refund.resolved_on - invoice.issued_on).days <= 30
    used = (refund.resolved_on - invoice.issued_on).days
    assert paid == invoice.amount
    assert refunded == (paid * (365 - used) / 365).quantize(Decimal("0.01"), ROUND_HALF_UP) <= paid


def test_the_upgrade_replaced_the_old_plan_on_its_renewal_day() -> None:
    inputs = demo_profile_inputs("lina@example.com")
    assert inputs is not None
    _, subs, tickets = inputs
    old, new = sorted(subs, key=lambda s: s.started_on)
    assert (old.plan, old.status, new.plan, new.status, tickets) == (
        "基础版",
        "cancelled",
        "专业版",
        "active",
        [],
    )
    last_old = max(i.issued_on for i in INVOICES if i.subscription_id == old.id)
    assert last_old.replace(month=last_old.month + 1) == new.started_on


def test_every_story_shows_in_its_profile() -> None:
    def profile(email: str) -> Any:
        inputs = demo_profile_inputs(email)
        assert inputs is not None
        return build_profile(*inputs, today=DEMO_TODAY)

    assert profile("chenjing@example.com").text == "基础版月付。"
    corrupt = profile("liuyang@example.com")
    assert (corrupt.ticket_count, corrupt.skipped_records) == (1, 3)
    tied = profile("zhaomin@example.com").recurring
    assert [(i.key, i.count) for i in tied[:2]] == [("invoice", 2), ("E3002", 2)]
    assert all(len(profile(c.email).text) <= 100 for c in CUSTOMERS)


# -- loading ------------------------------------------------------------------------------------


def test_loading_twice_leaves_the_same_rows(database_url: str) -> None:
    with psycopg.connect(database_url) as conn:
        first = load_demo_data(conn)
        after_first = _snapshot(conn)
        second = load_demo_data(conn)
        after_second = _snapshot(conn)
    assert first == second == {table: len(rows) for table, rows in after_first.items()}
    assert after_first == after_second
    assert 15 <= first["kb_articles"] <= 30 and first["customers"] >= 8


def _profile_inputs(url: str, email: str) -> tuple[Customer, list[Subscription], list[PastTicket]] | None:
    """What Profiles reads through the demo backend: the customer, subscriptions, resolved tickets."""
    with ConnectionPool(url, min_size=1, kwargs={"autocommit": True}) as pool:
        backend = DemoBackend(pool)
        customer = backend.get_customer(email)
        if customer is None:
            return None
        return customer, backend.list_subscriptions(customer.id), backend.list_resolved_tickets(customer.id)


def test_one_read_returns_what_the_three_reads_return(database_url: str) -> None:
    """customer_records (backend.ReadsCustomerRecords) equals get_customer, list_subscriptions and
    list_resolved_tickets for each address, in order, in one query: every demo customer (written
    as a customer types it), an unknown address and a repeated one, together and one at a time.
    Amounts, days, missing days, facts and the lists' orders survive the JSON it travels in."""
    with psycopg.connect(database_url) as conn:
        load_demo_data(conn)
    emails = [f"  {c.email.upper()} " for c in CUSTOMERS]
    emails[3:3] = ["nobody@example.com", emails[0]]
    with ConnectionPool(database_url, min_size=1, kwargs={"autocommit": True}) as pool:
        backend = DemoBackend(pool)
        found = backend.customer_records(emails)
        assert len(found) == len(emails) and found[3] is None and found[4] == found[0]
        days_missing: set[bool] = set()
        rows = 0
        for email, records in zip(emails, found, strict=True):
            customer = backend.get_customer(email)
            if customer is None:
                assert records is None
                continue
            assert records is not None and records.customer == customer
            assert list(records.subscriptions) == backend.list_subscriptions(customer.id)
            assert list(records.resolved_tickets) == backend.list_resolved_tickets(customer.id)
            days_missing |= {s.renews_on is None for s in records.subscriptions}
            days_missing |= {t.resolved_on is None for t in records.resolved_tickets}
            rows += len(records.subscriptions) + len(records.resolved_tickets)
        assert backend.customer_records([]) == []
        # one address, as a round asks (its own statement): the same records
        assert [backend.customer_records([email])[0] for email in emails] == found
    assert rows >= len(SUBSCRIPTIONS) + len(PAST_TICKETS) and days_missing == {True, False}


def test_wugang_profile_from_the_database(database_url: str) -> None:
    with psycopg.connect(database_url) as conn:
        load_demo_data(conn)
    loaded = _profile_inputs(database_url, " WuGang@Example.com")
    assert loaded is not None
    profile = build_profile(*loaded, today=DEMO_TODAY)
    for expected in (
        "专业版年付 VIP",
        "E3001 已出现 3 次",
        "2026-04/07/09",
        "重新授权",
        "希望授权到期前提醒",
    ):
        assert expected in profile.text
    pure = demo_profile_inputs("wugang@example.com")
    assert pure is not None
    # The database round trip (numeric, date, jsonb key order) must not look like a change.
    assert profile == build_profile(*pure, today=DEMO_TODAY)
    assert fingerprint(*loaded) == fingerprint(*pure)


def test_corrupt_rows_load_and_are_counted(database_url: str) -> None:
    with psycopg.connect(database_url) as conn:
        load_demo_data(conn)
    loaded = _profile_inputs(database_url, "liuyang@example.com")
    assert _profile_inputs(database_url, "nobody@example.com") is None
    assert loaded is not None
    assert build_profile(*loaded, today=DEMO_TODAY).skipped_records == 3


def test_an_upgrade_without_a_ticket_changes_the_fingerprint(database_url: str) -> None:
    with psycopg.connect(database_url, autocommit=True) as conn:
        load_demo_data(conn)
        before = _profile_inputs(database_url, "lina@example.com")
        conn.execute(
            "UPDATE demo.subscriptions SET plan = %s, amount = %s WHERE id = %s",
            ("企业版", PLAN_PRICES[("企业版", "年付")], "SUB-C0002-2"),
        )
        after = _profile_inputs(database_url, "lina@example.com")
        load_demo_data(conn)
        restored = _profile_inputs(database_url, "lina@example.com")
    assert before is not None and after is not None and restored is not None
    # The ticket count did not move, so a cache keyed on it would have served the old plan.
    assert len(before[2]) == len(after[2]) == 0
    assert fingerprint(*after) != fingerprint(*before)
    assert build_profile(*after, today=DEMO_TODAY).text == "企业版年付。"
    assert fingerprint(*restored) == fingerprint(*before)
