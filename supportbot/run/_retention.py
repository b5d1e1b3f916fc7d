# Generated from _retention_async.py by scripts/async_to_sync.py: edit that file and run the script.
"""Retention: how long each kind of memory of a closed ticket is kept, applied by the workers.

The policy is declared in the settings (``Settings.retention_*_days``; 0 keeps a kind for ever):

* ``steps``: the step log and checkpoints of a resolved ticket quiet that long shrink to its final
  state (as ``prune(keep="final")``): ``state()`` is unchanged, ``history()`` keeps the last step.
* ``summaries``: the conversation summary in that final state is emptied (the turns, the
  ticket's transcript, stay).
* ``facts``: the pinned facts are deleted.
* ``audit``: audit rows older than that are deleted (the table refuses any other deletion).

Only resolved tickets qualify, and only when no worker holds them, no approval waits and nothing
happened since the cutoff: an open ticket, a hand-off or a pending approval is never touched. A
summary or facts go only once the step log is pruned, so their retention cannot be shorter than
the steps' (Settings checks it). Each sweep handles at most ``BATCH`` tickets per kind, every
``Settings.retention_sweep_seconds`` in every worker; sweeps running at once share the work
(every statement skips rows another holds).
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta

from ..store._retention import BATCH
from ..store._store import Store
from ._values import RetentionPolicy, RetentionReport

log = logging.getLogger(__name__)


def due(store: Store, policy: RetentionPolicy, now: datetime) -> RetentionReport:
    """How much a sweep at ``now`` would remove, without removing anything."""
    steps, summaries, facts, audit = store.retention_due(
        steps_days=policy.steps_days,
        summaries_days=policy.summaries_days,
        facts_days=policy.facts_days,
        audit_days=policy.audit_days,
        now=now,
    )
    return RetentionReport(steps=steps, summaries=summaries, facts=facts, audit=audit)


def apply(store: Store, policy: RetentionPolicy, now: datetime) -> RetentionReport:
    """Remove what the policy no longer keeps (at most ``BATCH`` tickets per kind). The caller
    drops its cached copies of ``tickets``: their seq did not change, so nothing else tells it."""
    changed: set[str] = set()
    if policy.steps_days:
        cutoff = now - timedelta(days=policy.steps_days)
        pruned = store.prune_closed(closed_before=cutoff, final=True, statuses=("resolved",), limit=BATCH)
        changed.update(pruned.tickets)
    steps = len(changed)
    summaries, facts, audit = store.retention_remove(
        summaries_days=policy.summaries_days,
        facts_days=policy.facts_days,
        audit_days=policy.audit_days,
        now=now,
        changed=changed,
    )
    report = RetentionReport(steps, summaries, facts, audit, tuple(sorted(changed)))
    if any((steps, summaries, facts, audit)):
        log.info("retention: %s", report)
    return report
