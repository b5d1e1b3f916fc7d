"""The public surface: what `import supportbot` offers, and the calls whose shape is part of it."""

from __future__ import annotations

import dataclasses
import inspect
import warnings
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import get_args

import psycopg
import pytest
from fakes import REFUND, ScriptedLLM, rows
from psycopg import sql

import supportbot
from supportbot import (
    KeepMode,
    Outcome,
    ResetReport,
    Settings,
    SupportBot,
    TicketRow,
    TicketStatus,
    migrate,
)
from supportbot.errors import ConfigError, InvalidInput, StoreError, UnknownTicket
from supportbot.store._migrate import available

OpenBot = Callable[..., SupportBot]


def test_every_exported_name_exists_and_is_supportbots_own() -> None:
    assert sorted(supportbot.__all__) == sorted(set(supportbot.__all__))
    namespace: dict[str, object] = {}
    exec("from supportbot import *", namespace)
    assert set(namespace) - {"__builtins__"} == set(supportbot.__all__)
    for name in supportbot.__all__:
        value = getattr(supportbot, name)
        if inspect.isclass(value) or inspect.isfunction(value):
            assert value.__module__.startswith("supportbot."), name
    # The records a backend author returns, and the reports callers receive, are exported.
    for name in ("Customer", "Subscription", "Invoice", "Hit", "PastTicket", "RefundRequest"):
        assert dataclasses.is_dataclass(getattr(supportbot, name)), name
    for name in ("TicketRow", "Profile", "DeletionReport", "PruneReport", "ResetReport", "Fact"):
        assert dataclasses.is_dataclass(getattr(supportbot, name)), name


def test_choices_are_typed_and_match_what_the_engine_writes(open_bot: OpenBot, database_url: str) -> None:
    assert set(get_args(KeepMode)) == {"last", "final"}
    assert set(get_args(Outcome)) == {"resolved", "waiting_approval", "escalated", "queued", "with_human"}
    bot = open_bot(ScriptedLLM(triage=REFUND, draft="您好 [KB-refund-001]。"))
    paused = bot.open_ticket("wugang@example.com", subject="退款", body="申请退款 100 元")
    done = open_bot().open_ticket("lina@example.com", body="发票抬头写错了")
    assert {paused.outcome, done.outcome} <= set(get_args(Outcome))
    written = {status for (status,) in rows(database_url, "SELECT status FROM supportbot.tickets")}
    assert written == {"waiting_approval", "resolved"} and written <= set(get_args(TicketStatus))
    assert [t.id for t in bot.tickets(status="waiting_approval")] == [paused.ticket_id]
    with pytest.raises(InvalidInput, match="keep must be one of"):
        bot.prune(closed_before=datetime.now(UTC), keep="everything")  # type: ignore[arg-type]


def test_open_ticket_takes_subject_and_body_by_keyword(open_bot: OpenBot) -> None:
    bot = open_bot()
    with pytest.raises(TypeError):
        bot.open_ticket("wugang@example.com", "银行流水", "E3001 同步失败")  # type: ignore[misc]
    result = bot.open_ticket("wugang@example.com", body="E3001 同步失败,怎么办")
    row = bot.ticket(result.ticket_id)
    assert (row.subject, row.body) == ("E3001 同步失败,怎么办", "E3001 同步失败,怎么办")  # subject from body
    named = bot.open_ticket("wugang@example.com", subject="银行流水", body="E3001 又来了")
    assert bot.ticket(named.ticket_id).subject == "银行流水"


def test_ticket_returns_the_row(open_bot: OpenBot) -> None:
    bot = open_bot()
    result = bot.open_ticket("wugang@example.com", subject="银行流水", body="E3001 同步失败")
    row = bot.ticket(result.ticket_id)
    assert isinstance(row, TicketRow)
    assert (row.id, row.customer_email, row.status, row.turn_count) == (
        result.ticket_id,
        "wugang@example.com",
        "resolved",
        2,
    )
    assert row == next(t for t in bot.tickets() if t.id == result.ticket_id)
    with pytest.raises(UnknownTicket):
        bot.ticket("T999999")


def test_approve_and_reject_are_two_methods(open_bot: OpenBot, database_url: str) -> None:
    bot = open_bot(ScriptedLLM(triage=REFUND, draft="您好 [KB-refund-001]。"))
    yes = bot.open_ticket("wugang@example.com", subject="退款", body="申请退款 100 元").ticket_id
    no = bot.open_ticket("wugang@example.com", subject="退款", body="申请退款 50 元").ticket_id
    assert "审批通过" in bot.approve(yes, approver="王经理").reply
    assert "未通过审批" in bot.reject(no, approver="王经理", note="已超过 30 天").reply
    decided = rows(database_url, "SELECT ticket_id, status FROM demo.refunds ORDER BY ticket_id")
    assert decided == [(yes, "approved"), (no, "rejected")]


def test_approve_with_approved_still_works_and_warns(open_bot: OpenBot, database_url: str) -> None:
    bot = open_bot(ScriptedLLM(triage=REFUND, draft="您好 [KB-refund-001]。"))
    yes = bot.open_ticket("wugang@example.com", subject="退款", body="申请退款 100 元").ticket_id
    no = bot.open_ticket("wugang@example.com", subject="退款", body="申请退款 50 元").ticket_id
    with pytest.warns(DeprecationWarning, match="reject"):
        bot.approve(yes, approved=True, approver="王经理")
    with pytest.warns(DeprecationWarning, match="reject"):
        bot.approve(no, approved=False, approver="王经理")  # meant "reject", and still does
    decided = rows(database_url, "SELECT ticket_id, status FROM demo.refunds ORDER BY ticket_id")
    assert decided == [(yes, "approved"), (no, "rejected")]


def test_approve_without_approved_does_not_warn(open_bot: OpenBot) -> None:
    bot = open_bot(ScriptedLLM(triage=REFUND, draft="您好 [KB-refund-001]。"))
    ticket = bot.open_ticket("wugang@example.com", subject="退款", body="申请退款 100 元").ticket_id
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        assert bot.approve(ticket, approver="王经理").outcome == "resolved"


def test_reset_returns_a_report(open_bot: OpenBot) -> None:
    bot = open_bot()
    ticket = bot.open_ticket("wugang@example.com", body="E3001 同步失败").ticket_id
    report = bot.reset()
    assert isinstance(report, ResetReport)
    assert report.tickets == [ticket]
    assert report.rows["supportbot.tickets"] == 1 and report.rows["supportbot.turns"] == 2
    assert report.total == sum(report.rows.values())
    assert bot.tickets() == []


def test_migrate_brings_an_empty_database_up_to_date(server_url: str) -> None:
    name = "supportbot_test_api_migrate"
    with psycopg.connect(server_url, autocommit=True) as admin:
        admin.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))
        admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    url = psycopg.conninfo.make_conninfo(server_url, dbname=name)
    try:
        applied = migrate(url)  # the engine's migrations only: a host's database gets no demo tables
        assert [m.version for m in applied] == [m.version for m in available() if not m.demo]
        assert rows(url, "SELECT to_regclass('demo.customers') IS NULL") == [(True,)]
        assert migrate(url) == []  # up to date: nothing to do, nothing fails
        demo = migrate(url, demo=True)  # asked for: the demo business system's tables too
        assert [m.version for m in demo] == [m.version for m in available() if m.demo]
        versions = [v for (v,) in rows(url, "SELECT version FROM supportbot.schema_migrations ORDER BY 1")]
        assert versions == [m.version for m in available()]
    finally:
        with psycopg.connect(server_url, autocommit=True) as admin:
            admin.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))


def test_open_without_a_business_system_refuses_clearly(database_url: str) -> None:
    """No silent demo: a host application names its Backend, or asks for the demo by name."""
    with pytest.raises(ConfigError, match="backend='demo'"):
        SupportBot.open(database_url, settings=Settings(database_url=database_url))
    with pytest.raises(ConfigError, match=r"package\.module:factory"):
        SupportBot.open(
            database_url, settings=Settings(database_url=database_url, backend="nosuch.module:make")
        )


def test_migrate_reports_an_unreachable_server_as_a_store_error() -> None:
    with pytest.raises(StoreError, match="SUPPORTBOT_DATABASE_URL"):
        migrate("postgresql://nobody@127.0.0.1:1/none?connect_timeout=2")


def test_the_version_is_the_package_metadata_one() -> None:
    """One version, in pyproject.toml; the installed metadata and __version__ follow it."""
    import importlib.metadata
    import tomllib

    declared = tomllib.loads((Path(__file__).resolve().parent.parent / "pyproject.toml").read_text())
    assert (
        supportbot.__version__ == importlib.metadata.version("supportbot") == declared["project"]["version"]
    )
