"""Migrations that reshape stored data keep every state exactly as it was."""

from __future__ import annotations

import dataclasses

import psycopg
import pytest
from support.fakes import ScriptedLLM, scalar, seed_business

from supportbot import Settings, SupportBot, SupportState
from supportbot.store._migrate import migrate
from supportbot.store._migrations import functions


def _open(database_url: str, llm: ScriptedLLM | None = None) -> SupportBot:
    return SupportBot.open(
        database_url,
        llm=llm or ScriptedLLM(),
        settings=Settings(database_url=database_url),
        backend="demo",
    )


def _a_ticket(
    database_url: str, llm: ScriptedLLM, subject: str, *messages: str
) -> tuple[str, dict[int, SupportState]]:
    """Seed the business data, run one ticket through ``messages``: its id and the state after each step."""
    with psycopg.connect(database_url) as conn:
        seed_business(conn)
    with _open(database_url, llm) as bot:
        ticket = bot.open_ticket("wugang@example.com", subject=subject, body=messages[0]).ticket_id
        for message in messages[1:]:
            bot.send(ticket, message)
        return ticket, {record.seq: bot.state_at(ticket, record.seq) for record in bot.history(ticket)}


LEGACY_LAYOUT = """
WITH ledger AS (
    SELECT ticket_id, jsonb_agg(jsonb_build_object('kind', kind, 'value', value, 'key', key, 'turn', turn)
                                ORDER BY idx) AS facts, array_agg(idx ORDER BY idx) AS idxs
    FROM supportbot.facts GROUP BY ticket_id)
UPDATE supportbot.steps s SET update = s.update || jsonb_build_object('facts',
    (SELECT coalesce(jsonb_agg(f ORDER BY o), '[]')
     FROM ledger l, jsonb_array_elements(l.facts) WITH ORDINALITY e(f, o)
     WHERE l.ticket_id = s.ticket_id AND o <= s.fact_count))
WHERE s.fact_count <> coalesce((SELECT p.fact_count FROM supportbot.steps p
                                WHERE p.ticket_id = s.ticket_id AND p.seq = s.seq - 1), 0);
UPDATE supportbot.checkpoints c SET state = c.state || jsonb_build_object('facts',
    (SELECT coalesce(jsonb_agg(jsonb_build_object('kind', kind, 'value', value, 'key', key, 'turn', turn)
                               ORDER BY idx), '[]')
     FROM supportbot.facts f, supportbot.steps s
     WHERE f.ticket_id = c.ticket_id AND s.ticket_id = c.ticket_id AND s.seq = c.seq
       AND f.idx < s.fact_count));
DROP TABLE supportbot.facts;
ALTER TABLE supportbot.steps DROP COLUMN fact_count;
DELETE FROM supportbot.schema_migrations WHERE version IN (4, 9);
"""


def test_004_moves_pinned_facts_into_their_own_log_without_changing_any_state(database_url: str) -> None:
    ticket, before = _a_ticket(
        database_url,
        ScriptedLLM(),
        "扣款",
        "账单 INV-2026-0415 多扣了 ¥128.00",
        "错误码 E3001,希望到期前提醒我",
        "还有订单号 B20260915001",
    )
    seqs = list(before)
    assert len(before[seqs[-1]].facts) >= 4

    with psycopg.connect(database_url, autocommit=True) as conn:
        record_steps = _definition(conn, "supportbot.record_steps(text, text, jsonb)")
        conn.execute(LEGACY_LAYOUT)
        assert scalar(conn, "SELECT count(*) FROM supportbot.checkpoints WHERE state ? 'facts'") > 0
        applied = migrate(conn)
        assert [m.version for m in applied] == [4, 9]  # 009 extends the table 004 makes
        leftover = scalar(conn, "SELECT count(*) FROM supportbot.steps WHERE update ? 'facts'")
        assert leftover == 0
        # 009 ran again with its own, older record_steps(); the function's file replaced it after.
        assert _definition(conn, "supportbot.record_steps(text, text, jsonb)") == record_steps

    # The legacy layout held kind, value, key and turn; the role comes back from the turns (009).
    before = {seq: _without_subjects(state) for seq, state in before.items()}
    with _open(database_url) as bot:
        assert {seq: bot.state_at(ticket, seq) for seq in seqs} == before
        assert bot.state(ticket) == before[seqs[-1]]


def _without_subjects(state: SupportState) -> SupportState:
    facts = tuple(dataclasses.replace(f, subject="", supersedes=None) for f in state.facts)
    return dataclasses.replace(state, facts=facts)


def test_009_keeps_subjects_roles_and_supersession(database_url: str) -> None:
    ticket, before = _a_ticket(
        database_url,
        ScriptedLLM(),
        "升级费",
        "升级费是 1680 元,还没有收到退款",
        "不好意思,升级费应该是 1860 元。退款我已经收到了",
    )
    facts = before[max(before)].facts
    corrected = [f for f in facts if f.supersedes is not None]
    assert {(f.kind, f.key, facts[f.supersedes].key) for f in facts if f.supersedes is not None} == {
        ("amount", "CNY 1860.00", "CNY 1680.00"),
        ("status", "收到退款=是", "收到退款=否"),
    }
    assert {f.role for f in corrected} == {"customer"} and {f.role for f in facts} <= {"customer", "agent"}
    with _open(database_url) as bot:
        assert bot.state(ticket).facts == facts
    with psycopg.connect(database_url) as conn, pytest.raises(psycopg.errors.CheckViolation):
        conn.execute(
            "INSERT INTO supportbot.facts (ticket_id, idx, kind, value, key, turn, supersedes)"
            " VALUES (%s, 99, 'amount', '1 元', 'CNY 1.00', 0, 99)",
            (ticket,),
        )


# Session 2's layout: the reply stored as a field by the step that ended the round, and each
# step's round_spend the round's running total.
RUNNING_TOTALS = """
UPDATE supportbot.steps s SET update = s.update || jsonb_build_object('reply', t.content)
FROM supportbot.turns t
WHERE s.step IN ('finalize', 'handoff') AND t.ticket_id = s.ticket_id AND t.idx = s.turn_count - 1;
WITH totals AS (
    SELECT ticket_id, seq,
           sum((update -> 'round_spend' ->> 0)::integer) OVER w AS calls,
           sum((update -> 'round_spend' ->> 1)::integer) OVER w AS prompt_tokens,
           sum((update -> 'round_spend' ->> 2)::integer) OVER w AS completion_tokens,
           sum((update -> 'round_spend' ->> 3)::double precision) OVER w AS cost
    FROM supportbot.steps WHERE update ? 'round_spend'
    WINDOW w AS (PARTITION BY ticket_id, round ORDER BY seq))
UPDATE supportbot.steps s SET update = jsonb_set(s.update, '{round_spend}', jsonb_build_object(
    'calls', t.calls, 'prompt_tokens', t.prompt_tokens,
    'completion_tokens', t.completion_tokens, 'cost', t.cost))
FROM totals t WHERE s.ticket_id = t.ticket_id AND s.seq = t.seq;
DELETE FROM supportbot.schema_migrations WHERE version = 6;
"""


def test_006_keeps_each_step_s_own_spend_and_derives_the_reply(database_url: str) -> None:
    ticket, before = _a_ticket(
        database_url, ScriptedLLM(cost=0.25), "银行流水", "银行流水同步失败,提示 E3001", "重新授权了还是不行"
    )
    seqs = list(before)
    assert before[seqs[-1]].reply and before[seqs[-1]].round_spend.calls >= 2

    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute(RUNNING_TOTALS)
        assert scalar(conn, "SELECT count(*) FROM supportbot.steps WHERE update ? 'reply'") == 2
        assert [m.version for m in migrate(conn)] == [6]
        assert (
            scalar(
                conn,
                "SELECT count(*) FROM supportbot.steps WHERE update ? 'reply'"
                " OR jsonb_typeof(update -> 'round_spend') = 'object'",
            )
            == 0
        )

    with _open(database_url) as bot:
        after = {seq: bot.state_at(ticket, seq) for seq in seqs}
    for seq in seqs:  # float sums may differ in the last bit
        assert after[seq].round_spend.cost == pytest.approx(before[seq].round_spend.cost)
        assert after[seq].cost == pytest.approx(before[seq].cost)
        same = dataclasses.replace(after[seq], round_spend=before[seq].round_spend, cost=before[seq].cost)
        assert same == before[seq], seq


def test_007_gives_each_ticket_its_latest_step_and_008_keeps_it_current(database_url: str) -> None:
    ticket, _ = _a_ticket(database_url, ScriptedLLM(), "银行流水", "银行流水同步失败,提示 E3001")
    with _open(database_url) as bot:
        bot.fork(ticket, 3)
    check = (
        "SELECT count(*) FROM supportbot.tickets t WHERE t.last_seq IS DISTINCT FROM"
        " (SELECT max(seq) FROM supportbot.steps s WHERE s.ticket_id = t.id)"
    )
    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute("ALTER TABLE supportbot.tickets DROP COLUMN last_seq")  # as before 007
        conn.execute("DELETE FROM supportbot.schema_migrations WHERE version IN (7, 8)")
        assert [m.version for m in migrate(conn)] == [7, 8]
        assert scalar(conn, check) == 0
        assert scalar(conn, "SELECT count(*) FROM pg_trigger WHERE tgname = 'steps_last_seq'") == 0
    with _open(database_url) as bot:
        bot.send(ticket, "重新授权了还是不行")
        forked = bot.fork(ticket, 5)
        bot.send(forked, "换一个问题")
    with psycopg.connect(database_url) as conn:
        assert scalar(conn, check) == 0
        assert scalar(conn, "SELECT count(*) FROM supportbot.tickets") == 3


def _definition(conn: psycopg.Connection, function: str) -> str:
    row = conn.execute("SELECT pg_get_functiondef(%s::regprocedure)", (function,)).fetchone()
    assert row is not None
    return str(row[0])


def test_a_stored_function_is_applied_again_when_its_file_changes_and_only_then(database_url: str) -> None:
    """sql/functions/ holds each function's one definition; the migrator re-runs a file whose text
    differs from the one it last applied (its checksum), so a change needs no copy in a migration."""
    record_steps = "supportbot.record_steps(text, text, jsonb)"
    with psycopg.connect(database_url) as conn:
        current = _definition(conn, record_steps)
        applied: dict[str, str] = dict(
            conn.execute("SELECT name, checksum FROM supportbot.schema_functions").fetchall()
        )
        assert set(applied) == {f.name for f in functions()}  # the template database has the demo
        assert applied["record_steps"] == next(f for f in functions() if f.name == "record_steps").checksum()
        # Someone's hand edit, recorded as applied: nothing changed in the file, so it stays.
        conn.execute(current.replace("RETURN v_turn_count;", "RETURN v_turn_count + 0;"))
        conn.commit()
        assert migrate(conn) == []
        assert "v_turn_count + 0" in _definition(conn, record_steps)
        # The file's text differs from what was applied last (as after an upgrade): it runs again.
        conn.execute("UPDATE supportbot.schema_functions SET checksum = 'older' WHERE name = 'record_steps'")
        conn.commit()
        assert migrate(conn) == []
        assert _definition(conn, record_steps) == current
        (checksum,) = conn.execute(
            "SELECT checksum FROM supportbot.schema_functions WHERE name = 'record_steps'"
        ).fetchone() or ("",)
        assert checksum == applied["record_steps"]
