"""`python -m supportbot` as operators and scripts call it: a real process, a real database.

Each command runs once as a subprocess (startup costs about a second, so the data each test needs
is prepared in-process through SupportBot); usage errors that never reach the database are also
checked in-process through main(). JSON output is parsed and checked against the database, not
only for shape.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from typing import Any

import psycopg
import pytest

from supportbot import SupportBot
from supportbot.backend.demo import DEMO_TODAY, load_demo_data
from supportbot.cli._main import build_parser, main
from supportbot.cli._text import wrap
from supportbot.errors import UnknownTicket

COMMANDS = (
    "chat",
    "tickets",
    "approvals",
    "approve",
    "demo",
    "show",
    "history",
    "state",
    "fork",
    "profile",
    "correct",
    "correct-profile",
    "db",
    "forget",
    "prune",
    "retention",
    "reset",
    "takeover",
    "reply",
    "handback",
    "audit",
    "worker",
    "queue",
    "sla",
    "console",
    "serve",
)


@dataclass(frozen=True)
class Story:
    url: str
    waiting: str  # 吴刚's bank-sync ticket, its refund waiting for approval
    resolved: str  # 李娜's ticket, answered in one round


@pytest.fixture
def story(database_url: str) -> Story:
    with SupportBot.open(database_url, backend="demo") as bot:
        with psycopg.connect(database_url) as conn:  # the demo's tables exist once the bot opened
            load_demo_data(conn)
        first = bot.open_ticket("wugang@example.com", body="招商银行的流水又同步失败了,提示 E3001")
        paused = bot.send(first.ticket_id, "重新授权了还是不行,另外这个年付我想申请退款 200 元")
        assert paused.outcome == "waiting_approval"
        other = bot.open_ticket("lina@example.com", body="发票抬头写错了,能改吗")
        assert other.outcome == "resolved"
    return Story(database_url, first.ticket_id, other.ticket_id)


@pytest.fixture(autouse=True)
def _chinese(monkeypatch: pytest.MonkeyPatch) -> None:
    """These tests read the demo's language, whatever the machine's locale (test_cli_i18n covers en)."""
    monkeypatch.setenv("SUPPORTBOT_LANG", "zh")
    monkeypatch.setenv("SUPPORTBOT_BACKEND", "demo")  # the CLI acts on the demo business system here


def run(url: str | None, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("SUPPORTBOT_")} | {
        "SUPPORTBOT_LANG": "zh",
        "SUPPORTBOT_BACKEND": "demo",
    }
    argv = [sys.executable, "-m", "supportbot", *args] + (["--database-url", url] if url else [])
    return subprocess.run(
        argv, env={**base, **(env or {})}, capture_output=True, text=True, timeout=180, check=False
    )


def ok(url: str | None, *args: str, env: dict[str, str] | None = None) -> str:
    proc = run(url, *args, env=env)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def ok_json(url: str, *args: str) -> Any:
    return json.loads(ok(url, *args, "--json"))


def fails(url: str | None, code: int, *args: str) -> str:
    proc = run(url, *args)
    assert proc.returncode == code, (proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr
    return proc.stderr


def in_process(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    """main() for usage errors: they are decided before any database is touched."""
    try:
        code = main(list(argv))
    except SystemExit as exc:
        code = int(exc.code or 0)
    return code, capsys.readouterr().err


# -- help and usage errors -------------------------------------------------------------------


def test_every_command_has_help_with_the_global_options(capsys: pytest.CaptureFixture[str]) -> None:
    top = build_parser().format_help()
    for name in COMMANDS:
        assert name in top
        with pytest.raises(SystemExit) as exit_:
            main([name, "--help"])
        assert exit_.value.code == 0
        text = capsys.readouterr().out
        assert "--database-url" in text and "--debug" in text, name
        # Commands without JSON output do not list --json (and refuse it before the command).
        assert ("--json" in text) is (name not in ("chat", "demo")), name


def test_help_wraps_between_words_not_inside_them(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["tickets", "--help"])
    text = capsys.readouterr().out
    for status in ("open", "in_progress", "waiting_approval", "resolved", "escalated"):
        assert status in text  # whole, on one line
    assert wrap("只看这个状态的:open、in_progress、escalated", 24) == [
        "只看这个状态的:open、",
        "in_progress、escalated",
    ]
    assert wrap("a very-long-word-that-does-not-fit", 8) == ["a", "very-long-word-that-does-not-fit"]
    assert all(not line.startswith("、") for line in wrap("审批、" * 20, 11))


def test_usage_errors_exit_2_before_touching_a_database(capsys: pytest.CaptureFixture[str]) -> None:
    cases = [
        ["chat"],
        ["chat", "wugang@example.com"],
        ["chat", "--ticket", "T000001", "wugang@example.com", "hi"],
        ["chat", "wugang@example.com", "hi", "--json"],
        ["--json", "chat", "wugang@example.com", "hi"],
        ["--json", "demo"],
        ["demo", "--json"],
        ["tickets", "--status", "bogus"],
        ["tickets", "--customer", "not-an-email"],
        ["profile", "not-an-email"],
        ["forget", "not-an-email", "--yes"],
        ["approve", "T000001", "--yes", "--no", "--by", "me"],
        ["approve", "T000001", "--yes"],
        ["state", "T000001"],
        ["prune", "--closed-before", "2026-10-01"],
        ["prune", "--closed-before", "yesterday", "--yes"],
        ["reset"],
        ["forget", "wugang@example.com", "--force"],
        ["db", "drop"],
        [],
    ]
    for argv in cases:
        code, err = in_process(capsys, *argv, "--database-url", "postgresql://nowhere.invalid/x")
        assert code == 2, (argv, err)
        assert "用法:" in err, argv


def test_usage_errors_from_a_real_process() -> None:
    assert "approve" in fails(None, 2, "approve", "T000001", "--by", "王经理")
    assert "--yes" in fails(None, 2, "forget", "wugang@example.com")
    assert "无法识别的参数:--bogus" in fails(None, 2, "tickets", "--bogus")


# -- reading ---------------------------------------------------------------------------------


def test_tickets_filter_by_customer_and_status(story: Story) -> None:
    rows = ok_json(story.url, "tickets", "--customer", "wugang@example.com", "--status", "waiting_approval")
    assert [(r["id"], r["status"], r["turn_count"]) for r in rows] == [(story.waiting, "waiting_approval", 3)]
    # Options may also come before the command, and the URL from the environment.
    everyone = json.loads(ok(None, "--json", "tickets", env={"SUPPORTBOT_DATABASE_URL": story.url}))
    assert [r["id"] for r in everyone] == [story.waiting, story.resolved]


def test_show_says_what_is_remembered_and_where(story: Story) -> None:
    shown = ok_json(story.url, "show", story.waiting)
    assert shown["ticket"]["id"] == story.waiting and shown["ticket"]["status"] == "waiting_approval"
    assert [t["role"] for t in shown["turns"]] == ["customer", "agent", "customer"]
    assert shown["outcome"] == "waiting_approval" and shown["round"] == 2
    assert {"kind": "error_code", "value": "E3001"}.items() <= shown["facts"][0].items()
    assert shown["profile"].startswith("专业版年付 VIP")
    assert shown["steps"] > 10 and shown["tool_calls"] > 0
    assert {"turns", "summary", "facts", "profile", "steps", "approvals"} <= shown["storage"].keys()

    text = ok(story.url, "show", story.waiting)
    for needle in (
        "supportbot.turns",
        "supportbot.checkpoints",
        "supportbot.customer_profiles",
        "钉住的事实",
        "错误码:E3001",
        "招商银行的流水又同步失败了",
        "摘要",
    ):
        assert needle in text, needle


def test_history_lists_every_step_and_state_rebuilds_one(story: Story) -> None:
    steps = ok_json(story.url, "history", story.waiting)
    assert [s["seq"] for s in steps] == list(range(1, len(steps) + 1))
    assert steps[0]["step"] == "start_round" and steps[-1]["next_step"] == "approval"
    lines = ok(story.url, "history", story.waiting).splitlines()
    assert len(lines) == len(steps) + 1 and "start_round" in lines[0] and "→ load_customer" in lines[0]

    first_draft = next(s["seq"] for s in steps if s["step"] == "draft")
    at = ok_json(story.url, "state", story.waiting, "--at", str(first_draft))
    assert (at["seq"], at["step"], at["next_step"]) == (first_draft, "draft", "check")
    assert at["state"]["round"] == 1 and len(at["state"]["turns"]) == 1
    assert "E3001" in at["state"]["draft"] and at["state"]["reply"] == ""


def test_fork_copies_history_up_to_a_step(story: Story) -> None:
    steps = ok_json(story.url, "history", story.waiting)
    end_of_round_1 = next(s["seq"] for s in steps if s["step"] == "finalize")
    forked = ok_json(story.url, "fork", story.waiting, "--at", str(end_of_round_1))
    assert forked["forked_from"] == story.waiting and forked["ticket_id"] not in (
        story.waiting,
        story.resolved,
    )
    with SupportBot.open(story.url, backend="demo") as bot:
        state = bot.state(forked["ticket_id"])
        assert [t.role for t in state.turns] == ["customer", "agent"]
        assert len(bot.history(forked["ticket_id"])) == end_of_round_1
        assert bot.state(story.waiting).round == 2  # the original is untouched


def test_profile(story: Story) -> None:
    p = ok_json(story.url, "profile", "wugang@example.com")
    assert (p["name"], p["plan"], p["billing_cycle"], p["is_vip"]) == ("吴刚", "专业版", "年付", True)
    assert p["recurring"][0]["key"] == "E3001" and p["recurring"][0]["count"] >= 3
    assert p["text"].startswith("专业版年付 VIP。E3001")
    text = ok(story.url, "profile", "chenjing@example.com")
    assert "陈静" in text and "基础版月付" in text and "supportbot.customer_profiles" in text


# -- approvals -------------------------------------------------------------------------------


def test_approvals_then_approve(story: Story) -> None:
    pending = ok_json(story.url, "approvals")
    assert [(p["ticket_id"], p["round"]) for p in pending] == [(story.waiting, 2)]
    assert pending[0]["request"]["refund_request"]["amount"] == "200.00"
    assert pending[0]["request"]["refund_request"]["asked"] == "200 元"  # the customer's own words
    assert "退款 200.00 CNY(客户原话「200 元」)" in ok(story.url, "approvals")

    result = ok_json(story.url, "approve", story.waiting, "--yes", "--by", "王经理", "--note", "符合政策")
    assert (result["ticket_id"], result["outcome"], result["round"]) == (story.waiting, "resolved", 2)
    assert "已审批通过" in result["reply"]
    assert "没有等待审批的退款" in ok(story.url, "approvals")
    # A second click finds nothing to decide: an error, not a usage error.
    assert "不在等待审批(状态:已答复)" in fails(
        story.url, 1, "approve", story.waiting, "--no", "--by", "李主管"
    )


# -- errors ----------------------------------------------------------------------------------


def test_unknown_things_exit_1_with_one_line(story: Story) -> None:
    err = fails(story.url, 1, "show", "T999999")
    assert err.startswith("错误:") and "T999999" in err and err.count("\n") == 1
    assert "没有第 999 步" in fails(story.url, 1, "state", story.waiting, "--at", "999")


def test_debug_shows_the_exception(story: Story) -> None:
    with pytest.raises(UnknownTicket):
        main(["show", "T999999", "--debug", "--database-url", story.url])


# -- the demo and the database ---------------------------------------------------------------


def test_demo_replays_the_story(database_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    proc = run(database_url, "demo")
    assert proc.returncode == 0, proc.stderr
    assert "加载演示数据" in proc.stderr  # progress goes to stderr, the story to stdout
    assert "[画像] 新工单的上下文里会带上:专业版年付 VIP" in proc.stdout
    assert "等待审批" in proc.stdout and "已审批通过" in proc.stdout
    # Played on the demo day whatever today is: his fourth E3001 ticket is dated October.
    assert "E3001 已出现 4 次(2026-04/07/09/10)" in proc.stdout
    with SupportBot.open(database_url, backend="demo") as bot:
        (ticket,) = bot.tickets()
        assert (ticket.customer_email, ticket.status) == ("wugang@example.com", "resolved")
        stamps = [t.created_at for t in bot.state(ticket.id).turns]
        assert None not in stamps and {s.date() for s in stamps if s is not None} == {DEMO_TODAY}
        profile = bot.profile("wugang@example.com").text
        steps = len(bot.history(ticket.id))

    # Again: the data is reloaded, nothing is replayed, and the profile does not drift.
    code = main(["demo", "--database-url", database_url])
    again = capsys.readouterr().out
    assert code == 0 and f"演示工单 {ticket.id} 已经在演示日" in again and profile in again
    with SupportBot.open(database_url, backend="demo") as bot:
        assert bot.tickets() == [ticket]
        assert bot.profile("wugang@example.com").text == profile
        assert len(bot.history(ticket.id)) == steps


def test_db_status_and_migrate(database_url: str) -> None:
    migrated = ok(database_url, "db", "migrate")
    assert "本次执行了 0 个迁移" in migrated and "001 engine" in migrated
    status = ok_json(database_url, "db", "status")
    assert status["migrations"] and all(m["applied"] for m in status["migrations"])


# -- deleting (SupportBot.forget_customer, prune and reset) ----------------------------------


def test_prune_closed_tickets(story: Story) -> None:
    report = ok_json(story.url, "prune", "--closed-before", "2999-01-01", "--keep", "final", "--yes")
    assert report["tickets"] == [story.resolved]  # the other one waits for a human: not closed
    assert report["bytes_freed"] > 0 and sum(report["rows"].values()) > 0
    history = ok(story.url, "history", story.resolved)
    assert "清理(prune)" in history.splitlines()[0]
    with SupportBot.open(story.url, backend="demo") as bot:
        assert [t.role for t in bot.state(story.resolved).turns] == ["customer", "agent"]  # memory unchanged


def test_forget_a_customer(story: Story, capsys: pytest.CaptureFixture[str]) -> None:
    # His refund waits for a person: refused, and the hint is a command that runs as given.
    code, err = in_process(capsys, "forget", "wugang@example.com", "--yes", "--database-url", story.url)
    assert code == 1 and story.waiting in err
    hint = err.rsplit("python -m supportbot ", 1)[1].split()
    assert hint == ["forget", "wugang@example.com", "--yes", "--force"]
    report = ok_json(story.url, *hint)
    assert report["email"] == "wugang@example.com" and report["tickets"] == [story.waiting]
    assert report["rows"].get("supportbot.turns", report["rows"].get("turns")) == 3
    with SupportBot.open(story.url, backend="demo") as bot:
        assert bot.tickets(email="wugang@example.com") == []
        assert [t.id for t in bot.tickets()] == [story.resolved]  # nobody else's


def test_reset_everything(story: Story) -> None:
    deleted = ok_json(story.url, "reset", "--yes")
    assert sorted(deleted["tickets"]) == sorted([story.waiting, story.resolved])
    assert sum(deleted["rows"].values()) > 0
    assert ok_json(story.url, "tickets") == []


def test_without_a_business_system_a_command_refuses_and_says_how_to_name_one(database_url: str) -> None:
    # No SUPPORTBOT_BACKEND: nothing is opened on the demo's tables behind the operator's back.
    refused = run(database_url, "approvals", env={"SUPPORTBOT_BACKEND": ""})
    assert refused.returncode == 1
    assert "SUPPORTBOT_BACKEND=demo" in refused.stderr and "--backend demo" in refused.stderr
    assert ok(database_url, "approvals", "--backend", "demo", env={"SUPPORTBOT_BACKEND": ""}).strip()


def test_respond_then_approve_a_lesser_amount_from_the_cli(story: Story) -> None:
    responded = ok_json(story.url, "respond", story.waiting, "--note", "请提供账单号", "--by", "王经理")
    assert responded["outcome"] == "waiting_approval" and "请提供账单号" in responded["reply"]
    assert "已把留言交给工单" in ok(
        story.url, "respond", story.waiting, "--note", "还需要发票", "--by", "王经理"
    )
    assert "--amount 只能和 --yes 一起用" in fails(
        story.url, 2, "approve", story.waiting, "--no", "--amount", "150", "--by", "王经理"
    )
    assert "不是金额" in fails(
        story.url, 2, "approve", story.waiting, "--yes", "--amount", "一百", "--by", "王"
    )
    assert "超过了申请的 200.00 CNY" in fails(
        story.url, 1, "approve", story.waiting, "--yes", "--amount", "250", "--by", "王经理"
    )
    out = ok(story.url, "approve", story.waiting, "--yes", "--amount", "150", "--by", "王经理")
    assert "批准金额 150.00" in out and "申请 200.00 CNY" in out
    audit = ok_json(story.url, "audit", "--ticket", story.waiting)
    assert [e["action"] for e in audit] == ["respond", "respond", "approve"]
