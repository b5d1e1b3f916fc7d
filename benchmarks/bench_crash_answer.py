"""Time to answer after a crash: a process is SIGKILLed mid-round (while its model drafts), then a
new process calls send() on the same ticket with no worker running.

    python benchmarks/bench_crash_answer.py [--runs 10] [--lease 30] [--pgbouncer-lease 3]

Reported per topology, over the runs: the median and the worst time send() took (the call alone,
not the new process's start), and how many answers were a resolved round. Topologies: the
embedded server over its socket (a direct connection: the server sees the dead client's
connection end, so its lease is taken at once) and, when Debian's pgbouncer is installed, the same
server through PgBouncer in transaction mode (server connections outlive their clients: the lease
must expire first). The lease is the default 30 s on the direct connection, shorter through
PgBouncer so a run does not take minutes.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
from contextlib import ExitStack
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import fresh_database, median

# The process that crashes or answers: a scripted model, the demo business system.
CHILD = r"""
import json, os, signal, sys, time
from supportbot import Completion, OfflineModel, Settings, SupportBot

class Model(OfflineModel):
    def chat(self, messages, *, schema=None, temperature=0.0):
        if schema is None and os.environ.get("CRASH") == "1":
            sys.stdout.flush()
            os.kill(os.getpid(), signal.SIGKILL)
        return super().chat(messages, schema=schema, temperature=temperature)

action, arg = sys.argv[1], sys.argv[2]
settings = Settings.from_env()
with SupportBot.open(settings.database_url, llm=Model(), settings=settings, backend="demo") as bot:
    if action == "open":
        bot.open_ticket("wugang@example.com", body=arg)
    else:
        started = time.monotonic()
        result = bot.send(arg, "还在吗?")
        print(json.dumps({"outcome": result.outcome, "seconds": time.monotonic() - started}))
"""


def one_run(url: str, lease: float, pooled: bool) -> tuple[str, float]:
    env = {
        **os.environ,
        "SUPPORTBOT_DATABASE_URL": url,
        "SUPPORTBOT_LEASE_SECONDS": str(lease),
        "SUPPORTBOT_PREPARED_STATEMENTS": "off" if pooled else "on",
    }
    crashed = subprocess.run(
        [sys.executable, "-c", CHILD, "open", "E3001 同步失败"], env={**env, "CRASH": "1"}, check=False
    )
    assert crashed.returncode == -signal.SIGKILL, crashed
    import psycopg

    with psycopg.connect(url) as conn:
        (ticket,) = conn.execute(
            "SELECT id FROM supportbot.tickets ORDER BY created_at DESC LIMIT 1"
        ).fetchone()  # type: ignore[misc]
    done = subprocess.run(
        [sys.executable, "-c", CHILD, "send", ticket], env=env, check=True, capture_output=True, text=True
    )
    answer = json.loads(done.stdout.strip().splitlines()[-1])
    return answer["outcome"], answer["seconds"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--lease", type=float, default=30.0)
    parser.add_argument("--pgbouncer-lease", type=float, default=3.0)
    args = parser.parse_args()
    report: dict[str, object] = {"runs": args.runs}
    with ExitStack() as stack:
        url = stack.enter_context(fresh_database("bench_crash_answer"))
        import psycopg

        from supportbot.backend.demo import load_demo_data

        with psycopg.connect(url) as conn:
            load_demo_data(conn)
        topologies = [("embedded (direct socket)", url, args.lease, False)]
        try:
            sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
            from support.pgbouncer import pgbouncer

            through = stack.enter_context(pgbouncer(url))
            from psycopg.conninfo import conninfo_to_dict, make_conninfo

            address = conninfo_to_dict(through)
            pooled_url = make_conninfo(url, host=address["host"], port=address["port"])
            topologies.append(("PgBouncer, transaction mode", pooled_url, args.pgbouncer_lease, True))
        except RuntimeError as exc:  # pgbouncer not installed
            report["pgbouncer"] = str(exc)
        for name, target, lease, pooled in topologies:
            outcomes, seconds = [], []
            for _ in range(args.runs):
                outcome, took = one_run(target, lease, pooled)
                outcomes.append(outcome)
                seconds.append(took)
            report[name] = {
                "lease_seconds": lease,
                "resolved": f"{outcomes.count('resolved')}/{len(outcomes)}",
                "send_seconds_median": round(median(seconds), 3),
                "send_seconds_max": round(max(seconds), 3),
            }
            print(name, report[name], file=sys.stderr, flush=True)
            time.sleep(0.1)
    print(json.dumps(report, indent=1, ensure_ascii=False))


if __name__ == "__main__":
    main()
