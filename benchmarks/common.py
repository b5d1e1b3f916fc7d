"""Shared pieces for the benchmarks: a fresh database, Chinese text, a zero-latency model."""

from __future__ import annotations

import os
import random
import statistics
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import psycopg
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from supportbot.store._migrate import migrate


@contextmanager
def fresh_database(name: str) -> Iterator[str]:
    """A new, migrated database on SUPPORTBOT_DATABASE_URL's server or a throwaway embedded one."""
    admin = os.environ.get("SUPPORTBOT_DATABASE_URL")
    tmp = None
    if not admin:
        from supportbot.store._embedded import embedded_url

        tmp = tempfile.TemporaryDirectory(prefix="supportbot-bench-")
        admin = embedded_url(Path(tmp.name), admin=True)
    params = conninfo_to_dict(admin)
    params["dbname"] = "postgres"
    admin = make_conninfo(**params)
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    params["dbname"] = name
    url = make_conninfo(**params)
    with psycopg.connect(url) as conn:
        migrate(conn, demo=True)
    try:
        yield url
    finally:
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))
        if tmp is not None:
            tmp.cleanup()


class ChineseText:
    """Non-repeating Chinese text: random common characters, so nothing compresses unfairly."""

    def __init__(self, seed: int = 7) -> None:
        self.rng = random.Random(seed)

    def __call__(self, low: int, high: int) -> str:
        n = self.rng.randint(low, high)
        return "".join(chr(self.rng.randint(0x4E00, 0x9FA5)) for _ in range(n))


def median(values: list[float]) -> float:
    return statistics.median(values)


def p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


def insert_floor(url: str, n: int = 300) -> float:
    """Median milliseconds of one committed single-row INSERT on this server."""
    import time

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CREATE TABLE IF NOT EXISTS bench_floor (id serial PRIMARY KEY, body text)")
        times = []
        for i in range(n):
            started = time.perf_counter()
            conn.execute("INSERT INTO bench_floor (body) VALUES (%s)", (f"row {i}",))
            times.append((time.perf_counter() - started) * 1000)
        conn.execute("DROP TABLE bench_floor")
    return median(times)
