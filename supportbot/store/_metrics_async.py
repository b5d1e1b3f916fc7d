"""The SQL behind the Prometheus metrics (run/_metrics.py): one statement, read at each scrape."""

from __future__ import annotations

from datetime import datetime

import psycopg

from ._rows import Reading

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


async def read(conn: psycopg.AsyncConnection, *, now: datetime, since: datetime) -> Reading:
    row = await (await conn.execute(_READ, {"now": now, "since": since})).fetchone()
    assert row is not None
    return Reading(*row)


class AsyncMetricsStatements:
    """The figures behind the metrics endpoint (``store.metrics``): the statements code outside the store
    runs, each on the transaction or connection it passes."""

    read = staticmethod(read)
