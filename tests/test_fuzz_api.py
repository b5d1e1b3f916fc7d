"""Fuzzing the public API: every call succeeds or raises a SupportbotError, and a refused call
writes nothing.

Each example draws a short sequence of calls to SupportBot's public methods on the demo data with
the offline model. Every argument is drawn either from values that work (existing tickets, demo
customers, step numbers of real histories, refund requests that pause for approval) or from junk:
wrong types, lone surrogates, NUL, integers beyond 64 bits, long strings, naive and out-of-range
datetimes. ``open``/``close`` and the context-manager methods are left out: they manage the
object, not the data. The counts of the run are printed at the end (``pytest -s`` shows them);
``FUZZ_EXAMPLES=600`` makes a run of about 3,000 calls.
"""

from __future__ import annotations

import os
import random
import string
from collections import Counter
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
import psycopg_pool
import psycopg_pool.base
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.both_bots import opened
from support.fakes import row_counts

from supportbot import Settings, SupportBot, SupportbotError
from supportbot.backend.demo import load_demo_data
from supportbot.llm.offline import OfflineModel

EMAILS = ("wugang@example.com", "lina@example.com", "sunli@example.com", "zhaomin@example.com")
MESSAGES = (
    "招商银行的流水又同步失败了,提示 E3001,怎么办?",
    "年付刚买了两周,用不上,想申请退款 200 元",
    "发票抬头写错了,能改吗",
    "I want a refund of 50 CNY please",
    "转人工",
)
METHODS = (
    *("open_ticket",) * 3,
    *("send",) * 6,
    *("approve", "reject") * 2,
    *("resume", "profile", "pending_approvals", "state", "state_at", "history", "ticket", "tickets") * 2,
    *("fork",) * 3,
    *("prune", "pruned") * 2,
    *("forget_customer", "reset"),
    *("take_over", "reply_as_human", "hand_back") * 2,
    "audit",
)
STATUSES = ("open", "in_progress", "waiting_approval", "resolved", "escalated")

TALLY: Counter[str] = Counter()

# -- junk -----------------------------------------------------------------------------------------

_surrogates = st.text(
    alphabet=st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF), min_size=1, max_size=3
)
_with = st.builds(
    lambda a, bad, b: a + bad + b, st.text(max_size=5), _surrogates | st.just("\x00"), st.text(max_size=5)
)
JUNK = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True),
    st.binary(max_size=8),
    _with,
    st.integers(min_value=250, max_value=25_000).map(lambda n: "长" * n),
    st.text(alphabet=string.printable, max_size=12),
    st.lists(st.integers(), max_size=2),
    st.dates(),
    st.datetimes(),  # naive
)


def _or_junk(valid: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    # One argument in five is junk, so most calls get far enough to reach the database.
    return st.sampled_from((False, False, False, False, True)).flatmap(lambda junk: JUNK if junk else valid)


# -- the run ----------------------------------------------------------------------------------------


@pytest.fixture
def fuzz_bot(
    demo_url: str, monkeypatch: pytest.MonkeyPatch, front: str
) -> Iterator[tuple[SupportBot, psycopg.Connection]]:
    # psycopg_pool draws each new connection's lifetime jitter from the global random module, in
    # its own threads, whenever it replaces or adds a connection. Hypothesis warns (and may one day
    # fail) when that state moves while it draws the next example, so the pool gets a generator
    # of its own. (monkeypatch fails loudly if psycopg_pool renames it.)
    monkeypatch.setattr(psycopg_pool.base, "random", random.Random().random)
    with (
        opened(front, demo_url, llm=OfflineModel(), settings=Settings(database_url=demo_url)) as bot,
        psycopg.connect(demo_url, autocommit=True) as conn,
    ):
        yield bot, conn


def test_new_pool_connections_leave_the_global_random_state_alone(
    fuzz_bot: tuple[SupportBot, psycopg.Connection], demo_url: str
) -> None:
    """What the fixture's generator is for: without it, opening these connections moves it."""
    state = random.getstate()
    with psycopg_pool.ConnectionPool(demo_url, min_size=2, open=True) as pool:
        pool.wait(timeout=10)
    assert random.getstate() == state


class Pick(int):
    """An index into the tickets that exist when the call is made: drawing it cannot depend on the
    database (Hypothesis replays draws), so the ticket is chosen at call time."""


def _ticket(bot: SupportBot, value: Any, *, waiting: bool = False) -> Any:
    if not isinstance(value, Pick):
        return value
    tickets = [p.ticket_id for p in bot.pending_approvals()] if waiting else []
    tickets = tickets or [r.id for r in bot.tickets()]
    return tickets[value % len(tickets)] if tickets else "T000001"


def _calls(bot: SupportBot, data: st.DataObject) -> tuple[str, Callable[[], Any]]:
    ticket = _or_junk(st.integers(min_value=0, max_value=10_000).map(Pick))
    email = _or_junk(st.sampled_from(EMAILS))
    message = _or_junk(st.sampled_from(MESSAGES))
    step = _or_junk(
        st.integers(min_value=1, max_value=25) | st.sampled_from((0, -1, 2**31, -(2**31) - 1, 2**63))
    )
    moment = _or_junk(st.datetimes(timezones=st.timezones()) | st.just(datetime.now(UTC) + timedelta(days=1)))
    # Weighted: conversations most, reset (which empties everything) rarely.
    name = data.draw(st.sampled_from(METHODS), label="method")

    def draw(strategy: st.SearchStrategy[Any]) -> Any:
        return data.draw(strategy)

    def draw_ticket(*, waiting: bool = False) -> Callable[[], Any]:
        value = data.draw(ticket)
        return lambda: _ticket(bot, value, waiting=waiting)

    match name:
        case "open_ticket":
            args = (draw(email), draw(_or_junk(st.text(max_size=20))), draw(message))
            return name, lambda: bot.open_ticket(args[0], subject=args[1], body=args[2])
        case "send":
            t, text = draw_ticket(), draw(message)
            message_id = draw(st.none() | _or_junk(st.sampled_from(["m-1", "m-2"])))
            return name, lambda: bot.send(t(), text, message_id=message_id)
        case "approve" | "reject":
            t = draw_ticket(waiting=True)
            approver, note = draw(_or_junk(st.sampled_from(["王经理", " "]))), draw(_or_junk(st.just("")))
            return name, lambda: getattr(bot, name)(t(), approver=approver, note=note)
        case "state_at" | "fork":
            t, seq = draw_ticket(), draw(step)
            return name, lambda: getattr(bot, name)(t(), seq)
        case "tickets":
            e, s = draw(st.none() | email), draw(st.none() | _or_junk(st.sampled_from(STATUSES)))
            return name, lambda: bot.tickets(email=e, status=s)
        case "forget_customer":
            e, force = draw(email), draw(_or_junk(st.booleans()))
            return name, lambda: bot.forget_customer(e, force=force)
        case "prune":
            cutoff, keep = draw(moment), draw(_or_junk(st.sampled_from(["last", "final"])))
            return name, lambda: bot.prune(closed_before=cutoff, keep=keep)
        case "pending_approvals" | "reset":
            return name, getattr(bot, name)
        case "profile":
            e = draw(email)
            return name, lambda: bot.profile(e)
        case "take_over" | "reply_as_human" | "hand_back":
            t, agent = draw_ticket(), draw(_or_junk(st.sampled_from(["王芳", "李雷"])))
            if name == "take_over":
                return name, lambda: bot.take_over(t(), agent=agent)
            if name == "hand_back":
                note = draw(_or_junk(st.just("已处理")))
                return name, lambda: bot.hand_back(t(), agent=agent, note=note)
            text = draw(message)
            return name, lambda: bot.reply_as_human(t(), text, agent=agent)
        case "audit":
            since, limit = draw(st.none() | moment), draw(_or_junk(st.integers(min_value=1, max_value=5)))
            return name, lambda: bot.audit(since=since, limit=limit)
        case _:  # resume, state, history, pruned: a ticket id
            t = draw_ticket()
            return name, lambda: getattr(bot, name)(t())


@settings(
    max_examples=int(os.environ.get("FUZZ_EXAMPLES", "100")),  # ~5 calls each; more for a long run
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    deadline=None,
)
@given(data=st.data())
def test_every_call_succeeds_or_is_refused_without_writing(
    fuzz_bot: tuple[SupportBot, psycopg.Connection], data: st.DataObject
) -> None:
    """A caller never sees a raw driver or Python error, and a refusal never half-writes: the
    promise InvalidInput's docstring and the README make."""
    bot, conn = fuzz_bot
    # Drawn before any call runs: the calls use the random module (pool jitter), which Hypothesis
    # must not see change while it draws.
    plan = [_calls(bot, data) for _ in range(data.draw(st.integers(min_value=1, max_value=8), label="calls"))]
    for name, call in plan:
        before = row_counts(conn)
        TALLY["calls"] += 1
        try:
            call()
        except SupportbotError as exc:
            TALLY[f"error {type(exc).__name__}"] += 1
            after = row_counts(conn)
            assert after == before, f"{name} raised {type(exc).__name__} after writing: {exc}"
            str(exc).encode("utf-8")  # printable and loggable as it is
        except BaseException as exc:
            TALLY[f"raw {type(exc).__name__}"] += 1
            raise
        else:
            TALLY["ok"] += 1
            TALLY[f"ok {name}"] += 1
            if name == "reset":  # keep the run interesting: the demo data back, ticket numbers go on
                with conn.transaction():
                    load_demo_data(conn)


@pytest.fixture(scope="module", autouse=True)
def _report() -> Iterator[None]:
    yield
    if TALLY:
        raw = sum(n for k, n in TALLY.items() if k.startswith("raw "))
        errors = sum(n for k, n in TALLY.items() if k.startswith("error "))
        print(
            f"\nfuzz: {TALLY['calls']} calls, {TALLY['ok']} succeeded, {errors} refused, {raw} raw exceptions"
        )
        for key, n in sorted(TALLY.items()):
            if key.startswith(("error ", "raw ", "ok ")):
                print(f"    {key}: {n}")
