"""Input hygiene of the public API and CLI: every bad argument is an InvalidInput, nothing written.

Each case here was once a raw driver or Python error (UnicodeEncodeError, psycopg.DataError,
NumericValueOutOfRange, ProgramLimitExceeded, TypeError, StopIteration, OverflowError), or a
silent loss (a reused message_id dropping new text), or a state that told less than the truth.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from datetime import UTC, date, datetime, timedelta, timezone
from functools import partial
from typing import Any

import psycopg
import pytest
from support.fakes import ScriptedLLM, cite_hits, present, refund_if_asked, row_counts

from supportbot import SupportBot, Turn
from supportbot.errors import (
    ApprovalNotPending,
    ForkRefused,
    IdempotencyConflict,
    InvalidChoice,
    InvalidDate,
    InvalidEmail,
    InvalidInput,
    InvalidStepNumber,
    InvalidText,
    SupportbotError,
    TextTooLong,
    TicketBusy,
    WrongType,
)
from supportbot.i18n import error_text
from supportbot.store import _tickets as repo
from supportbot.store._rows import LeaseRequest

OpenBot = Callable[..., SupportBot]


@pytest.fixture
def bot(open_bot: OpenBot) -> SupportBot:
    return open_bot(ScriptedLLM(triage=refund_if_asked, draft=cite_hits))


@pytest.fixture
def counts(database_url: str) -> Iterator[Callable[[], dict[str, int]]]:
    with psycopg.connect(database_url, autocommit=True) as conn:
        yield lambda: row_counts(conn)


def _refused(
    counts: Callable[[], dict[str, int]], error: type[SupportbotError], call: Callable[[], Any]
) -> SupportbotError:
    before = counts()
    with pytest.raises(error) as raised:
        call()
    assert counts() == before, "a refused call wrote something"
    return raised.value


SURROGATE = "退款\udcff"  # what surrogateescape makes of an undecodable byte
NUL = "T0\x0000001"


def test_every_text_argument_refuses_lone_surrogates_and_nul(
    bot: SupportBot, counts: Callable[[], dict[str, int]]
) -> None:
    ticket = bot.open_ticket("wugang@example.com", subject="x", body="E3001").ticket_id

    def calls_with(bad: str) -> list[Callable[[], Any]]:
        return [
            lambda: bot.open_ticket(bad, subject="x", body="E3001"),
            lambda: bot.open_ticket("wugang@example.com", subject=bad, body="E3001"),
            lambda: bot.open_ticket("wugang@example.com", subject="x", body=bad),
            lambda: bot.send(bad, "hello"),
            lambda: bot.send(ticket, bad),
            lambda: bot.send(ticket, "hello", message_id=bad),
            lambda: bot.resume(bad),
            lambda: bot.approve(bad, approver="王经理"),
            lambda: bot.approve(ticket, approver=bad),
            lambda: bot.approve(ticket, approver="王经理", note=bad),
            lambda: bot.profile(bad),
            lambda: bot.state(bad),
            lambda: bot.state_at(bad, 1),
            lambda: bot.history(bad),
            lambda: bot.tickets(email=bad),
            lambda: bot.tickets(status=bad),  # type: ignore[arg-type]
            lambda: bot.fork(bad, 1),
            lambda: bot.forget_customer(bad),
            lambda: bot.prune(closed_before=datetime.now(UTC), keep=bad),  # type: ignore[arg-type]
            lambda: bot.pruned(bad),
        ]

    calls = [call for bad in (SURROGATE, NUL) for call in calls_with(bad)]
    for call in calls:
        error = _refused(counts, InvalidInput, call)
        # InvalidEmail for an address, else InvalidText: either way the message says what to do.
        assert isinstance(error, InvalidText | InvalidEmail), error
        assert "surrogate" in str(error) or "NUL" in str(error) or "email address" in str(error)
        str(error).encode("utf-8")  # the message itself can be printed and logged


def test_lengths_types_and_ranges_are_refused_before_the_database(
    bot: SupportBot, counts: Callable[[], dict[str, int]]
) -> None:
    ticket = bot.open_ticket("wugang@example.com", subject="x", body="E3001").ticket_id
    long = "x" * 3000
    assert isinstance(
        _refused(counts, InvalidInput, lambda: bot.send(ticket, "hi", message_id=long)), TextTooLong
    )
    _refused(counts, InvalidEmail, lambda: bot.open_ticket(f"{long}@example.com", subject="x", body="hi"))
    _refused(counts, TextTooLong, lambda: bot.open_ticket("wugang@example.com", subject=long, body="hi"))
    _refused(counts, TextTooLong, lambda: bot.state(long))
    _refused(counts, TextTooLong, lambda: bot.approve(ticket, approver=long))
    for step in (0, -1, 2**31, -(2**31) - 1, 10**30):
        error = _refused(counts, InvalidStepNumber, partial(bot.state_at, ticket, step))
        assert "numbered from 1" in str(error)
        _refused(counts, InvalidStepNumber, partial(bot.fork, ticket, step))
    wrong: list[Callable[[], Any]] = [
        lambda: bot.open_ticket(None, subject="x", body="hi"),  # type: ignore[call-overload]
        lambda: bot.open_ticket("wugang@example.com", subject=3, body="hi"),  # type: ignore[call-overload]
        lambda: bot.open_ticket("wugang@example.com", subject="x", body=b"hi"),  # type: ignore[call-overload]
        lambda: bot.send(7, "hi"),  # type: ignore[arg-type]
        lambda: bot.send(ticket, "hi", message_id=7),  # type: ignore[arg-type]
        lambda: bot.state(None),  # type: ignore[arg-type]
        lambda: bot.state_at(ticket, "3"),  # type: ignore[arg-type]
        lambda: bot.state_at(ticket, True),  # bool is an int to Python, not a step number
        lambda: bot.fork(ticket, 1.0),  # type: ignore[arg-type]
        lambda: bot.approve(ticket, approved="yes", approver="王经理"),  # type: ignore[arg-type]
        lambda: bot.approve(ticket, approver=None),  # type: ignore[arg-type]
        lambda: bot.approve(ticket, approver="王经理", note=None),  # type: ignore[arg-type]
        lambda: bot.tickets(status=1),  # type: ignore[arg-type]
        lambda: bot.forget_customer("wugang@example.com", force="no"),  # type: ignore[arg-type]
        lambda: bot.prune(closed_before="2026-01-01"),  # type: ignore[arg-type]
        lambda: bot.prune(closed_before=date(2026, 1, 1)),  # type: ignore[arg-type]
    ]
    for call in wrong:
        error = _refused(counts, WrongType, call)
        assert isinstance(error, TypeError) and isinstance(error, ValueError)
    _refused(counts, InvalidChoice, lambda: bot.tickets(status="closed"))  # type: ignore[arg-type]
    _refused(counts, InvalidChoice, lambda: bot.prune(closed_before=datetime.now(UTC), keep="all"))  # type: ignore[arg-type]
    _refused(counts, InvalidDate, lambda: bot.prune(closed_before=datetime(2026, 1, 1)))
    far = datetime(9999, 12, 31, 23, 59, 59, tzinfo=timezone(timedelta(hours=-8)))  # year 10000 in UTC
    error = _refused(counts, InvalidDate, lambda: bot.prune(closed_before=far))
    assert "out of range" in str(error)
    assert [r.status for r in bot.tickets(status="resolved")] == ["resolved"]  # valid values still work


def test_a_reused_message_id_with_other_text_is_a_conflict(
    bot: SupportBot, counts: Callable[[], dict[str, int]]
) -> None:
    ticket = bot.open_ticket("wugang@example.com", subject="x", body="E3001").ticket_id
    first = bot.send(ticket, "重新授权了还是不行", message_id="m-1")
    again = bot.send(ticket, "  重新授权了还是不行 ", message_id="m-1")  # a retry: same words
    assert again == first
    error = _refused(counts, IdempotencyConflict, lambda: bot.send(ticket, "另一个问题", message_id="m-1"))
    assert error.ticket_id == ticket and "m-1" in str(error) and "new message_id" in str(error)
    assert [t.content for t in bot.state(ticket).turns if t.role == "customer"] == [
        "E3001",
        "重新授权了还是不行",
    ]
    assert bot.send(ticket, "另一个问题", message_id="m-2").outcome == "resolved"


def test_approve_says_busy_apart_from_not_waiting(bot: SupportBot, database_url: str) -> None:
    paused = bot.open_ticket("wugang@example.com", subject="退款", body="年付不想用了,申请退款 100 元")
    assert paused.outcome == "waiting_approval"
    with psycopg.connect(database_url, autocommit=True) as conn:  # another worker holds it for 20 s
        conn.execute(
            "UPDATE supportbot.tickets SET lease_owner = 'worker-elsewhere',"
            " lease_expires = now() + interval '20 seconds' WHERE id = %s",
            (paused.ticket_id,),
        )
        with pytest.raises(TicketBusy) as busy:
            bot.approve(paused.ticket_id, approver="王经理")
        assert not isinstance(busy.value, ApprovalNotPending)
        assert 15 < busy.value.retry_after <= 20 and "retry" in str(busy.value)
        assert bot.pending_approvals()[0].ticket_id == paused.ticket_id  # nothing was decided
        conn.execute(
            "UPDATE supportbot.tickets SET lease_owner = NULL, lease_expires = NULL WHERE id = %s",
            (paused.ticket_id,),
        )
    assert bot.approve(paused.ticket_id, approver="王经理").outcome == "resolved"
    with pytest.raises(ApprovalNotPending) as final:
        bot.approve(paused.ticket_id, approver="王经理")
    assert not isinstance(final.value, TicketBusy)


@pytest.mark.sync_only  # reads the engine's own seams
def test_state_shows_every_stored_turn_whatever_the_round(bot: SupportBot, database_url: str) -> None:
    """A worker that stored the first message and took the lease with the second, then died before
    recording a step: both messages are the customer's words, and state() must show them."""
    now = datetime.now(UTC)
    with psycopg.connect(database_url) as tx:  # the dead worker's connection
        ticket = repo.create_ticket(tx, email="wugang@example.com", subject="x", body="E3001", now=now)
        repo.lock_turn_count(tx, ticket.id)
        repo.insert_turns(tx, ticket.id, [Turn("customer", "E3001", round=1, created_at=now, idx=0)])
    with psycopg.connect(database_url) as conn:
        repo.append_customer_message(
            conn,
            ticket.id,
            "还在吗",
            message_id=None,
            now=now,
            lease=LeaseRequest("dead-worker", 600.0, False),
        )
    assert [t.content for t in bot.state(ticket.id).turns] == ["E3001", "还在吗"]
    assert bot.history(ticket.id) == []

    answered = bot.open_ticket("lina@example.com", subject="x", body="E3001").ticket_id
    bot.state(answered)  # this process now holds a copy of the state after the round
    with psycopg.connect(database_url) as conn:
        repo.append_customer_message(
            conn,
            answered,
            "又失败了",
            message_id=None,
            now=now,
            lease=LeaseRequest("dead-worker", 600.0, False),
        )
    assert [t.content for t in bot.state(answered).turns][-1] == "又失败了"
    assert len(bot.state_at(answered, len(bot.history(answered))).turns) == 2  # history stays exact


def test_a_fork_tells_where_its_round_stands(open_bot: OpenBot, counts: Callable[[], dict[str, int]]) -> None:
    bot = open_bot(ScriptedLLM(triage=refund_if_asked, draft=cite_hits))
    ticket = bot.open_ticket("wugang@example.com", subject="x", body="E3001 同步失败").ticket_id
    assert bot.send(ticket, "年付不想用了,申请退款 100 元").outcome == "waiting_approval"
    steps = bot.history(ticket)
    end_of_round_1 = max(s.seq for s in steps if s.round == 1)
    classified = next(s.seq for s in steps if s.round == 2 and s.step == "classify")
    paused = steps[-1].seq

    error = _refused(counts, ForkRefused, lambda: bot.fork(ticket, paused))
    assert "refund request" in str(error) and "end of the round" in str(error)

    ended = bot.fork(ticket, end_of_round_1)  # the source waits for approval now; the fork does not
    assert _status(bot, ended) == "resolved" and bot.state(ended).outcome == "resolved"
    mid = bot.fork(ticket, classified)
    assert _status(bot, mid) == "in_progress"
    assert [p.ticket_id for p in bot.pending_approvals()] == [ticket]
    finished = bot.resume(mid)  # the round goes on, on the fork: its own refund request
    assert finished is not None and finished.outcome == "waiting_approval"
    assert _status(bot, mid) == "waiting_approval"
    assert present(bot.state(mid).refund_request).id != present(bot.state(ticket).refund_request).id


def _status(bot: SupportBot, ticket_id: str) -> str:
    (row,) = [r for r in bot.tickets() if r.id == ticket_id]
    return row.status


def test_step_0_is_refused_the_same_way_in_the_api_and_the_cli(database_url: str) -> None:
    with SupportBot.open(database_url, backend="demo") as bot:
        ticket = bot.open_ticket("wugang@example.com", subject="x", body="E3001").ticket_id
        with pytest.raises(InvalidStepNumber) as api:
            bot.state_at(ticket, 0)
        with pytest.raises(InvalidStepNumber):
            bot.fork(ticket, 0)
        tickets_before = len(bot.tickets())
    for command in ("state", "fork"):
        proc = _cli(database_url, command, ticket, "--at", "0")
        assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
        assert proc.stderr.startswith("error: ") and "numbered from 1" in proc.stderr
        assert error_text(api.value, "en") in proc.stderr  # the CLI words the same error
    proc = _cli(database_url, "state", ticket, "--at", str(2**40))
    assert proc.returncode == 1 and "numbered from 1" in proc.stderr
    with SupportBot.open(database_url, backend="demo") as bot:
        assert len(bot.tickets()) == tickets_before


def test_prune_far_future_under_a_western_timezone_is_a_usage_error(database_url: str) -> None:
    for moment, code in (("9999-12-31T23:59:59", 2), ("9999-12-31T20:00:00-08:00", 1)):
        proc = _cli(database_url, "prune", "--closed-before", moment, "--yes", tz="America/Los_Angeles")
        assert proc.returncode == code and "Traceback" not in proc.stderr, proc.stderr
        assert "9999" in proc.stderr
    ok = _cli(database_url, "prune", "--closed-before", "9999-12-30", "--yes", tz="America/Los_Angeles")
    assert ok.returncode == 0, ok.stderr


def _cli(url: str, *args: str, tz: str = "UTC") -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SUPPORTBOT_")}
    env |= {"TZ": tz, "SUPPORTBOT_LANG": "en", "SUPPORTBOT_BACKEND": "demo"}
    argv = [sys.executable, "-m", "supportbot", *args, "--database-url", url]
    return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=180, check=False)


def test_surrogates_from_the_command_line_are_refused_cleanly(database_url: str) -> None:
    # An undecodable byte in argv reaches Python as a lone surrogate (surrogateescape).
    ticket = b"T000001\xff".decode(errors="surrogateescape")
    argv = [sys.executable, "-m", "supportbot", "show", ticket, "--database-url", database_url]
    env = os.environ | {"SUPPORTBOT_LANG": "en", "SUPPORTBOT_BACKEND": "demo"}
    proc = subprocess.run(argv, env=env, capture_output=True, timeout=180, check=False)
    assert proc.returncode == 1 and b"Traceback" not in proc.stderr
    assert b"the ticket id holds invalid Unicode" in proc.stderr
