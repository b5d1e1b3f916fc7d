"""A primary that fails over: four processes talk and approve refunds through a multi-host URL
while the primary's postmaster is SIGKILLed and Patroni promotes a replica.

What must hold: callers see StoreUnavailable or StoreBusy (never a raw driver error, never a wait
past the documented bound) and then succeed in the same processes; every acknowledged message is
stored exactly once, every refund decided exactly once, and no ticket is left stuck.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from failover_process import read_log
from support.fakes import ScriptedLLM, cite_hits, refund_if_asked, rows, seed_business
from support.patroni import Cluster, patroni_cluster

from supportbot import Settings, SupportBot

PROCESS = Path(__file__).resolve().parent / "failover_process.py"
PROCESSES = 4
LEASE = 2.0
DB_TIMEOUT = 5.0
POOL_TIMEOUT = 2.0
# A call waits for the pool at most POOL_TIMEOUT, then one connection attempt per host listed, each
# at most DB_TIMEOUT (libpq's connect_timeout applies per host); a statement cut off by the kill
# fails at once. docs/scaling.md states this bound.
CALL_BOUND = POOL_TIMEOUT + 3 * DB_TIMEOUT


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    with patroni_cluster() as running:
        yield running


def _env(url: str) -> dict[str, str]:
    return {
        **os.environ,
        "SUPPORTBOT_DATABASE_URL": url,
        "SUPPORTBOT_LEASE_SECONDS": str(LEASE),
        "SUPPORTBOT_DB_TIMEOUT": str(DB_TIMEOUT),
        "SUPPORTBOT_POOL_TIMEOUT": str(POOL_TIMEOUT),
    }


def _acks_after(log: Path, moment: float) -> int:
    return sum(1 for line in read_log(log) if line.get("ack") == "send" and line["at"] > moment)


def test_a_failover_loses_and_repeats_nothing(cluster: Cluster, tmp_path: Path) -> None:
    settings = Settings(lease_seconds=LEASE, db_timeout=DB_TIMEOUT, pool_timeout=POOL_TIMEOUT)
    with SupportBot.open(cluster.url, llm=ScriptedLLM(), settings=settings, backend="demo") as bot:
        assert bot.tickets() == []  # the schema is there, on the primary
    with psycopg.connect(cluster.url) as conn:
        seed_business(conn)

    stop = tmp_path / "stop"
    logs = [tmp_path / f"p{i}.jsonl" for i in range(PROCESSES)]
    outputs = [tmp_path / f"p{i}.out" for i in range(PROCESSES)]
    procs = []
    for i in range(PROCESSES):
        with open(outputs[i], "wb") as out:
            args = {"tag": f"p{i}", "log": str(logs[i]), "stop": str(stop)}
            procs.append(
                subprocess.Popen(
                    [sys.executable, str(PROCESS), json.dumps(args)],
                    env=_env(cluster.url),
                    stdout=out,
                    stderr=subprocess.STDOUT,
                )
            )
    try:
        _wait(
            lambda: all(log.exists() and _acks_after(log, 0) >= 4 for log in logs),
            60,
            "no round before the kill",
        )
        old = cluster.primary()
        assert old is not None
        os.kill(old.postmaster_pid(), signal.SIGKILL)
        killed = time.time()
        _wait(lambda: all(_acks_after(log, killed) >= 4 for log in logs), 90, "the callers did not recover")
        new = cluster.primary()
    finally:
        stop.touch()
        for proc in procs:
            try:
                proc.wait(60)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(10)
    for proc, output in zip(procs, outputs, strict=True):
        assert proc.returncode == 0, output.read_text(errors="replace")[-3000:]
    assert new is not None and new.name != old.name, "Patroni did not promote a replica"

    lines = [read_log(log) for log in logs]
    every = [line for process in lines for line in process]
    assert [line for line in every if "unexpected" in line] == []
    errors = [line for line in every if "error" in line]
    assert {line["error"] for line in errors} <= {"StoreUnavailable", "StoreBusy", "TicketBusy"}
    # StoreUnavailable while no node takes writes; StoreBusy when the pool's wait ran out while it
    # reconnected but a new primary already answered the probe.
    assert any(line["error"] in ("StoreUnavailable", "StoreBusy") for line in errors), (
        "the kill went unnoticed"
    )
    assert all(line["chained"] for line in errors if line["error"] != "TicketBusy")  # the driver's error kept
    longest = max(line["took"] for line in every if "took" in line)
    assert longest < CALL_BOUND, f"a call took {longest:.1f} s"
    # The first round that started after the kill and was acknowledged.
    first_after = min(
        line["at"] for line in every if line.get("ack") == "send" and line["at"] - line["took"] > killed
    )
    seen = Counter(line["error"] for line in errors)
    print(
        f"failover: {old.name} -> {new.name}; first acknowledged round {first_after - killed:.2f} s "
        f"after the kill; errors {dict(seen)}; longest call {longest:.2f} s; "
        f"messages {sum(1 for line in every if 'sent' in line)}"
    )

    time.sleep(LEASE + 0.5)  # a round cut off by the kill left its lease to expire
    with SupportBot.open(
        cluster.url,
        llm=ScriptedLLM(triage=refund_if_asked, draft=cite_hits),
        settings=settings,
        backend="demo",
    ) as bot:
        for process in lines:
            (ticket,) = {line["ticket"] for line in process if "ticket" in line}
            bot.resume(ticket)  # whatever a cut-off round left queued gets its round
            _check_ticket(cluster.url, ticket, process)
            assert bot.state(ticket).outcome in ("resolved", "waiting_approval"), "a ticket is stuck"


def _check_ticket(url: str, ticket: str, process: list[dict[str, Any]]) -> None:
    sent = [line["sent"] for line in process if "sent" in line]
    stored = rows(
        url,
        "SELECT message_id, role FROM supportbot.turns WHERE ticket_id = %s ORDER BY idx",
        ticket,
    )
    ids = [m for m, role in stored if role == "customer" and m is not None]
    assert ids == sent, "an acknowledged message is missing, stored twice or out of order"
    assert stored[-1][1] == "agent", "the last message was not answered"
    approved = [line for line in process if "approved" in line]
    decisions = rows(
        url,
        "SELECT count(*) FROM supportbot.effects WHERE ticket_id = %s AND kind = 'refund_decision'",
        ticket,
    )
    assert decisions == [(len(approved),)], "a refund decision was applied twice, or not at all"
    refunds = rows(
        url, "SELECT status, count(*) FROM demo.refunds WHERE ticket_id = %s GROUP BY status", ticket
    )
    assert refunds == [("approved", len(approved))]


def _wait(ready: Any, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not ready():
        assert time.monotonic() < deadline, what
        time.sleep(0.1)
