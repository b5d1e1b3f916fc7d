"""Engine benchmark: per-round latency, bytes per round, state()/history() latency, throughput.

    python benchmarks/bench_engine.py [--rounds 10 100 500] [--workers 4 --tickets 200] [--threads 16]

Workload: one ticket, N rounds, a zero-latency scripted model; customer messages of 60-150 and
replies of 150-300 non-repeating Chinese characters; every 3rd round the first draft is rejected
and redrafted; every 4th round is a refund that waits for approval and is approved.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import sys
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import psycopg
from psycopg import sql
from pydantic import BaseModel

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import ChineseText, fresh_database, insert_floor, median, p95

from supportbot import Completion, Settings, SupportBot
from supportbot._state import Review, Triage
from supportbot.run import _steps as graph

TABLES = ("tickets", "turns", "tool_calls", "steps", "checkpoints", "approvals", "effects")
TECH = Triage(
    category="technical",
    needs_account_data=False,
    needs_human=False,
    summary="银行同步失败",
    search_query="E3001 银行流水同步",
)
REFUND = Triage(
    category="refund",
    needs_account_data=True,
    needs_human=False,
    summary="申请退款",
    search_query="退款 年付",
)


class BenchModel:
    """Zero-latency scripted model; counts the bytes of everything it produces.

    Its texts are made in ``start`` (before a round's clock starts), so generating random
    characters is not counted as the round's time.
    """

    def __init__(self, text: ChineseText) -> None:
        self.text = text
        self.round = 0
        self.reviews_this_round = 0
        self.produced = 0
        self._texts: list[str] = []
        self._made: list[str] = []

    def make(self, rounds: int) -> None:
        """Make the texts of ``rounds`` rounds now, for a run that times many rounds as one."""
        self._made += [self.text(150, 300) for _ in range(6 * rounds)]

    def start(self, round_no: int) -> None:
        self.round, self.reviews_this_round = round_no, 0
        cite = "[KB-refund-001]" if round_no % 4 == 0 else "[KB-bank-001]"
        # drafts and summaries of one round
        self._texts = [(self._made.pop() if self._made else self.text(150, 300)) + cite for _ in range(6)]

    def chat(
        self,
        messages: Sequence[dict[str, str]],
        *,
        schema: type[BaseModel] | None = None,
        temperature: float = 0.0,
    ) -> Completion:
        parsed: BaseModel
        if schema is Triage:
            parsed = REFUND if self.round % 4 == 0 else TECH
        elif schema is Review:
            self.reviews_this_round += 1
            rejected = self.round % 3 == 0 and self.reviews_this_round == 1
            parsed = Review(passed=not rejected, problems=["语气需要更礼貌"] if rejected else [])
        else:
            out = self._texts.pop()
            self.produced += len(out.encode())
            return Completion(text=out)
        out = parsed.model_dump_json()
        self.produced += len(out.encode())
        return Completion(text=out, parsed=parsed)


def seed(url: str) -> None:
    with psycopg.connect(url) as conn, conn.transaction():
        conn.execute(
            "INSERT INTO demo.customers (id, name, email, is_vip, created_at)"
            " VALUES ('C1', '吴刚', 'wugang@example.com', true, '2025-01-01')"
        )
        conn.execute(  # an annual plan paid inside the demo's 30-day refund window, so refunds wait
            "INSERT INTO demo.subscriptions VALUES"
            " ('S1', 'C1', '专业版', '年付', 'active', '2026-10-01', '2027-10-01', 3588.00)"
        )
        conn.execute(
            "INSERT INTO demo.invoices VALUES ('INV-1', 'C1', 'S1', 3588.00, 'CNY', '2026-10-01', 'paid')"
        )
        conn.execute(
            "INSERT INTO demo.kb_articles VALUES"
            " ('KB-bank-001', '银行流水同步失败 E3001', 'bank', 'E3001 表示银行授权过期,请重新授权。', 'https://h/kb/1'),"
            " ('KB-refund-001', '退款政策', 'refund', '年付 30 天内可按比例退款,需人工审批。', 'https://h/kb/2')"
        )


def sizes(url: str) -> int:
    with psycopg.connect(url) as conn:
        return sum(
            int(conn.execute("SELECT pg_total_relation_size(%s)", (f"supportbot.{t}",)).fetchone()[0])
            for t in TABLES
        )


def logical_by_round(url: str, ticket: str) -> dict[int, int]:
    """The issue's measure: the sum of the stored column sizes of each round's rows, in every
    engine table that holds a ticket (row headers and indexes are in the physical figure)."""
    with psycopg.connect(url) as conn:

        def columns(table: str, alias: str) -> sql.Composable:
            names = [
                r[0]
                for r in conn.execute(
                    "SELECT column_name FROM information_schema.columns WHERE table_schema = 'supportbot'"
                    " AND table_name = %s",
                    (table,),
                ).fetchall()
            ]
            return sql.SQL(" + ").join(
                sql.SQL("coalesce(pg_column_size({}.{}), 0)").format(sql.Identifier(alias), sql.Identifier(n))
                for n in names
            )

        query = sql.SQL("""
            SELECT round, sum(bytes) FROM (
              SELECT t.round, {turns} AS bytes FROM supportbot.turns t WHERE t.ticket_id = %(t)s
              UNION ALL SELECT c.round, {tool_calls} FROM supportbot.tool_calls c WHERE c.ticket_id = %(t)s
              UNION ALL SELECT s.round, {steps} FROM supportbot.steps s WHERE s.ticket_id = %(t)s
              UNION ALL SELECT s.round, {checkpoints} FROM supportbot.checkpoints k
                        JOIN supportbot.steps s USING (ticket_id, seq) WHERE k.ticket_id = %(t)s
              UNION ALL SELECT a.round, {approvals} FROM supportbot.approvals a WHERE a.ticket_id = %(t)s
              UNION ALL SELECT e.round, {effects} FROM supportbot.effects e WHERE e.ticket_id = %(t)s
              UNION ALL SELECT t.round, {facts} FROM supportbot.facts f
                        JOIN supportbot.turns t ON t.ticket_id = f.ticket_id AND t.idx = f.turn
                        WHERE f.ticket_id = %(t)s
            ) x GROUP BY round ORDER BY round""").format(
            turns=columns("turns", "t"),
            tool_calls=columns("tool_calls", "c"),
            steps=columns("steps", "s"),
            checkpoints=columns("checkpoints", "k"),
            approvals=columns("approvals", "a"),
            effects=columns("effects", "e"),
            facts=columns("facts", "f"),
        )
        return {int(r): int(b) for r, b in conn.execute(query, {"t": ticket}).fetchall()}


class StepClock:
    """Time spent inside the step functions (their own work: prompts, checks, business-system
    calls), wall and this process's CPU, so the engine's share of a round (loop, leases,
    persistence) can be told apart."""

    def __init__(self) -> None:
        self.spent = 0.0
        self.cpu = 0.0
        self._originals = dict(graph.STEPS)

    def __enter__(self) -> StepClock:
        for name, fn in self._originals.items():
            graph.STEPS[name] = self._timed(fn)
        return self

    def __exit__(self, *exc: object) -> None:
        graph.STEPS.update(self._originals)

    def _timed(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        def timed(*args: Any) -> Any:
            started, cpu = time.perf_counter(), time.process_time()
            try:
                return fn(*args)
            finally:
                self.spent += time.perf_counter() - started
                self.cpu += time.process_time() - cpu

        return timed


class DatabaseClock:
    """Wall time this process spends waiting on PostgreSQL: every statement, commit and fetch of a
    synchronous psycopg connection goes through ``Connection.wait``. What remains of a round's wall
    time after its CPU and this wait is scheduling (other processes on the same cores)."""

    def __init__(self) -> None:
        self.spent = 0.0
        self._original = psycopg.Connection.wait

    def __enter__(self) -> DatabaseClock:
        original, clock = self._original, self

        def wait(conn: psycopg.Connection[Any], *args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                return original(conn, *args, **kwargs)
            finally:
                clock.spent += time.perf_counter() - started

        psycopg.Connection.wait = wait  # type: ignore[method-assign]
        return self

    def __exit__(self, *exc: object) -> None:
        psycopg.Connection.wait = self._original  # type: ignore[method-assign]


def one_ticket(url: str, rounds: int) -> dict[str, float]:
    text = ChineseText(seed=rounds)
    model = BenchModel(text)
    settings = Settings(database_url=url)
    with (
        SupportBot.open(url, llm=model, settings=settings, backend="demo") as bot,
        StepClock() as clock,
        DatabaseClock() as db,
    ):
        in_steps: list[float] = []
        steps_cpu: list[float] = []  # this process's CPU inside the step functions
        db_wait: list[float] = []  # wall time waiting on PostgreSQL, steps included
        times, produced, size_at = [], [], {}
        cpu: list[float] = []  # this process's CPU time in the round; the rest is the server and waiting
        ticket = ""
        for r in range(1, rounds + 1):
            model.start(r)
            before = model.produced
            message = text(60, 140) + (" 申请退款 10 元" if r % 4 == 0 else "")
            started, stepped, cpu_started = time.perf_counter(), clock.spent, time.process_time()
            stepped_cpu, waited = clock.cpu, db.spent
            if r == 1:
                result = bot.open_ticket("wugang@example.com", subject="银行流水", body=message)
                ticket = result.ticket_id
            else:
                result = bot.send(ticket, message)
            if result.outcome == "waiting_approval":
                result = bot.approve(ticket, approver="bench")
            times.append((time.perf_counter() - started) * 1000)
            in_steps.append((clock.spent - stepped) * 1000)
            cpu.append((time.process_time() - cpu_started) * 1000)
            steps_cpu.append((clock.cpu - stepped_cpu) * 1000)
            db_wait.append((db.spent - waited) * 1000)
            assert result.outcome == "resolved", result
            produced.append(len(message.encode()) + model.produced - before + len(result.reply.encode()))
            if r in (10, 20, rounds - 10, rounds):
                size_at[r] = sizes(url)
        logical = logical_by_round(url, ticket)
        state_cold, state_warm, hist = [], [], []
        for _ in range(30):
            bot._engine.forget(ticket)  # this process's copies of the state and of its turns
            t0 = time.perf_counter()
            bot.state(ticket)
            state_cold.append((time.perf_counter() - t0) * 1000)
            for _ in range(10):  # the warm figure is under a millisecond: more samples against noise
                t0 = time.perf_counter()
                bot.state(ticket)
                state_warm.append((time.perf_counter() - t0) * 1000)
            t0 = time.perf_counter()
            steps = bot.history(ticket)
            hist.append((time.perf_counter() - t0) * 1000)
    first, last = list(range(1, 11)), list(range(rounds - 9, rounds + 1))
    physical_first = (size_at[20] - size_at[10]) / 10 if rounds >= 30 else float("nan")
    physical_last = (size_at[rounds] - size_at[rounds - 10]) / 10 if rounds >= 30 else float("nan")
    return {
        "rounds": rounds,
        "round_ms_median": median(times),
        "round_ms_p95": p95(times),
        "engine_ms_median": median(
            [t - w for t, w in zip(times, in_steps, strict=False)]
        ),  # loop, leases, persistence
        "steps_ms_median": median(in_steps),  # the step functions' own work
        "round_cpu_ms_median": median(cpu),  # Python (and the driver) in this process, steps included
        "steps_cpu_ms_median": median(steps_cpu),  # of which in the step functions
        "engine_cpu_ms_median": median(
            [c - s for c, s in zip(cpu, steps_cpu, strict=True)]
        ),  # of which the engine's
        "database_wait_ms_median": median(db_wait),  # wall time waiting on the server, steps included
        "logical_bytes_per_round_first10": median([logical[r] for r in first]),
        "logical_bytes_per_round_last10": median([logical[r] for r in last]),
        "logical_over_new_text": sum(logical.values()) / sum(produced),
        "new_text_bytes_per_round": median(produced),
        "logical_bytes_total": sum(logical.values()),
        "physical_bytes_per_round_first": physical_first,
        "physical_bytes_per_round_last": physical_last,
        "physical_bytes_total": size_at[rounds],
        "state_ms_cold": median(state_cold),
        "state_ms_warm": median(state_warm),
        "history_ms": median(hist),
        "history_steps": len(steps),
    }


def _worker(url: str, tickets: int, rounds: int, out: multiprocessing.Queue) -> None:  # type: ignore[type-arg]
    model = BenchModel(ChineseText(seed=len(url) + tickets))
    model.make(tickets * rounds)
    messages = [model.text(60, 150) for _ in range(tickets * rounds)]
    with SupportBot.open(url, llm=model, settings=Settings(database_url=url), backend="demo") as bot:
        started = time.perf_counter()
        done = 0
        for _ in range(tickets):
            model.start(1)
            ticket = bot.open_ticket("wugang@example.com", subject="x", body=messages.pop()).ticket_id
            done += 1
            for r in range(2, rounds + 1):
                model.start(r if r % 4 else r + 1)  # throughput run: no approvals
                bot.send(ticket, messages.pop())
                done += 1
        out.put((started, time.perf_counter(), done))


def throughput(url: str, workers: int, tickets: int, rounds: int) -> dict[str, float]:
    ctx = multiprocessing.get_context("spawn")
    out = ctx.Queue()
    procs = [ctx.Process(target=_worker, args=(url, tickets // workers, rounds, out)) for _ in range(workers)]
    for p in procs:
        p.start()
    results = [out.get(timeout=600) for _ in procs]
    for p in procs:
        p.join()
    start, end = min(r[0] for r in results), max(r[1] for r in results)
    total = sum(r[2] for r in results)
    return {
        "workers": workers,
        "tickets": tickets,
        "rounds": total,
        "rounds_per_second": total / (end - start),
    }


class PerThreadModel:
    """One BenchModel per thread behind one bot: a BenchModel follows one conversation at a time."""

    def __init__(self) -> None:
        self._local = threading.local()

    def use(self, model: BenchModel) -> None:
        self._local.model = model

    def chat(self, messages: Sequence[dict[str, str]], **kw: Any) -> Completion:
        return self._local.model.chat(messages, **kw)  # type: ignore[no-any-return]


def threaded(url: str, threads: int, tickets: int, rounds: int) -> dict[str, float]:
    """Rounds/s with ``threads`` threads sharing one SupportBot at default settings (pool of 4)."""
    shared = PerThreadModel()
    done: list[int] = []

    def run(n: int) -> None:
        model = BenchModel(ChineseText(seed=n))
        model.make(tickets * rounds // threads)
        shared.use(model)
        count = 0
        for _ in range(tickets // threads):
            model.start(1)
            ticket = bot.open_ticket("wugang@example.com", subject="x", body=model.text(60, 150)).ticket_id
            count += 1
            for r in range(2, rounds + 1):
                model.start(r if r % 4 else r + 1)  # no approvals, as in the process run
                bot.send(ticket, model.text(60, 150))
                count += 1
        done.append(count)

    with SupportBot.open(url, llm=shared, settings=Settings(database_url=url), backend="demo") as bot:  # type: ignore[arg-type]
        workers = [threading.Thread(target=run, args=(n,)) for n in range(threads)]
        started = time.perf_counter()
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()
        elapsed = time.perf_counter() - started
    return {
        "threads": threads,
        "tickets": tickets,
        "rounds": sum(done),
        "rounds_per_second": sum(done) / elapsed,
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rounds", type=int, nargs="+", default=[10, 100, 500])
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--tickets", type=int, default=200)
    parser.add_argument("--threads", type=int, default=16, help="threads sharing one bot (0: skip)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    report: dict[str, object] = {}
    with fresh_database("supportbot_bench") as url:
        seed(url)
        report["insert_floor_ms"] = insert_floor(url)
        report["single_ticket"] = [one_ticket(url, n) for n in args.rounds]
        if args.workers:
            report["throughput"] = throughput(url, args.workers, args.tickets, 3)
        if args.threads:
            report["threads"] = threaded(url, args.threads, args.tickets, 3)
    if args.json:
        print(json.dumps(report, indent=2))
        return
    floor = report["insert_floor_ms"]
    print(f"single-row INSERT floor: {floor:.3f} ms (median)")
    for row in report["single_ticket"]:  # type: ignore[union-attr]
        print(f"\nN={row['rounds']}")
        for key, value in row.items():
            if key != "rounds":
                print(f"  {key:34s} {value:,.3f}" if isinstance(value, float) else f"  {key:34s} {value:,}")
        print(f"  {'round_ms_median / floor':34s} {row['round_ms_median'] / floor:.1f}x")
        print(f"  {'engine_ms_median / floor':34s} {row['engine_ms_median'] / floor:.1f}x")
    if "throughput" in report:
        t = report["throughput"]
        print(
            f"\n{t['workers']} workers x {t['tickets']} tickets: {t['rounds']} rounds, "  # type: ignore[index]
            f"{t['rounds_per_second']:.1f} rounds/s"
        )  # type: ignore[index]
    if "threads" in report:
        t = report["threads"]
        print(
            f"{t['threads']} threads sharing one bot x {t['tickets']} tickets: {t['rounds']} rounds, "  # type: ignore[index]
            f"{t['rounds_per_second']:.1f} rounds/s"
        )  # type: ignore[index]


if __name__ == "__main__":
    main()
