"""submit, workers and wait through PgBouncer in transaction mode (tests/support/pgbouncer.py).

Through the pooler LISTEN cannot work (the session is handed to other clients): without
``listen_url`` everything polls; with it, notifications come over that direct connection.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from conftest import _with_dbname
from support.fakes import rows, seed_business
from support.pgbouncer import pgbouncer

from supportbot import Settings, SupportBot
from supportbot.run import _waiting as waiting

HELPER = Path(__file__).resolve().parent / "work_process.py"


@pytest.fixture(scope="module")
def bouncer(server_url: str) -> Iterator[str]:
    with pgbouncer(server_url) as url:
        yield url


@pytest.fixture
def through(bouncer: str, database_url: str) -> str:
    """The test database, reached through PgBouncer."""
    with psycopg.connect(database_url) as conn:
        seed_business(conn)
    return _with_dbname(bouncer, psycopg.conninfo.conninfo_to_dict(database_url)["dbname"])  # type: ignore[arg-type]


def test_submit_work_and_wait_poll_through_pgbouncer(through: str) -> None:
    settings = Settings(database_url=through, prepared_statements=False, worker_sweep_seconds=0.2)
    assert waiting.listen_url(settings, through) is None  # no LISTEN through the pooler
    with SupportBot.open(through, settings=settings, backend="demo") as bot:
        stop = threading.Event()
        worker = threading.Thread(target=bot.work, kwargs={"threads": 4, "stop": stop})
        worker.start()
        try:
            submitted = [
                bot.open_ticket("wugang@example.com", body=f"E3001 第 {i} 次", wait=False) for i in range(12)
            ]
            results = [bot.wait(s.ticket_id, s, timeout=30) for s in submitted]
        finally:
            stop.set()
            worker.join(timeout=15)
    assert {r.outcome for r in results} == {"resolved"}
    assert rows(through, "SELECT count(*) FROM supportbot.turns WHERE role = 'agent'") == [(12,)]


def test_a_worker_process_through_pgbouncer_listens_on_the_direct_url(
    through: str, database_url: str
) -> None:
    env = {
        **os.environ,
        "SUPPORTBOT_DATABASE_URL": through,
        "SUPPORTBOT_PREPARED_STATEMENTS": "off",
        "SUPPORTBOT_LISTEN_URL": database_url,  # the server itself, past the pooler
        "SUPPORTBOT_WORKER_SWEEP_SECONDS": "30",  # so only a notification can bring the work in time
    }
    proc = subprocess.Popen(
        [sys.executable, str(HELPER), json.dumps({"threads": 2})],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
        deadline = time.monotonic() + 10
        while not rows(
            database_url, "SELECT 1 FROM pg_stat_activity WHERE query LIKE 'LISTEN %%supportbot_work%%'"
        ):
            assert time.monotonic() < deadline, "the worker never listened"
            time.sleep(0.05)
        settings = Settings(database_url=through, prepared_statements=False, listen_url=database_url)
        with SupportBot.open(through, settings=settings, backend="demo") as bot:
            opened = bot.open_ticket("lina@example.com", body="E3001 同步失败", wait=False)
            result = bot.wait(opened.ticket_id, opened, timeout=10)
        assert result.outcome == "resolved"
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)
        if proc.stdout is not None:
            proc.stdout.close()
    assert proc.returncode == 0
