"""Retention and metrics: the declared policy applied by the workers' sweep (never an open ticket
or a pending approval), `python -m supportbot retention`, and the Prometheus /metrics endpoints of
the console and of a worker, parsed by the Prometheus client library's own parser."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from datetime import timedelta
from pathlib import Path

import httpx
import psycopg
import pytest
from prometheus_client.parser import text_string_to_metric_families
from support.console_kit import DEMO_EMAIL, client_for, make_users, open_console, play_demo
from test_console_team import Clock

from supportbot import Settings
from supportbot.errors import ConfigError

TOKEN = "metrics-secret-4f1c"


def _families(text: str) -> dict[str, dict[tuple[tuple[str, str], ...], float]]:
    """Metric name -> {labels: value}, as Prometheus's own parser reads the exposition."""
    found: dict[str, dict[tuple[tuple[str, str], ...], float]] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            found.setdefault(sample.name, {})[tuple(sorted(sample.labels.items()))] = sample.value
    return found


def test_retention_removes_only_what_the_policy_no_longer_keeps(demo_url: str, tmp_path: Path) -> None:
    clock = Clock()
    settings = Settings(
        database_url=demo_url, retention_steps_days=30, retention_summaries_days=30, retention_facts_days=180,
        retention_audit_days=0,
    )  # fmt: skip
    with open_console(demo_url, tmp_path, settings=settings, clock=clock) as (_console, bot):
        played = play_demo(bot)  # a refund waiting and a hand-off: never touched
        answered = bot.open_ticket(DEMO_EMAIL, body="发票 INV-C0001-20261003 的抬头写错了,能改成公司名吗?")
        assert answered.outcome == "resolved"
        state = bot.state(answered.ticket_id)
        assert bot.retention() == bot.retention(apply=True)  # nothing due yet
        assert len(bot.history(answered.ticket_id)) > 1
        _quiet_since(demo_url, clock() - timedelta(days=40))  # every ticket, the open ones too
        due = bot.retention()
        assert (due.steps, due.audit) == (1, 0)  # the resolved ticket only
        done = bot.retention(apply=True)
        assert done.steps == 1
        assert len(bot.history(played.refund_ticket)) > 1 and len(bot.history(played.handoff_ticket)) > 1
        assert len(bot.history(answered.ticket_id)) == 1
        after = bot.state(answered.ticket_id)
        assert after.turns == state.turns and after.reply == state.reply  # state() as it was
        facts_before = len(after.facts)
        _quiet_since(demo_url, clock() - timedelta(days=200))
        assert bot.retention().facts == facts_before > 0
        bot.retention(apply=True)
        assert (
            bot.state(answered.ticket_id).facts == () and bot.state(answered.ticket_id).turns == state.turns
        )
        assert bot.state(played.refund_ticket).facts  # the waiting refund keeps its memory
        assert bot.pending_approvals()[0].ticket_id == played.refund_ticket


def _quiet_since(url: str, moment: object) -> None:
    """Make every ticket look untouched since ``moment`` (the ticket rows and their steps)."""
    with psycopg.connect(url) as conn:
        conn.execute("UPDATE supportbot.tickets SET updated_at = %s", (moment,))
        conn.execute("UPDATE supportbot.steps SET created_at = %s", (moment,))


def test_old_audit_rows_go_only_through_the_retention_sweep(demo_url: str, tmp_path: Path) -> None:
    settings = Settings(database_url=demo_url, retention_audit_days=30)
    with open_console(demo_url, tmp_path, settings=settings) as (_console, bot):
        played = play_demo(bot)
        bot.take_over(played.handoff_ticket, agent="li")
        bot.reply_as_human(played.handoff_ticket, "您好", agent="li")
        with psycopg.connect(demo_url) as conn:
            # Backdating is itself refused by the trigger; as the table owner, with it switched off:
            conn.execute("ALTER TABLE supportbot.audit DISABLE TRIGGER audit_append_only")
            conn.execute(
                "UPDATE supportbot.audit SET at = at - interval '31 days' WHERE action = 'take_over'"
            )
            conn.execute("ALTER TABLE supportbot.audit ENABLE TRIGGER audit_append_only")
        with psycopg.connect(demo_url) as conn, pytest.raises(psycopg.DatabaseError, match="append-only"):
            conn.execute("DELETE FROM supportbot.audit WHERE action = 'take_over'")  # not a sweep
        assert bot.retention().audit == 1
        assert bot.retention(apply=True).audit == 1
        assert [e.action for e in bot.audit(played.handoff_ticket)] == ["human_reply"]


def test_the_policy_must_prune_steps_before_summaries_and_facts() -> None:
    with pytest.raises(ConfigError):
        Settings(retention_steps_days=60, retention_summaries_days=30)
    with pytest.raises(ConfigError):
        Settings(retention_steps_days=0, retention_facts_days=180)
    assert Settings(retention_steps_days=0, retention_summaries_days=0, retention_facts_days=0)


def test_the_retention_command_shows_the_policy_and_what_is_due(demo_url: str) -> None:
    from test_cli import ok

    shown = ok(demo_url, "retention")
    assert "步骤日志和检查点(缩成最终状态):30 天" in shown and "审计日志:永久保留" in shown
    assert "现在到期(未清理)" in shown
    assert "本次已清理" in ok(demo_url, "retention", "--apply")


def test_the_console_serves_metrics_to_a_scraper_with_the_token(demo_url: str, tmp_path: Path) -> None:
    clock = Clock()
    settings = Settings(database_url=demo_url, metrics_token=TOKEN)
    with open_console(demo_url, tmp_path, settings=settings, clock=clock) as (console, bot):
        play_demo(bot)
        bot.submit(
            bot.open_ticket(DEMO_EMAIL, body="你好", wait=False).ticket_id, "还在吗"
        ) if False else None
        queued = bot.open_ticket(DEMO_EMAIL, body="招商银行流水同步失败 E3001", wait=False)
        console.clock = clock
        client = client_for(console, make_users(tmp_path))
        assert client.get("/metrics").status_code == 401
        assert client.get("/metrics", headers={"Authorization": "Bearer wrong"}).status_code == 401
        scraped = client.get("/metrics", headers={"Authorization": f"Bearer {TOKEN}"})
        assert scraped.status_code == 200 and scraped.headers["content-type"].startswith("text/plain")
        m = _families(scraped.text)
        assert m["supportbot_queue_depth"][()] == 1 and m["supportbot_queue_oldest_wait_seconds"][()] >= 0
        assert m["supportbot_approvals_waiting"][()] == 1
        assert m["supportbot_tickets_with_people"][(("status", "escalated"),)] == 1
        assert m["supportbot_rounds_last_hour"][(("ended", "answered"),)] >= 1
        assert m["supportbot_rounds_last_hour"][(("ended", "handoff"),)] == 1
        assert m["supportbot_context_usage_ratio_count"][()] >= 2
        median = m["supportbot_context_usage_ratio"][(("quantile", "0.5"),)]
        assert 0 < median < 1
        assert m["supportbot_model_tokens_last_hour"][(("kind", "prompt"),)] > 0
        assert queued.ticket_id
    with open_console(demo_url, tmp_path) as (console, _bot):  # no token: no endpoint
        assert client_for(console, make_users(tmp_path)).get("/metrics").status_code == 404


def test_a_worker_serves_metrics_with_its_own_counters(demo_url: str) -> None:
    with open_console(demo_url, Path("/nonexistent")) as (_console, bot):
        queued = bot.open_ticket(DEMO_EMAIL, body="招商银行流水同步失败 E3001", wait=False)
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("SUPPORTBOT_")},
        "SUPPORTBOT_DATABASE_URL": demo_url, "SUPPORTBOT_BACKEND": "demo", "SUPPORTBOT_METRICS_TOKEN": TOKEN,
        "SUPPORTBOT_LANG": "en",
    }  # fmt: skip
    worker = subprocess.Popen(
        [sys.executable, "-m", "supportbot", "worker", "--threads", "2", "--metrics-port", "0"],
        env=env, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert worker.stderr is not None
        line = worker.stderr.readline()
        while "metrics: " not in line:
            assert line, "the worker ended before serving metrics"
            line = worker.stderr.readline()
        url = line.split("metrics: ", 1)[1].strip()
        assert httpx.get(url).status_code == 401
        deadline = time.monotonic() + 30
        while True:  # the round, then the heartbeat that records it (at most a second apart)
            m = _families(httpx.get(url, headers={"Authorization": f"Bearer {TOKEN}"}).text)
            beat = sum(m.get("supportbot_worker_rounds_total", {}).values())
            if beat >= 1 or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        assert m["supportbot_process_rounds_total"][()] == 1, queued  # this worker's own counter
        assert beat == 1 and m["supportbot_queue_depth"][()] == 0
    finally:
        worker.terminate()
        worker.wait(timeout=30)
        if worker.stderr:
            worker.stderr.close()


def test_a_worker_refuses_metrics_without_a_token(demo_url: str) -> None:
    from test_cli import run

    refused = run(demo_url, "worker", "--metrics-port", "0")
    assert refused.returncode != 0 and "SUPPORTBOT_METRICS_TOKEN" in refused.stderr


def test_the_workers_sweep_applies_the_policy(demo_url: str, tmp_path: Path) -> None:
    import threading

    clock = Clock()
    settings = Settings(database_url=demo_url, retention_sweep_seconds=0.3, worker_sweep_seconds=0.1)
    with open_console(demo_url, tmp_path, settings=settings, clock=clock) as (_console, bot):
        answered = bot.open_ticket(DEMO_EMAIL, body="发票抬头写错了,能改成公司名吗?").ticket_id
        assert len(bot.history(answered)) > 1
        _quiet_since(demo_url, clock() - timedelta(days=40))
        stop = threading.Event()
        working = threading.Thread(target=lambda: bot.work(threads=1, stop=stop))
        working.start()
        try:
            deadline = time.monotonic() + 20
            while len(bot.history(answered)) > 1 and time.monotonic() < deadline:
                time.sleep(0.1)
        finally:
            stop.set()
            working.join(timeout=30)
        assert len(bot.history(answered)) == 1
        assert bot.pruned(answered) is not None
