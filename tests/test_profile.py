"""The customer profile: examples for the stories it must tell, properties for the rules behind them.

Pure: no database. Strategies live here because tests/support/strategies.py belongs to another module.
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from datetime import date
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from supportbot import Customer, PastTicket, Profile, Subscription
from supportbot.backend.demo._data import DEMO_TODAY, demo_profile_inputs
from supportbot.errors import InvalidInput
from supportbot.memory._profile import build_profile, fingerprint

TODAY = date(2026, 10, 15)
SELF = "C-self"
OTHER = "C-other"


def _sub(
    plan: str = "专业版",
    cycle: str = "年付",
    status: str = "active",
    started: date = date(2025, 11, 3),
    sub_id: str = "S1",
    customer_id: str = SELF,
) -> Subscription:
    return Subscription(
        id=sub_id,
        customer_id=customer_id,
        plan=plan,
        billing_cycle=cycle,
        status=status,
        started_on=started,
        renews_on=None,
        amount=Decimal("3588.00"),
    )


def _ticket(ticket_id: str, resolved_on: date | None, customer_id: str = SELF, **facts: Any) -> PastTicket:
    return PastTicket(
        id=ticket_id, customer_id=customer_id, subject="工单", resolved_on=resolved_on, facts=facts
    )


def _bank(ticket_id: str, day: date, **extra: Any) -> PastTicket:
    return _ticket(
        ticket_id, day, category="technical", error_codes=["E3001"], resolution="重新授权", **extra
    )


WUGANG = Customer(id=SELF, name="吴刚", email="wugang@example.com", is_vip=True)
WUGANG_TICKETS = [
    _bank("T1", date(2026, 4, 2)),
    _bank("T2", date(2026, 7, 1), requests=["希望授权到期前提醒"]),
    _bank("T3", date(2026, 9, 29), requests=["希望授权到期前提醒"]),
]


# -- examples -----------------------------------------------------------------------------------


def test_wugang_profile_names_the_code_count_months_and_request() -> None:
    profile = build_profile(WUGANG, [_sub()], WUGANG_TICKETS, today=TODAY)
    assert (
        profile.text == "专业版年付 VIP。E3001 已出现 3 次(2026-04/07/09),均重新授权解决;希望授权到期前提醒。"
    )
    assert len(profile.text) <= 100
    top = profile.recurring[0]
    assert (top.key, top.count, top.months) == ("E3001", 3, ("2026-04", "2026-07", "2026-09"))
    assert top.resolutions == ("重新授权",) * 3
    assert profile.open_requests == ("希望授权到期前提醒",)
    assert (profile.plan, profile.billing_cycle, profile.is_vip) == ("专业版", "年付", True)
    assert (profile.ticket_count, profile.skipped_records) == (3, 0)


def test_demo_wugang_profile_fits_default_cap() -> None:
    inputs = demo_profile_inputs("wugang@example.com")
    assert inputs is not None
    text = build_profile(*inputs, today=DEMO_TODAY).text
    for expected in ("专业版年付", "VIP", "E3001", "3 次", "2026-04/07/09", "重新授权", "希望授权到期前提醒"):
        assert expected in text
    assert len(text) <= 100


def test_no_history_gives_only_subscription_facts() -> None:
    customer = Customer(id=SELF, name="陈静", email="chenjing@example.com")
    profile = build_profile(customer, [_sub("基础版", "月付")], [], today=TODAY)
    assert profile.text == "基础版月付。"
    assert (profile.recurring, profile.open_requests, profile.promises) == ((), (), ())
    assert (profile.ticket_count, profile.skipped_records) == (0, 0)


def test_latest_active_subscription_wins_and_a_lapsed_one_is_named() -> None:
    old = _sub("基础版", "月付", status="cancelled", started=date(2026, 1, 5), sub_id="S1")
    new = _sub("专业版", "年付", started=date(2026, 6, 5), sub_id="S2")
    customer = Customer(id=SELF, name="李娜", email="lina@example.com")
    assert build_profile(customer, [new, old], [], today=TODAY).text == "专业版年付。"
    lapsed = build_profile(customer, [old], [], today=TODAY)
    assert (lapsed.plan, lapsed.text) == (None, "无有效订阅,曾用基础版月付。")


def test_tie_in_count_goes_to_the_more_recent_issue() -> None:
    tickets = [
        _ticket("A", date(2026, 2, 9), category="technical", error_codes=["E3002"], resolution="稍后重试"),
        _ticket("B", date(2026, 3, 16), category="invoice", resolution="作废重开"),
        _ticket("C", date(2026, 7, 21), category="technical", error_codes=["E3002"], resolution="稍后重试"),
        _ticket("D", date(2026, 9, 8), category="invoice", resolution="作废重开"),
    ]
    customer = Customer(id=SELF, name="赵敏", email="zhaomin@example.com")
    profile = build_profile(customer, [_sub()], tickets, today=TODAY, max_chars=60)
    assert [(i.key, i.count) for i in profile.recurring] == [("invoice", 2), ("E3002", 2)]
    # The key order alone would put E3002 first; recency decides, and the cap keeps the winner.
    assert "发票问题已出现 2 次" in profile.text and "E3002" not in profile.text


def test_code_repeated_in_one_ticket_counts_once() -> None:
    tickets = [_ticket("T1", date(2026, 4, 2), category="technical", error_codes=["E3001", "e3001", "E3001"])]
    profile = build_profile(WUGANG, [_sub()], tickets, today=TODAY)
    assert [(i.key, i.count) for i in profile.recurring] == [("E3001", 1)]


def test_tickets_after_today_are_ignored_not_skipped() -> None:
    future = _bank("T9", date(2026, 12, 1))
    profile = build_profile(WUGANG, [_sub()], [*WUGANG_TICKETS, future], today=TODAY)
    assert profile == build_profile(WUGANG, [_sub()], WUGANG_TICKETS, today=TODAY)


@pytest.mark.parametrize(
    "record",
    [
        _ticket("X", date(2026, 5, 1), error_codes=["E3001"]),  # no category
        _ticket("X", date(2026, 5, 1), category="technical", error_codes="E3001"),
        _ticket("X", date(2026, 5, 1), category="technical", error_codes=[3001]),
        _ticket("X", None, category="technical"),
        _ticket("X", date(2026, 5, 1), customer_id=OTHER, category="technical"),
        _ticket("", date(2026, 5, 1), category="technical"),
        _ticket("X", date(2026, 5, 1), category="  "),
        _ticket("X", date(2026, 5, 1), category="billing", requests="开专票"),
        _ticket("X", date(2026, 5, 1), category="billing", amounts=[True]),
        _ticket("X", date(2026, 5, 1), category="billing", resolution=7),
        PastTicket("X", SELF, "工单", date(2026, 5, 1), ["technical"]),  # type: ignore[arg-type]
        PastTicket("X", SELF, "工单", "2026-05-01", {"category": "api"}),  # type: ignore[arg-type]
    ],
)
def test_a_corrupt_record_is_skipped_and_counted(record: PastTicket) -> None:
    profile = build_profile(WUGANG, [_sub()], [*WUGANG_TICKETS, record], today=TODAY)
    expected = build_profile(WUGANG, [_sub()], WUGANG_TICKETS, today=TODAY)
    assert profile == dataclasses.replace(expected, skipped_records=1)


def test_duplicate_ids_count_once_and_conflicting_copies_not_at_all() -> None:
    same = build_profile(WUGANG, [_sub()], [*WUGANG_TICKETS, WUGANG_TICKETS[0]], today=TODAY)
    assert (same.recurring[0].count, same.skipped_records) == (3, 1)
    conflict = _ticket("T1", date(2026, 4, 2), category="billing")
    both = build_profile(WUGANG, [_sub()], [*WUGANG_TICKETS, conflict], today=TODAY)
    assert (both.recurring[0].count, both.skipped_records) == (2, 2)


def test_another_customers_subscription_is_skipped() -> None:
    foreign = _sub("企业版", "年付", started=date(2026, 9, 1), sub_id="S9", customer_id=OTHER)
    profile = build_profile(WUGANG, [_sub(), foreign], [], today=TODAY)
    assert (profile.plan, profile.skipped_records) == ("专业版", 1)


def test_nonsense_options_are_refused() -> None:
    with pytest.raises(InvalidInput):
        build_profile(WUGANG, [], [], today=TODAY, max_chars=0)
    with pytest.raises(InvalidInput):
        build_profile(WUGANG, [], [], today=TODAY, language="xx")


def test_text_is_byte_identical_across_processes() -> None:
    inputs = demo_profile_inputs("zhaomin@example.com")
    assert inputs is not None
    here = [build_profile(*inputs, today=DEMO_TODAY).text, fingerprint(*inputs)]
    script = (
        "import json, sys\n"
        "from supportbot.backend.demo._data import DEMO_TODAY, demo_profile_inputs\n"
        "from supportbot.memory._profile import build_profile, fingerprint\n"
        "i = demo_profile_inputs('zhaomin@example.com')\n"
        "sys.stdout.write(json.dumps([build_profile(*i, today=DEMO_TODAY).text, fingerprint(*i)]))\n"
    )
    for seed in ("0", "4242"):  # different string hashing: set or dict-of-hash order would show
        env = {**os.environ, "PYTHONHASHSEED": seed}
        done = subprocess.run(
            [sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True
        )
        assert json.loads(done.stdout) == here


def test_fingerprint_sees_an_upgrade_without_a_ticket() -> None:
    before = fingerprint(WUGANG, [_sub("基础版", "月付")], WUGANG_TICKETS)
    after = fingerprint(WUGANG, [_sub("专业版", "月付")], WUGANG_TICKETS)
    assert before != after
    # Equal values in another spelling are the same input: 3588 == 3588.00.
    same = dataclasses.replace(_sub("基础版", "月付"), amount=Decimal("3588"))
    assert fingerprint(WUGANG, [same], WUGANG_TICKETS) == before


# -- strategies ---------------------------------------------------------------------------------

CODES = st.sampled_from(["E3001", "E3002", "E3003", "E2001", "E2002"])
CATEGORIES = st.sampled_from(["technical", "billing", "invoice", "refund", "account", "plan_change", "api"])
WORDS = st.text(alphabet="授权到期提醒发票抬头退款重开希望尽快", min_size=1, max_size=14)
PAST = st.dates(min_value=date(2024, 1, 1), max_value=TODAY)
FUTURE = st.dates(min_value=date(2026, 10, 16), max_value=date(2027, 12, 31))

FACTS = st.fixed_dictionaries(
    {"category": CATEGORIES},
    optional={
        "error_codes": st.lists(CODES, max_size=3),
        "resolution": st.none() | WORDS,
        "requests": st.lists(WORDS | st.just("  "), max_size=2),
        "promises": st.lists(WORDS, max_size=2),
        "amounts": st.lists(st.decimals(0, 10_000, places=2).map(str) | st.integers(0, 10_000), max_size=2),
        "ids": st.lists(st.from_regex(r"INV-[0-9]{4}", fullmatch=True), max_size=2),
        "dates": st.lists(PAST.map(date.isoformat), max_size=2),
    },
)


@st.composite
def tickets(draw: st.DrawFn, customer_id: str = SELF, resolved: st.SearchStrategy[date] = PAST) -> PastTicket:
    return PastTicket(
        id="",
        customer_id=customer_id,
        subject=draw(st.text(max_size=8)),
        resolved_on=draw(resolved),
        facts=draw(FACTS),
    )


def _numbered(prefix: str) -> Any:
    """Give each ticket of a list a distinct id; a deliberately blank one (" ") stays blank."""
    return lambda ts: [
        dataclasses.replace(t, id=f"{prefix}-{n}") if t.id == "" else t for n, t in enumerate(ts)
    ]


@st.composite
def corrupt_tickets(draw: st.DrawFn) -> PastTicket:
    """A valid ticket broken in one of the ways old exports break them."""
    good = draw(tickets())
    facts = dict(good.facts)
    how = draw(
        st.sampled_from(
            [
                "no_category",
                "codes_str",
                "codes_int",
                "no_date",
                "facts_list",
                "requests_str",
                "amount_bool",
                "blank_id",
                "resolution_int",
            ]
        )
    )
    if how == "no_category":
        del facts["category"]
    elif how == "codes_str":
        facts["error_codes"] = "E3001"
    elif how == "codes_int":
        facts["error_codes"] = ["E3001", 3002]
    elif how == "requests_str":
        facts["requests"] = "希望提醒"
    elif how == "amount_bool":
        facts["amounts"] = [False]
    elif how == "resolution_int":
        facts["resolution"] = 1
    changes: dict[str, Any] = {"facts": ["broken"] if how == "facts_list" else facts}
    if how == "no_date":
        changes["resolved_on"] = None
    if how == "blank_id":
        changes["id"] = " "
    return dataclasses.replace(good, **changes)


@st.composite
def subscriptions(draw: st.DrawFn) -> list[Subscription]:
    n = draw(st.integers(0, 3))
    return [
        Subscription(
            id=f"S{i}",
            customer_id=SELF,
            plan=draw(st.sampled_from(["基础版", "专业版", "企业版"])),
            billing_cycle=draw(st.sampled_from(["月付", "年付"])),
            status=draw(st.sampled_from(["active", "cancelled"])),
            started_on=draw(PAST),
            renews_on=None,
            amount=draw(st.decimals(1, 10_000, places=2)),
        )
        for i in range(n)
    ]


CUSTOMERS = st.builds(
    Customer,
    id=st.just(SELF),
    name=st.sampled_from(["吴刚", "赵敏"]),
    email=st.just("someone@example.com"),
    is_vip=st.booleans(),
)


@st.composite
def scenarios(draw: st.DrawFn) -> tuple[Customer, list[Subscription], list[PastTicket]]:
    """A customer, subscriptions, and valid tickets of which at least one carries an error code."""
    anchor = {**draw(tickets()).facts, "error_codes": [draw(CODES)]}
    valid = draw(st.lists(tickets(), max_size=8))
    valid.append(PastTicket(id="", customer_id=SELF, subject="锚", resolved_on=draw(PAST), facts=anchor))
    return draw(CUSTOMERS), draw(subscriptions()), _numbered("T")(draw(st.permutations(valid)))


def _build(inputs: tuple[Customer, list[Subscription], list[PastTicket]], **options: Any) -> Profile:
    customer, subs, past = inputs
    return build_profile(customer, subs, past, today=TODAY, **options)


# -- properties ---------------------------------------------------------------------------------


@given(scenarios(), st.lists(corrupt_tickets(), max_size=3).map(_numbered("BAD")), st.data())
def test_record_order_does_not_matter(
    inputs: tuple[Customer, list[Subscription], list[PastTicket]], bad: list[PastTicket], data: st.DataObject
) -> None:
    """Rows come back from SQL in no promised order; a profile that followed it would flap."""
    customer, subs, past = inputs
    records = past + bad
    shuffled_subs = data.draw(st.permutations(subs))
    shuffled = data.draw(st.permutations(records))
    assert _build((customer, shuffled_subs, shuffled)) == _build((customer, subs, records))
    assert fingerprint(customer, shuffled_subs, shuffled) == fingerprint(customer, subs, records)


@given(scenarios(), st.lists(tickets(customer_id=OTHER), min_size=1, max_size=4).map(_numbered("O")))
def test_other_customers_tickets_are_skipped(
    inputs: tuple[Customer, list[Subscription], list[PastTicket]], foreign: list[PastTicket]
) -> None:
    """A wrong join must not leak one customer's history into another's profile; it only shows as skipped."""
    customer, subs, past = inputs
    mixed = _build((customer, subs, past + foreign))
    alone = _build(inputs)
    assert mixed == dataclasses.replace(alone, skipped_records=alone.skipped_records + len(foreign))


@given(scenarios(), tickets(), st.data())
def test_one_more_ticket_with_a_known_code_adds_exactly_one(
    inputs: tuple[Customer, list[Subscription], list[PastTicket]], extra: PastTicket, data: st.DataObject
) -> None:
    """Counts are tickets: a new ticket naming a code (even twice) raises that count by one and no other."""
    customer, subs, past = inputs
    before = _build(inputs, max_chars=1000)
    codes = [i.key for i in before.recurring if i.kind == "error_code"]
    code = data.draw(st.sampled_from(codes))
    added = dataclasses.replace(extra, id="NEW", facts=dict(extra.facts) | {"error_codes": [code, code]})
    after = _build((customer, subs, [*past, added]), max_chars=1000)
    counts_before = {(i.kind, i.key): i.count for i in before.recurring}
    counts_after = {(i.kind, i.key): i.count for i in after.recurring}
    assert counts_after == counts_before | {("error_code", code): counts_before[("error_code", code)] + 1}
    assert after.ticket_count == before.ticket_count + 1


@given(scenarios(), st.integers(min_value=20, max_value=200))
def test_text_never_exceeds_its_cap(
    inputs: tuple[Customer, list[Subscription], list[PastTicket]], cap: int
) -> None:
    """The prompt budget counts on it. Under the cap nothing may be cut; over it the plan line survives."""
    full = _build(inputs, max_chars=100_000).text
    capped = _build(inputs, max_chars=cap).text
    assert len(capped) <= cap
    if len(full) <= cap:
        assert capped == full
    else:
        plan_line = full.split("。", 1)[0] + "。"
        assert capped.startswith(plan_line) or len(plan_line) > cap


@given(scenarios(), st.lists(corrupt_tickets(), min_size=1, max_size=4).map(_numbered("BAD")))
def test_corrupt_records_are_skipped_and_counted(
    inputs: tuple[Customer, list[Subscription], list[PastTicket]], bad: list[PastTicket]
) -> None:
    """One broken row from an old export must neither crash the profile nor disappear without a trace."""
    customer, subs, past = inputs
    alone = _build(inputs)
    assert _build((customer, subs, past + bad)) == dataclasses.replace(
        alone, skipped_records=alone.skipped_records + len(bad)
    )


@given(scenarios(), st.lists(tickets(resolved=FUTURE), min_size=1, max_size=3).map(_numbered("F")))
def test_tickets_resolved_after_today_change_nothing(
    inputs: tuple[Customer, list[Subscription], list[PastTicket]], later: list[PastTicket]
) -> None:
    """A profile built as of a day must not see what was resolved after it, nor call it corrupt."""
    customer, subs, past = inputs
    assert _build((customer, subs, past + later)) == _build(inputs)


@given(scenarios())
def test_issues_are_ranked_by_count_then_recency_then_key(
    inputs: tuple[Customer, list[Subscription], list[PastTicket]],
) -> None:
    """The top issue is the one the text keeps under a tight cap, so the ranking must be exact."""
    profile = _build(inputs)
    ranks = [(-i.count, [-int(p) for p in i.months[-1].split("-")], i.key) for i in profile.recurring]
    assert ranks == sorted(ranks)
    for issue in profile.recurring:
        assert len(issue.months) == len(issue.resolutions) == issue.count
        assert list(issue.months) == sorted(issue.months)
