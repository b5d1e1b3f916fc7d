"""The SQL behind the Prometheus metrics (run/_metrics.py): one statement, read at each scrape."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

import psycopg

# Rounds of the last hour: the tickets changed in it (tickets.updated_at is the database's time)
# and their steps written since ``since`` (the bot's clock, which writes steps).
_READ = """
WITH recent AS (
    SELECT s.step, s.update FROM supportbot.tickets t
    JOIN supportbot.steps s ON s.ticket_id = t.id
    WHERE t.updated_at >= now() - interval '1 hour' AND s.created_at >= %(since)s
)
SELECT
    (SELECT count(*) FROM supportbot.tickets WHERE work_due IS NOT NULL),
    (SELECT coalesce(extract(epoch FROM %(now)s - min(work_due)), 0) FROM supportbot.tickets
      WHERE work_due IS NOT NULL),
    (SELECT count(*) FROM supportbot.approvals WHERE decided_at IS NULL),
    (SELECT count(*) FROM supportbot.tickets WHERE status = 'escalated'),
    (SELECT count(*) FROM supportbot.tickets WHERE status = 'with_human'),
    (SELECT coalesce(jsonb_object_agg(id, jsonb_build_array(rounds, failures, running)), '{}')
      FROM supportbot.workers WHERE heartbeat >= now() - interval '5 minutes'),
    (SELECT percentile_cont(ARRAY[0.5, 0.9, 0.99])
      WITHIN GROUP (ORDER BY (update -> 'context_usage' ->> 'total')::float)
      FROM recent WHERE update ? 'context_usage'),
    (SELECT count(*) FROM recent WHERE update ? 'context_usage'),
    (SELECT coalesce(sum((update -> 'round_spend' ->> 1)::bigint), 0) FROM recent
      WHERE update ? 'round_spend'),
    (SELECT coalesce(sum((update -> 'round_spend' ->> 2)::bigint), 0) FROM recent
      WHERE update ? 'round_spend'),
    (SELECT coalesce(sum((update -> 'round_spend' ->> 3)::float), 0) FROM recent
      WHERE update ? 'round_spend'),
    (SELECT count(*) FROM recent WHERE step = 'finalize'),
    (SELECT count(*) FROM recent WHERE step = 'handoff')
"""


@dataclass(frozen=True, slots=True)
class Reading:
    queue_depth: int
    oldest_wait: float  # seconds
    approvals_waiting: int
    escalated: int
    with_human: int
    workers: dict[str, list[int]]  # worker id -> [rounds, failures, running], live ones
    context_quantiles: list[float] | None  # prompt tokens at the 0.5, 0.9 and 0.99 quantiles
    context_samples: int
    prompt_tokens: int  # of the last hour's model calls
    completion_tokens: int
    cost: float
    rounds_finished: int  # rounds that ended in the last hour (answered)
    handoffs: int  # rounds that handed off in the last hour


def read(conn: psycopg.Connection, *, now: datetime, since: datetime) -> Reading:
    row = conn.execute(_READ, {"now": now, "since": since}).fetchone()
    assert row is not None
    return Reading(*row)
