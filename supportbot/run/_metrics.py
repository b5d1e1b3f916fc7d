# Generated from _metrics_async.py by scripts/async_to_sync.py: edit that file and run the script.
"""Prometheus metrics: what an operations team watches, in the text exposition format.

Served at ``/metrics`` by the console and by a worker started with ``--metrics-port``, behind a
bearer token (``Settings.metrics_token``). Everything but the process's own counters is read from
the database at each scrape, so every process reports the same figures: the queue (depth, the
oldest wait), approvals waiting, tickets with people, the live workers' counters, and the last
hour's rounds: how many ended or handed off, prompt sizes against the context window (quantiles),
and model tokens and cost. A worker adds its own counters since it started.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timedelta

from ..config import Settings
from ..store._rows import Reading
from ..store._store import Store
from ._values import WorkerStats

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
_QUANTILES = ("0.5", "0.9", "0.99")


def exposition(store: Store, settings: Settings, now: datetime, *, worker: WorkerStats | None = None) -> str:
    """The metrics as Prometheus text; ``worker``: this process's own counters, if it is one."""
    with store.connection() as conn:
        r = store.metrics.read(conn, now=now, since=now - timedelta(hours=1))
    return "".join(_lines(r, settings, worker))


def _lines(r: Reading, settings: Settings, worker: WorkerStats | None) -> Iterator[str]:
    yield from _metric(
        "supportbot_queue_depth", "gauge", "Tickets with messages waiting for a round.", r.queue_depth
    )
    yield from _metric(
        "supportbot_queue_oldest_wait_seconds",
        "gauge",
        "How long the oldest waiting ticket has waited.",
        r.oldest_wait,
    )
    yield from _metric(
        "supportbot_approvals_waiting",
        "gauge",
        "Refund requests waiting for a person's decision.",
        r.approvals_waiting,
    )
    yield from _metric(
        "supportbot_tickets_with_people",
        "gauge",
        "Tickets handed off (escalated) or owned by a person (with_human).",
        {'status="escalated"': r.escalated, 'status="with_human"': r.with_human},
    )
    workers = sorted(r.workers.items())
    for name, index, help_text in (
        ("supportbot_worker_rounds_total", 0, "Rounds each live worker ran since it started."),
        ("supportbot_worker_failures_total", 1, "Failed rounds of each live worker since it started."),
    ):
        kind = "counter"
        yield from _metric(name, kind, help_text, {f'worker="{_label(w)}"': v[index] for w, v in workers})
    yield from _metric(
        "supportbot_worker_running", "gauge", "Tickets each live worker holds.",
        {f'worker="{_label(w)}"': v[2] for w, v in workers},
    )  # fmt: skip
    yield from _metric(
        "supportbot_rounds_last_hour",
        "gauge",
        "Rounds of the last hour, by how they ended.",
        {'ended="answered"': r.rounds_finished, 'ended="handoff"': r.handoffs},
    )
    name = "supportbot_context_usage_ratio"
    yield f"# HELP {name} Prompt size against the context window, last hour's drafts.\n"
    yield f"# TYPE {name} summary\n"
    for q, tokens in zip(_QUANTILES, r.context_quantiles or [], strict=False):
        yield f'{name}{{quantile="{q}"}} {_number(tokens / settings.context_window)}\n'
    yield f"supportbot_context_usage_ratio_count {r.context_samples}\n"
    yield from _metric(
        "supportbot_model_tokens_last_hour",
        "gauge",
        "Model tokens of the last hour's rounds.",
        {'kind="prompt"': r.prompt_tokens, 'kind="completion"': r.completion_tokens},
    )
    yield from _metric(
        "supportbot_model_cost_last_hour", "gauge", "Model cost of the last hour's rounds.", r.cost
    )
    if worker is not None:
        for name, value, help_text in (
            ("supportbot_process_rounds_total", worker.rounds, "Rounds this worker process ran."),
            ("supportbot_process_failures_total", worker.failures, "Failed rounds of this worker process."),
            (
                "supportbot_process_handoffs_total",
                worker.handed_off,
                "Tickets this process handed to a person.",
            ),
        ):
            yield from _metric(name, "counter", help_text, value)


def _metric(name: str, kind: str, help_text: str, values: float | dict[str, float]) -> Iterator[str]:
    yield f"# HELP {name} {help_text}\n# TYPE {name} {kind}\n"
    if isinstance(values, dict):
        for labels, value in values.items():
            yield f"{name}{{{labels}}} {_number(value)}\n"
    else:
        yield f"{name} {_number(values)}\n"


def _number(value: float) -> str:
    return repr(float(value)) if isinstance(value, float) else str(value)


def _label(value: str) -> str:
    """A label value as the format writes it: backslash, quote and newline escaped."""
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
