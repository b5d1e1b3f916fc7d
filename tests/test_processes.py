"""Restarts, crashes and concurrency across real OS processes sharing one database."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import VIA_PGBOUNCER
from support.fakes import rows

WORKER = Path(__file__).resolve().parent / "worker.py"
LEASE = 1.0


@pytest.fixture(autouse=True, params=["sync", "async"])
def front(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Every process of a test runs the same front end: SupportBot, or AsyncSupportBot."""
    monkeypatch.setenv("SUPPORTBOT_TEST_FRONT", str(request.param))
    return str(request.param)


def _env(url: str, lease: float = LEASE) -> dict[str, str]:
    return {**os.environ, "SUPPORTBOT_DATABASE_URL": url, "SUPPORTBOT_LEASE_SECONDS": str(lease)}


def run(url: str, action: str, *, lease: float = LEASE, **args: Any) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(WORKER), action, json.dumps(args)],
        env=_env(url, lease),
        check=False,
        capture_output=True,
        text=True,
        timeout=120,
    )


def ok(url: str, action: str, *, lease: float = LEASE, **args: Any) -> dict[str, Any]:
    proc = run(url, action, lease=lease, **args)
    assert proc.returncode == 0, proc.stderr
    result: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


def turns(url: str, ticket: str) -> list[tuple[str, str]]:
    return rows(url, "SELECT role, content FROM supportbot.turns WHERE ticket_id = %s ORDER BY idx", ticket)


def test_a_new_process_continues_the_ticket(db: str) -> None:
    first = ok(db, "open", email="wugang@example.com", body="银行流水同步失败 E3001")
    ok(db, "send", ticket=first["ticket_id"], messages=["重新授权了还是不行"], tag="a")
    assert [r for r, _ in turns(db, first["ticket_id"])] == ["customer", "agent", "customer", "agent"]


def test_approval_from_another_process_the_next_day(db: str) -> None:
    paused = ok(db, "open", email="wugang@example.com", body="年付不想用了,申请退款 200 元")
    assert paused["outcome"] == "waiting_approval"
    # The process that opened the ticket has exited; a different one approves.
    done = ok(db, "approve", ticket=paused["ticket_id"], approved=True, approver="王经理")
    assert done["outcome"] == "resolved" and "审批通过" in done["reply"]
    assert rows(db, "SELECT count(*) FROM demo.refunds WHERE status = 'approved'") == [(1,)]
    again = run(db, "approve", ticket=paused["ticket_id"], approved=True, approver="王经理")
    assert again.returncode != 0 and "ApprovalNotPending" in again.stderr


def test_sigkill_mid_round_loses_nothing_and_the_next_process_finishes(db: str) -> None:
    crashed = run(db, "open", email="wugang@example.com", body="E3001 同步失败", crash_at="draft")
    assert crashed.returncode == -9
    (ticket,) = rows(db, "SELECT id FROM supportbot.tickets")[0]
    assert turns(db, ticket) == [("customer", "E3001 同步失败")]
    steps_before = rows(db, "SELECT step FROM supportbot.steps WHERE ticket_id = %s ORDER BY seq", ticket)
    # Steps before the first effect or reply are written behind: they died with the process and
    # are re-run from the customer's message, which was committed before the round began.
    assert steps_before == []

    time.sleep(LEASE + 0.2)  # the dead worker's lease runs out
    done = ok(db, "resume", ticket=ticket)
    assert done["outcome"] == "resolved"
    assert [r for r, _ in turns(db, ticket)] == ["customer", "agent"]
    steps = [
        s for (s,) in rows(db, "SELECT step FROM supportbot.steps WHERE ticket_id = %s ORDER BY seq", ticket)
    ]
    assert steps.count("start_round") == 1 and steps.count("finalize") == 1


def test_after_a_sigkill_mid_round_the_next_send_is_answered_with_no_worker(db: str) -> None:
    """The dead process's lease does not park the next message: where the server can tell that its
    connection is gone (a direct connection, the embedded server's socket), the next send() takes
    the ticket at once; through PgBouncer, whose server connections outlive their clients, once the
    lease expires. Nobody else is running: the caller answers both messages itself."""
    lease = 3.0 if VIA_PGBOUNCER else 30.0  # a 30 s lease must not be waited out on a direct connection
    crashed = run(
        db, "open", email="wugang@example.com", body="E3001 同步失败", crash_at="draft", lease=lease
    )
    assert crashed.returncode == -9
    (ticket,) = rows(db, "SELECT id FROM supportbot.tickets")[0]
    done = ok(db, "send", ticket=ticket, messages=["还在吗?"], tag="after-crash", lease=lease)
    assert done["outcome"] == "resolved" and done["reply"]
    assert [role for role, _ in turns(db, ticket)] == ["customer", "customer", "agent"]
    assert done["elapsed"] < (lease + 5.0 if VIA_PGBOUNCER else 2.0), done["elapsed"]


def test_after_a_sigkill_resume_takes_the_ticket_when_the_server_can_tell_the_holder_is_gone(db: str) -> None:
    lease = 3.0 if VIA_PGBOUNCER else 30.0
    crashed = run(
        db, "open", email="wugang@example.com", body="E3001 同步失败", crash_at="draft", lease=lease
    )
    assert crashed.returncode == -9
    (ticket,) = rows(db, "SELECT id FROM supportbot.tickets")[0]
    first = ok(db, "resume", ticket=ticket, lease=lease)
    if VIA_PGBOUNCER:
        # The holder cannot be told apart from a live one: resume() says so and does not wait.
        assert first["outcome"] == "queued"
        time.sleep(lease)
        first = ok(db, "resume", ticket=ticket, lease=lease)
    assert first["outcome"] == "resolved" and first["elapsed"] < 2.0


def test_sigkill_inside_the_refund_decision_applies_it_exactly_once(db: str) -> None:
    paused = ok(db, "open", email="wugang@example.com", body="申请退款 300 元")
    crashed = run(
        db, "approve", ticket=paused["ticket_id"], approved=True, approver="王经理", crash_at="decide_refund"
    )
    assert crashed.returncode == -9
    # The decision is applied in the transaction that records it: none of it is there, and the
    # refund still waits for its human, whose call failed.
    assert rows(db, "SELECT status FROM demo.refunds") == [("pending",)]
    assert rows(db, "SELECT count(*) FROM supportbot.effects WHERE kind = 'refund_decision'") == [(0,)]
    assert rows(db, "SELECT count(*) FROM supportbot.approvals WHERE decided_at IS NULL") == [(1,)]

    time.sleep(LEASE + 0.2)
    done = ok(db, "approve", ticket=paused["ticket_id"], approved=True, approver="王经理")
    assert done["outcome"] == "resolved" and "审批通过" in done["reply"]
    assert rows(db, "SELECT status FROM demo.refunds") == [("approved",)]
    assert rows(db, "SELECT count(*) FROM supportbot.effects WHERE kind = 'refund_decision'") == [(1,)]
    assert [r for r, _ in turns(db, paused["ticket_id"])] == ["customer", "agent"]


def test_concurrent_senders_store_each_message_once_and_rounds_never_interleave(db: str) -> None:
    ticket = ok(db, "open", email="wugang@example.com", body="E3001 同步失败")["ticket_id"]
    procs = [
        subprocess.Popen(
            [
                sys.executable,
                str(WORKER),
                "send",
                json.dumps(
                    {
                        "ticket": ticket,
                        "tag": f"p{p}",
                        "messages": [f"进程{p}的第{i}条消息" for i in range(3)],
                    }
                ),
            ],
            env=_env(db),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for p in range(4)
    ]
    for proc in procs:
        _, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
    time.sleep(LEASE + 0.2)
    ok(db, "resume", ticket=ticket)  # whatever is still queued gets its round

    stored = turns(db, ticket)
    customer = [c for r, c in stored if r == "customer"][1:]
    assert sorted(customer) == sorted(f"进程{p}的第{i}条消息" for p in range(4) for i in range(3))
    idx = [
        i for (i,) in rows(db, "SELECT idx FROM supportbot.turns WHERE ticket_id = %s ORDER BY idx", ticket)
    ]
    assert idx == list(range(len(stored)))
    for p in range(4):  # each sender's own messages keep their order
        mine = [c for c in customer if c.startswith(f"进程{p}")]
        assert mine == sorted(mine)
    steps = rows(db, "SELECT round, step FROM supportbot.steps WHERE ticket_id = %s ORDER BY seq", ticket)
    rounds = [r for r, _ in steps]
    assert rounds == sorted(rounds), "a round started before the previous one ended"
    assert [s for _, s in steps].count("start_round") == max(rounds)
    assert stored[-1][0] == "agent"
    (handled,) = rows(
        db,
        "SELECT (update->>'handled_upto')::int FROM supportbot.steps WHERE ticket_id = %s"
        " AND step = 'start_round' ORDER BY seq DESC LIMIT 1",
        ticket,
    )[0]
    last_customer = max(i for i, (r, _) in enumerate(stored) if r == "customer")
    assert handled > last_customer
