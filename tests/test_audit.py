"""The audit log: a row per decision, takeover, reply, hand-back, fork and forget, written with the
action; append-only; forgetting a customer leaves no personal data in it but keeps the rows."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import psycopg
import pytest
from support.fakes import HUMAN, REFUND, ScriptedLLM, rows

from supportbot import SupportBot
from supportbot.errors import ApprovalNotPending, InvalidInput, NotTakenOver, WrongType

OpenBot = Callable[..., SupportBot]
EMAIL = "wugang@example.com"


def _refund_bot(open_bot: OpenBot) -> SupportBot:
    return open_bot(ScriptedLLM(triage=REFUND, draft="您好 [KB-refund-001]。"))


def test_decisions_are_audited_with_the_action(open_bot: OpenBot) -> None:
    bot = _refund_bot(open_bot)
    first = bot.open_ticket(EMAIL, subject="退款", body="申请退款 100 元")
    second = bot.open_ticket(EMAIL, subject="退款", body="申请退款 50 元")
    bot.approve(first.ticket_id, approver="经理甲", note="符合政策", source="10.0.0.7")
    bot.reject(second.ticket_id, approver="经理乙", note="超过 30 天")
    approve, reject = bot.audit()
    assert (approve.action, approve.actor, approve.source) == ("approve", "经理甲", "10.0.0.7")
    assert (approve.ticket_id, approve.customer_email) == (first.ticket_id, EMAIL)
    assert approve.detail["approved"] is True and approve.detail["note"] == "符合政策"
    assert approve.detail["refund"] and approve.detail["amount"]
    assert (reject.action, reject.actor, reject.source) == ("reject", "经理乙", "api")
    assert reject.detail["approved"] is False
    # A refused decision records nothing: the row is written in the decision's transaction.
    with pytest.raises(ApprovalNotPending):
        bot.approve(first.ticket_id, approver="经理丙")
    assert len(bot.audit()) == 2
    assert [e.action for e in bot.audit(second.ticket_id)] == ["reject"]


def test_takeover_reply_hand_back_and_fork_are_audited(open_bot: OpenBot) -> None:
    bot = open_bot(ScriptedLLM(triage=HUMAN))
    tid = bot.open_ticket(EMAIL, body="我要找人工").ticket_id
    bot.take_over(tid, agent="王芳", source="192.0.2.1")
    turn = bot.reply_as_human(tid, "您好,我是王芳,马上处理。", agent="王芳", source="192.0.2.1")
    with pytest.raises(NotTakenOver):
        bot.reply_as_human(tid, "冒名回复", agent="李雷")  # refused: no row
    bot.hand_back(tid, agent="王芳", note="已电话联系客户")
    fork = bot.fork(tid, 1, actor="质检", source="cli")
    entries = bot.audit(tid)
    assert [e.action for e in entries] == ["take_over", "human_reply", "hand_back", "fork"]
    assert [e.actor for e in entries] == ["王芳", "王芳", "王芳", "质检"]
    assert [e.source for e in entries] == ["192.0.2.1", "192.0.2.1", "api", "cli"]
    assert all(e.customer_email == EMAIL for e in entries)
    assert entries[1].detail["turn"] == turn.idx
    assert "您好" not in json.dumps(entries[1].detail, ensure_ascii=False)  # the text is in the turn only
    assert entries[2].detail["note"] == "已电话联系客户"
    assert entries[3].detail == {"seq": 1, "fork": fork}
    seqs = [s.seq for s in bot.history(tid) if s.step in ("human_takeover", "human_reply", "hand_back")]
    assert [e.detail["seq"] for e in entries[:3]] == seqs
    assert bot.fork(tid, 1) and bot.audit(limit=1)[0].actor == "anonymous"


def test_audit_filters_and_validates(open_bot: OpenBot) -> None:
    bot = open_bot(ScriptedLLM(triage=HUMAN))
    a = bot.open_ticket(EMAIL, body="找人工").ticket_id
    b = bot.open_ticket("lina@example.com", body="找人工").ticket_id
    bot.take_over(a, agent="王芳")
    bot.take_over(b, agent="王芳")
    bot.hand_back(a, agent="王芳")
    assert [e.ticket_id for e in bot.audit()] == [a, b, a]
    assert [e.ticket_id for e in bot.audit(limit=2)] == [b, a]  # the latest, oldest first
    assert bot.audit(since=datetime.now(UTC) + timedelta(hours=1)) == []
    assert len(bot.audit(since=datetime.now(UTC) - timedelta(hours=1))) == 3
    with pytest.raises(InvalidInput):
        bot.audit(limit=0)
    with pytest.raises(WrongType):
        bot.audit(limit="5")  # type: ignore[arg-type]
    with pytest.raises(InvalidInput):
        bot.take_over(a, agent="王芳", source="")


def test_audit_is_append_only(open_bot: OpenBot, database_url: str) -> None:
    bot = open_bot(ScriptedLLM(triage=HUMAN))
    tid = bot.open_ticket(EMAIL, body="找人工").ticket_id
    bot.take_over(tid, agent="王芳")
    for statement in (
        "UPDATE supportbot.audit SET actor = '别人'",
        "UPDATE supportbot.audit SET customer_email = NULL",  # erasing without the redaction mark
        "DELETE FROM supportbot.audit",
        "TRUNCATE supportbot.audit",
    ):
        with psycopg.connect(database_url) as conn, pytest.raises(psycopg.Error, match="append-only"):
            conn.execute(statement)
    assert rows(database_url, "SELECT actor, customer_email FROM supportbot.audit") == [("王芳", EMAIL)]
    bot.reset()  # empties the engine tables, not the log
    assert len(bot.audit()) == 1


def test_forget_keeps_the_rows_and_no_personal_data(open_bot: OpenBot, database_url: str) -> None:
    bot = _refund_bot(open_bot)
    tid = bot.open_ticket(EMAIL, subject="退款", body="申请退款 100 元").ticket_id
    bot.approve(tid, approver="经理甲", note="吴刚先生电话 13800001234 确认过")
    helper = open_bot(ScriptedLLM(triage=HUMAN))
    other = helper.open_ticket("lina@example.com", body="找人工").ticket_id
    helper.take_over(other, agent="经理乙")
    helper.hand_back(other, agent="经理乙", note="李娜的发票不符")
    report = bot.forget_customer(EMAIL, actor="隐私专员", source="cli")
    assert tid in report.tickets
    dump = " ".join(
        str(r)
        for r in rows(
            database_url,
            "SELECT actor, action, ticket_id, customer_email, source, detail::text FROM supportbot.audit",
        )
    )
    for personal in (EMAIL, "wugang", "吴刚", "13800001234"):
        assert personal not in dump
    approve, _, back, forget = bot.audit()
    assert (approve.action, approve.ticket_id, approve.actor) == ("approve", tid, "经理甲")  # kept
    assert approve.customer_email is None and approve.detail["redacted"] is True
    assert approve.detail["approved"] is True and "note" not in approve.detail
    assert back.customer_email == "lina@example.com" and back.detail["note"] == "李娜的发票不符"  # untouched
    assert (forget.action, forget.actor, forget.source, forget.ticket_id) == (
        "forget_customer",
        "隐私专员",
        "cli",
        None,
    )
    digest = hashlib.sha256(EMAIL.encode()).hexdigest()
    assert forget.detail == {"customer_sha256": digest, "tickets": len(report.tickets)}
    assert "refund" not in approve.detail and "INV-9001" not in dump
    assert f"{'supportbot.audit'}" not in report.rows  # nothing deleted from the log


def _cli(url: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SUPPORTBOT_")}
    env["SUPPORTBOT_BACKEND"] = "demo"
    return subprocess.run(
        [sys.executable, "-m", "supportbot", *args, "--database-url", url],
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )


def test_cli_takeover_reply_handback_and_audit(open_bot: OpenBot, database_url: str) -> None:
    bot = open_bot(ScriptedLLM(triage=HUMAN))
    tid = bot.open_ticket(EMAIL, body="找人工").ticket_id
    for args in (("takeover", tid, "--by", "王芳"), ("reply", tid, "您好,我来处理", "--by", "王芳")):
        proc = _cli(database_url, *args)
        assert proc.returncode == 0, proc.stderr
    proc = _cli(database_url, "handback", tid, "--by", "王芳", "--note", "已处理")
    assert proc.returncode == 0 and "交还" in proc.stdout, proc.stderr
    proc = _cli(database_url, "audit", "--ticket", tid, "--json")
    assert proc.returncode == 0, proc.stderr
    exported = json.loads(proc.stdout)
    assert [(e["action"], e["actor"], e["source"]) for e in exported] == [
        ("take_over", "王芳", "cli"),
        ("human_reply", "王芳", "cli"),
        ("hand_back", "王芳", "cli"),
    ]
    text = _cli(database_url, "audit", "--since", "2000-01-01")
    assert text.returncode == 0 and "人工接管" in text.stdout and "共 3 条" in text.stdout
    assert bot.state(tid).turns[-1].author == "王芳"
