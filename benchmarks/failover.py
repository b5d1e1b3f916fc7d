"""How long a Patroni failover keeps supportbot's callers waiting.

    python benchmarks/failover.py [--kills 3] [--processes 4]

Starts etcd and three PostgreSQL 15 nodes under Patroni on loopback (tests/support/patroni.py: Debian's
patroni, etcd-server and postgresql-15, which scripts/install-test-deps installs), then runs
``--processes`` customer processes (tests/failover_process.py: messages, refunds, approvals,
through a multi-host URL with target_session_attrs=read-write) and SIGKILLs the primary's
postmaster ``--kills`` times, waiting each time until the old primary has rejoined as a replica.

Reports, per kill: seconds from the kill to the first acknowledged round that started after it,
the errors callers saw, the longest call; and at the end, whether every acknowledged message is
stored exactly once and every approval applied once (the test, tests/test_failover.py, asserts
the same on one kill).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from tempfile import TemporaryDirectory
from typing import Any

TESTS = Path(__file__).resolve().parents[1] / "tests"
sys.path.insert(0, str(TESTS))

import psycopg  # noqa: E402
from failover_process import read_log  # noqa: E402
from support.fakes import seed_business  # noqa: E402
from support.patroni import patroni_cluster  # noqa: E402

from supportbot import Settings, SupportBot  # noqa: E402
from supportbot.llm.offline import OfflineModel  # noqa: E402

LEASE, DB_TIMEOUT, POOL_TIMEOUT = 2.0, 5.0, 2.0


def _acks_since(logs: list[Path], moment: float) -> list[dict[str, Any]]:
    return [
        line
        for log in logs
        for line in read_log(log)
        if line.get("ack") == "send" and line["at"] - line["took"] > moment
    ]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kills", type=int, default=3)
    parser.add_argument("--processes", type=int, default=4)
    args = parser.parse_args()
    env_base = {
        **os.environ,
        "SUPPORTBOT_LEASE_SECONDS": str(LEASE),
        "SUPPORTBOT_DB_TIMEOUT": str(DB_TIMEOUT),
        "SUPPORTBOT_POOL_TIMEOUT": str(POOL_TIMEOUT),
    }
    with patroni_cluster() as cluster, TemporaryDirectory() as tmp:
        settings = Settings(lease_seconds=LEASE, db_timeout=DB_TIMEOUT, pool_timeout=POOL_TIMEOUT)
        SupportBot.open(cluster.url, llm=OfflineModel(), settings=settings, backend="demo").close()
        with psycopg.connect(cluster.url) as conn:
            seed_business(conn)
        stop = Path(tmp) / "stop"
        logs = [Path(tmp) / f"p{i}.jsonl" for i in range(args.processes)]
        procs = [
            subprocess.Popen(
                [
                    sys.executable,
                    str(TESTS / "failover_process.py"),
                    json.dumps({"tag": f"p{i}", "log": str(logs[i]), "stop": str(stop)}),
                ],
                env={**env_base, "SUPPORTBOT_DATABASE_URL": cluster.url},
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            for i in range(args.processes)
        ]
        recoveries: list[float] = []
        try:
            _until(lambda: len(_acks_since(logs, 0)) >= 4 * args.processes, 60)
            for kill in range(1, args.kills + 1):
                old = cluster.primary()
                assert old is not None
                os.kill(old.postmaster_pid(), signal.SIGKILL)
                killed = time.time()
                _until(lambda: _acks_since(logs, killed), 120)  # noqa: B023 - used at once
                first = min(line["at"] for line in _acks_since(logs, killed))
                recoveries.append(first - killed)
                new = cluster.primary()
                promoted = new.name if new else "?"
                print(f"kill {kill}: {old.name} -> {promoted}; first round {first - killed:.2f} s after")
                cluster.wait_until_healthy(120)  # the old primary back as a replica before the next kill
                time.sleep(2)
        finally:
            stop.touch()
            for proc in procs:
                proc.wait(60)
        every = [line for log in logs for line in read_log(log)]
        errors = Counter(line["error"] for line in every if "error" in line)
        longest = max((line["took"] for line in every if "took" in line), default=0.0)
        unexpected = [line["unexpected"] for line in every if "unexpected" in line]
        lost, doubled = _exactly_once(cluster.url, logs)
    print(
        f"\n{args.kills} failovers, {args.processes} processes: first acknowledged round after the kill "
        f"min {min(recoveries):.2f} s, median {statistics.median(recoveries):.2f} s, "
        f"max {max(recoveries):.2f} s; errors seen {dict(errors)}; longest call {longest:.2f} s; "
        f"messages acknowledged {sum(1 for line in every if 'sent' in line)}, lost {lost}, "
        f"stored twice {doubled}; unexpected errors {len(unexpected)}"
    )
    return 0 if not (lost or doubled or unexpected) else 1


def _exactly_once(url: str, logs: list[Path]) -> tuple[int, int]:
    lost = doubled = 0
    with psycopg.connect(url) as conn:
        for log in logs:
            lines = read_log(log)
            sent = [line["sent"] for line in lines if "sent" in line]
            tickets = {line["ticket"] for line in lines if "ticket" in line}
            stored = Counter(
                m
                for (m,) in conn.execute(
                    "SELECT message_id FROM supportbot.turns WHERE ticket_id = ANY(%s) AND role = 'customer'",
                    (list(tickets),),
                )
            )
            lost += sum(1 for m in sent if stored[m] == 0)
            doubled += sum(1 for m in sent if stored[m] > 1)
    return lost, doubled


def _until(ready: Any, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not ready():
        if time.monotonic() > deadline:
            raise SystemExit("timed out waiting for the callers")
        time.sleep(0.1)


if __name__ == "__main__":
    sys.exit(main())
