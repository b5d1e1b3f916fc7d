"""The public surface: what `import supportbot` offers, and the calls whose shape is part of it."""

from __future__ import annotations

import dataclasses
import inspect
import re
import subprocess
import sys
import warnings
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import get_args

import psycopg
import pytest
from psycopg import sql
from support.fakes import REFUND, ScriptedLLM, rows

import supportbot
from supportbot import KeepMode, Outcome, ResetReport, Settings, SupportBot, TicketRow, TicketStatus, migrate
from supportbot.errors import ConfigError, InvalidInput, StoreError, UnknownTicket
from supportbot.store._migrations import available

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
        bot.open_ticket("wugang@example.com", "银行流水", "E3001 同步失败")  # type: ignore[call-overload]
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


# The public surface, pinned: a change here is a change of the API, made on purpose (and in the
# CHANGELOG), never as a side effect of moving code.
PUBLIC_NAMES = {
    "LLM", "AuditAction", "AuditEntry", "Backend", "Completion", "Customer", "DeletionReport", "Fact",
    "ForgetsCustomers", "Hit", "Invoice", "KeepMode", "Migration", "OfflineModel", "Outcome", "PastTicket",
    "PendingApproval", "Profile", "PruneReport", "Pruned", "QueueEntry", "QueueStats", "RefundRequest",
    "ResetReport", "RetentionReport", "RoundResult", "ServiceClock", "Settings", "StepRecord", "Submitted",
    "Subscription", "SupportBot", "SupportState", "SupportbotError", "TicketRow", "TicketStatus", "Turn",
    "Usage", "WorkerStats", "migrate",
    "AsyncBackend", "AsyncForgetsCustomers", "AsyncLLM", "AsyncOfflineModel", "AsyncSupportBot",
}  # fmt: skip
# One line per public method of SupportBot, its signature as written.
SUPPORTBOT_METHODS = Path(__file__).with_name("public_api.txt")


def _spelled(function: Callable[..., object]) -> str:
    """A signature as its source writes it (annotations are strings under postponed evaluation)."""
    parts, star = [], False
    for param in inspect.signature(function).parameters.values():
        if param.kind is param.KEYWORD_ONLY and not star:
            parts.append("*")
            star = True
        text = param.name
        if param.annotation is not param.empty:
            text += f": {param.annotation}"
        if param.default is not param.empty:
            default = getattr(param.default, "__name__", None) or repr(param.default)
            text += f" = {default}"
        parts.append(text)
    returns = inspect.signature(function).return_annotation
    return f"({', '.join(parts)}) -> {returns}"


def test_the_public_names_and_the_bots_methods_are_pinned() -> None:
    assert set(supportbot.__all__) == PUBLIC_NAMES
    methods = {
        name: _spelled(member.__func__ if isinstance(member, classmethod) else member)
        for name, member in vars(SupportBot).items()
        if not name.startswith("_") and (callable(member) or isinstance(member, classmethod))
    }
    pinned = dict(line.split(" ", 1) for line in SUPPORTBOT_METHODS.read_text(encoding="utf-8").splitlines())
    assert methods == pinned
    assert {n for n, m in vars(SupportBot).items() if isinstance(m, property)} == {"backend", "settings"}


def test_where_each_name_lives_matches_what_type_checkers_are_told() -> None:
    # __init__ imports the names for type checkers under TYPE_CHECKING and loads them lazily at
    # run time from _HOMES: the two lists must not drift apart.
    source = Path(supportbot.__file__).read_text(encoding="utf-8")
    block = source[source.index("if TYPE_CHECKING:") : source.index("_moved.install()")]
    told = {
        name.strip(): f".{module}"
        for module, names in re.findall(r"from \.([\w.]+) import (\([\w,\s]+\)|[\w, ]+)", block)
        for name in names.strip("()").split(",")
        if name.strip()
    }
    assert told == supportbot._HOMES


def test_importing_supportbot_loads_neither_the_engine_nor_the_demo_nor_the_offline_model() -> None:
    code = (
        "import sys, supportbot\n"
        "bare = sorted(m for m in sys.modules if m.startswith('supportbot'))\n"
        "from supportbot import SupportBot\n"
        "bot = sorted(m for m in sys.modules if m.startswith('supportbot'))\n"
        "print(bare); print(bot)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    bare, bot = (eval(line) for line in out.splitlines())
    assert set(bare) == {
        "supportbot",
        "supportbot._moved",
        "supportbot._redact",
        "supportbot.config",
        "supportbot.errors",
    }
    assert "supportbot._front._bot" in bot
    optional = [
        m for m in bot if m.startswith(("supportbot.backend.demo", "supportbot.cli", "supportbot.console"))
    ]
    assert optional == [] and "supportbot.llm.offline" not in bot


def test_an_import_path_of_0_2_still_works_and_says_where_it_moved() -> None:
    code = (
        "import warnings\n"
        "warnings.simplefilter('error')\n"
        "try:\n"
        "    import supportbot.engine\n"
        "except DeprecationWarning as w:\n"
        "    print('warned:', w)\n"
        "warnings.simplefilter('ignore')\n"
        "from supportbot.engine import Engine\n"
        "from supportbot.run._engine import Engine as Moved\n"
        "from supportbot.memory.compress import compress\n"
        "print(Engine is Moved, compress.__module__)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert "warned: supportbot.engine moved to supportbot.run._engine" in out
    assert "True supportbot.memory._compress" in out


def test_the_async_bot_has_every_method_of_the_sync_bot_with_the_same_signature() -> None:
    """Same names, arguments and results: each public method of AsyncSupportBot is SupportBot's as
    a coroutine (its types the asynchronous twins: AsyncBackend for Backend, ...). Only ``open`` differs
    in kind: it returns what is both awaited and entered (``async with AsyncSupportBot.open()``)."""

    def public(cls: type) -> dict[str, object]:
        return {n: m for n, m in vars(cls).items() if not n.startswith("_") and callable(m)}

    def unasync(spelled: str) -> str:  # a stop event is the loop's, not a thread's
        return re.sub(r"\bAsync(?=[A-Z])", "", spelled).replace("asyncio.Event", "threading.Event")

    sync, asynchronous = public(SupportBot), public(supportbot.AsyncSupportBot)
    assert sync.keys() == asynchronous.keys()
    for name, member in sync.items():
        method, twin = member, asynchronous[name]
        if isinstance(member, classmethod):
            assert isinstance(twin, classmethod)
            method, twin = member.__func__, twin.__func__
        assert callable(method) and callable(twin)
        if name == "open":
            assert unasync(_spelled(twin)) == _spelled(method).replace(
                "-> SupportBot", "-> Opening[SupportBot]"
            )
            continue
        assert inspect.iscoroutinefunction(twin) == (name != "stop_work"), name
        assert unasync(_spelled(twin)) == _spelled(method), name
