"""The live schema: sql/schema.sql is current, and the stored functions read every field they are sent."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import psycopg

from supportbot import Fact, Turn
from supportbot._records import ToolCall
from supportbot.store._rows import StepRow
from supportbot.store._schema import dump_schema

SCHEMA_SQL = Path(__file__).resolve().parent.parent / "sql" / "schema.sql"

# What steps_repo.record_steps sends under each key of its batch: a record's fields plus what it adds.
BATCH_ROWS: dict[str, set[str]] = {
    "turns": {f.name for f in dataclasses.fields(Turn)},
    "tool_calls": {f.name for f in dataclasses.fields(ToolCall)},
    "facts": {f.name for f in dataclasses.fields(Fact)} | {"idx"},
    "steps": {f.name for f in dataclasses.fields(StepRow)} | {"created_at"},
    "checkpoints": {"seq", "state"},
    "approvals": {"round", "request"},
}


def test_schema_sql_is_current(database_url: str) -> None:
    """A reader of sql/schema.sql sees the schema the migrations build; regenerate it when this fails."""
    with psycopg.connect(database_url) as conn:
        live = dump_schema(conn)
    committed = SCHEMA_SQL.read_text(encoding="utf-8")
    assert committed == live, "sql/schema.sql is stale: run `python scripts/dump_schema.py` and commit it"


def _recordset_columns(definition: str) -> dict[str, set[str]]:
    """{batch key: column names} of every ``jsonb_to_recordset(p_batch -> 'key') AS x(...)``."""
    found: dict[str, set[str]] = {}
    pattern = re.compile(r"jsonb_to_recordset\(\s*p_batch\s*->\s*'(\w+)'\s*\)\s+AS\s+x\s*\(([^)]*)\)", re.I)
    for key, columns in pattern.findall(definition):
        found[key] = {c.strip().split()[0] for c in columns.split(",")}
    return found


def test_record_steps_reads_every_field_it_is_sent(database_url: str) -> None:
    """jsonb_to_recordset ignores keys it does not list, so a field added to a record but not to
    the stored function would be dropped without an error; this fails instead."""
    with psycopg.connect(database_url) as conn:
        row = conn.execute(
            "SELECT pg_get_functiondef('supportbot.record_steps(text, text, jsonb)'::regprocedure)"
        ).fetchone()
    assert row is not None
    read = _recordset_columns(row[0])
    assert set(read) == set(BATCH_ROWS)
    for key, sent in BATCH_ROWS.items():
        assert read[key] == sent, f"record_steps reads {sorted(read[key])} from {key!r}, sent {sorted(sent)}"
