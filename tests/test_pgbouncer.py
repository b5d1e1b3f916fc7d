"""supportbot through PgBouncer in transaction pooling mode, the usual production topology.

In that mode each transaction may run on a different server session, so nothing may rely on a
session: no prepared statements (``prepared_statements=False``), no session-level advisory lock,
no ``SET`` without ``LOCAL``, no ``LISTEN``. The engine, thread and crash tests run again through
a real PgBouncer started in front of the test server.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from conftest import _with_dbname
from support.fakes import ScriptedLLM, cite_hits, refund_if_asked, rows, seed_business
from support.pgbouncer import pgbouncer

from supportbot import Settings, SupportBot
from supportbot.errors import StoreUnavailable

ROOT = Path(__file__).resolve().parent.parent
# The engine, many threads sharing one bot, and crashes and concurrency across processes.
MODULES = [
    "tests/test_engine.py",
    "tests/test_threads.py",
    "tests/test_processes.py",
    "tests/test_dead_holders.py",
]


@pytest.fixture(scope="module")
def bouncer(server_url: str) -> Iterator[str]:
    """An admin URL of the test server through a PgBouncer of this module's own."""
    with pgbouncer(server_url) as url:
        yield url


def _through(bouncer: str, database_url: str) -> str:
    return _with_dbname(bouncer, psycopg.conninfo.conninfo_to_dict(database_url)["dbname"])  # type: ignore[arg-type]


def test_a_pooled_bot_migrates_and_runs_many_transactions_on_shared_sessions(
    bouncer: str, database_url: str
) -> None:
    """Many more transactions than server sessions, each statement run far past psycopg's
    prepare threshold (5): with prepared statements this fails as soon as two clients' statements
    meet on one session."""
    url = _through(bouncer, database_url)
    with psycopg.connect(url) as conn:
        seed_business(conn)
    settings = Settings(database_url=url, prepared_statements=False)
    bots = [
        SupportBot.open(
            url, llm=ScriptedLLM(triage=refund_if_asked, draft=cite_hits), settings=settings, backend="demo"
        )
        for _ in range(3)
    ]
    try:
        tickets = [bot.open_ticket("wugang@example.com", body="E3001 同步失败").ticket_id for bot in bots]
        for i in range(4):
            for bot, ticket in zip(bots, tickets, strict=True):
                assert bot.send(ticket, f"第{i}次追问").outcome == "resolved"
        paused = bots[0].open_ticket("wugang@example.com", body="申请退款 100 元")
        assert paused.outcome == "waiting_approval"
        done = bots[1].approve(paused.ticket_id, approver="王经理")
        assert done.outcome == "resolved"
    finally:
        for bot in bots:
            bot.close()
    assert rows(url, "SELECT count(*) FROM supportbot.turns") == [(3 * 10 + 2,)]
    assert rows(url, "SELECT status FROM demo.refunds") == [("approved",)]


def test_a_bot_not_told_of_the_pooler_says_what_to_set(bouncer: str, database_url: str) -> None:
    """Connected directly, pooled connections start with the limits as startup options, which
    PgBouncer refuses: opening says so, with the setting that fixes it, before anything runs."""
    url = _through(bouncer, database_url)
    with pytest.raises(StoreUnavailable, match="SUPPORTBOT_PREPARED_STATEMENTS=off") as raised:
        SupportBot.open(url, settings=Settings(database_url=url), backend="demo")
    assert raised.value.reason == "connect"


def test_nothing_in_the_code_or_schema_needs_a_session() -> None:
    """The audit behind the pooler setting, kept true: every lock is transaction-level, every
    SET is LOCAL, and nothing LISTENs on a pooled connection."""
    session_bound = [
        re.compile(r"pg_(try_)?advisory_lock(_shared)?\s*\(", re.IGNORECASE),
        re.compile(r"\bLISTEN\s+\w", re.IGNORECASE),
        re.compile(
            # Case-sensitive: the code writes SQL keywords in capitals, and prose ("Set X to") is not SQL.
            r"""(^|["';]\s*)SET\s+(SESSION\s+)?(?!LOCAL\b)\w+\s*(=|TO\b)""",
            re.MULTILINE,
        ),
    ]
    sources = [*(ROOT / "supportbot").rglob("*.py"), *(ROOT / "sql").glob("*.sql")]
    assert len(sources) > 30
    # The one LISTEN is store/_listen.py's (and its task twin's), on a connection of its own that never
    # comes from the pool (Settings.listen_url, or none: behind PgBouncer without that setting,
    # supportbot polls).
    listener = ROOT / "supportbot" / "store" / "_listen.py"
    task_listener = ROOT / "supportbot" / "store" / "_aio_listen.py"
    found = [
        f"{path.relative_to(ROOT)}: {match.group(0)!r}"
        for path in sources
        for pattern in session_bound
        for match in pattern.finditer(path.read_text(encoding="utf-8"))
        if path not in (listener, task_listener)
    ]
    assert found == []
    assert "psycopg.connect(self._url" in listener.read_text(encoding="utf-8")
    assert "psycopg.AsyncConnection.connect(self._url" in task_listener.read_text(encoding="utf-8")
    # The migrator's lock is the transaction-level one, released with its commit.
    assert "pg_advisory_xact_lock" in (ROOT / "supportbot" / "store" / "_migrate_async.py").read_text(
        encoding="utf-8"
    )


def test_the_engine_thread_and_crash_tests_pass_through_pgbouncer(server_url: str) -> None:
    """Re-runs whole test modules with every test database reached through PgBouncer."""
    env = {
        **os.environ,
        "SUPPORTBOT_TEST_PGBOUNCER": "1",
        "SUPPORTBOT_PREPARED_STATEMENTS": "off",  # the worker processes read their settings from here
        "SUPPORTBOT_DATABASE_URL": server_url,  # the child run shares this run's server
    }
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *MODULES],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    summary = proc.stdout.strip().splitlines()[-1] if proc.stdout.strip() else ""
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    passed = re.search(r"(\d+) passed", summary)
    assert passed is not None and not re.search(r"failed|error|skipped", summary), summary
    defined = sum(len(re.findall(r"^def test_", (ROOT / m).read_text(), re.MULTILINE)) for m in MODULES)
    assert int(passed.group(1)) >= defined, summary
    print(f"through PgBouncer: {summary}")
