"""The SQL of a ticket's step records and checkpoints (``supportbot.steps``,
``supportbot.checkpoints``): a batch of records written in one statement, what a state is rebuilt
from, the history, and the copy a fork starts from.

Each function takes a connection; callers own transactions.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from datetime import datetime
from typing import Any

import psycopg
from psycopg.rows import class_row
from pydantic_core import to_json

from ._failures import no_ticket
from ._rows import EffectRecord, StepRecord, StepRow, StepWrite, TicketRow
from ._tickets_async import TICKET_COLUMNS


async def record_steps(
    conn: psycopg.AsyncConnection,
    ticket_id: str,
    owner: str,
    writes: Sequence[StepWrite],
    *,
    effects: Sequence[EffectRecord] = (),
    release: bool = False,
    known: int | None = None,
) -> psycopg.AsyncCursor:
    """Write step records in one statement, fenced by the lease (sql/015_effects_with_steps.sql,
    whose function is the live one: see sql/schema.sql).

    ``effects``: the records of the side effects the transaction ran (deps.Effects.records).
    With ``release`` the same statement frees the lease; ``released`` reads the returned cursor
    (after the commit) for the ticket's turn count. ``known``: the turns the
    releasing round knows of; the ticket leaves the work queue unless more were stored.
    """
    batch: dict[str, Any] = {
        "turns": [],
        "tool_calls": [],
        "facts": [],
        "steps": [],
        "checkpoints": [],
        "approvals": [],
        "effects": effects,
        "release": release,
        "known": known,
    }
    # Shallow field dicts, not dataclasses.asdict: that deep-copies every update and result first.
    for w in writes:
        batch["turns"] += [_fields(t) for t in w.turns]
        batch["tool_calls"] += [_fields(c) for c in w.tool_calls]
        batch["facts"] += [{**_fields(f), "idx": w.facts_start + i} for i, f in enumerate(w.facts)]
        batch["steps"].append({**_fields(w.row), "created_at": w.created_at})
        if w.checkpoint is not None:
            batch["checkpoints"].append({"seq": w.row.seq, "state": w.checkpoint})
        if w.status is not None:
            batch["status"] = w.status
        if w.approval is not None:
            batch["approvals"].append({"round": w.row.round, "request": w.approval})
    # One pass to UTF-8 JSON; json.dumps would \u-escape Chinese text, doubling it on the wire.
    return await conn.execute(
        "SELECT supportbot.record_steps(%s, %s, %s::text::jsonb)", (ticket_id, owner, to_json(batch).decode())
    )


def _fields(obj: Any) -> dict[str, Any]:
    return {name: getattr(obj, name) for name in _field_names(type(obj))}


def _field_names(cls: type) -> tuple[str, ...]:
    names = _FIELD_NAMES.get(cls)
    if names is None:  # once per record class (a race only computes it twice)
        names = _FIELD_NAMES[cls] = tuple(f.name for f in dataclasses.fields(cls))
    return names


_FIELD_NAMES: dict[type, tuple[str, ...]] = {}


async def make_durable(conn: psycopg.AsyncConnection) -> None:
    """Make the open transaction wait for the WAL flush at commit, whatever it started with."""
    await conn.execute("SET LOCAL synchronous_commit = on")


# -- reading a ticket's steps and checkpoints --------------------------------------------------

_CHECKPOINT_SEQ = (
    "SELECT max(seq) FROM supportbot.checkpoints WHERE ticket_id = %(t)s"
    " AND (%(at)s::int IS NULL OR seq <= %(at)s)"
)


async def read_state_rows(
    conn: psycopg.AsyncConnection, ticket_id: str, at: int | None = None
) -> tuple[TicketRow, tuple[int, dict[str, Any]] | None, list[StepRow]]:
    """What a state at step ``at`` (default: the latest) is rebuilt from, in one round trip: the
    ticket row, its latest checkpoint up to ``at``, and the step rows from that checkpoint's on."""
    params = {"t": ticket_id, "at": at}
    async with conn.pipeline():
        ticket = await conn.cursor(row_factory=class_row(TicketRow)).execute(
            f"SELECT {TICKET_COLUMNS} FROM supportbot.tickets WHERE id = %(t)s", params
        )
        checkpoint = await conn.cursor().execute(
            "SELECT seq, state FROM supportbot.checkpoints WHERE ticket_id = %(t)s AND seq = "
            f"({_CHECKPOINT_SEQ})",
            params,
        )
        steps = await conn.cursor(row_factory=class_row(StepRow)).execute(
            "SELECT seq, round, step, next_step, turn_count, tool_call_count, update, fact_count FROM "
            "supportbot.steps"
            f" WHERE ticket_id = %(t)s AND seq >= coalesce(({_CHECKPOINT_SEQ}), 1)"
            " AND (%(at)s::int IS NULL OR seq <= %(at)s) ORDER BY seq",
            params,
        )
    row = await ticket.fetchone()
    if row is None:
        raise no_ticket(ticket_id)
    base = await checkpoint.fetchone()
    return row, None if base is None else (int(base[0]), base[1]), await steps.fetchall()


async def pruned_before(conn: psycopg.AsyncConnection, ticket_id: str) -> tuple[int, datetime] | None:
    """(the first step prune kept, when it last ran) for a pruned ticket; None if never pruned."""
    row = await (
        await conn.execute(
            "SELECT max(kept_from), max(pruned_at) FROM supportbot.prunes WHERE ticket_id = %s", (ticket_id,)
        )
    ).fetchone()
    return None if row is None or row[0] is None else (int(row[0]), row[1])


async def history(conn: psycopg.AsyncConnection, ticket_id: str) -> list[StepRecord]:
    return await (
        await conn.cursor(row_factory=class_row(StepRecord)).execute(
            "SELECT seq, round, step, next_step, created_at FROM supportbot.steps WHERE ticket_id = %s "
            "ORDER BY seq",
            (ticket_id,),
        )
    ).fetchall()


async def ticket_round(conn: psycopg.AsyncConnection, ticket_id: str) -> int:
    """The round of the ticket's latest step (0 before any)."""
    row = await (
        await conn.execute(
            "SELECT round FROM supportbot.steps WHERE ticket_id = %s ORDER BY seq DESC LIMIT 1", (ticket_id,)
        )
    ).fetchone()
    return 0 if row is None else int(row[0])


async def round_of_message(conn: psycopg.AsyncConnection, ticket_id: str, idx: int) -> int | None:
    """The round that took up the customer turn at ``idx``, if one has.

    A round's start record says how far it took turns up; so does its checkpoint (``handled_upto``
    is in the state), which is what is left of the round where prune removed the start record.
    """
    row = await (
        await conn.execute(
            "SELECT round FROM ("
            " SELECT seq, round FROM supportbot.steps WHERE ticket_id = %(t)s AND step = 'start_round'"
            "  AND (update ->> 'handled_upto')::int > %(i)s"
            " UNION ALL SELECT k.seq, s.round FROM supportbot.checkpoints k JOIN supportbot.steps s USING "
            "(ticket_id, seq)"
            "  WHERE k.ticket_id = %(t)s AND (k.state ->> 'handled_upto')::int > %(i)s"
            ") taken ORDER BY seq LIMIT 1",
            {"t": ticket_id, "i": idx},
        )
    ).fetchone()
    return None if row is None else int(row[0])


async def last_seq_of_round(conn: psycopg.AsyncConnection, ticket_id: str, round_: int) -> int | None:
    row = await (
        await conn.execute(
            "SELECT max(seq) FROM supportbot.steps WHERE ticket_id = %s AND round = %s", (ticket_id, round_)
        )
    ).fetchone()
    return None if row is None or row[0] is None else int(row[0])


# -- forks -----------------------------------------------------------------------------------


async def copy_history(
    conn: psycopg.AsyncConnection,
    source: str,
    target: str,
    *,
    seq: int,
    turn_count: int,
    tool_call_count: int,
    fact_count: int,
    status: str,
    human_agent: str | None = None,
) -> None:
    """Give ``target`` the turns, tool calls, steps and checkpoints ``source`` had after step ``seq``."""
    await conn.execute(
        "INSERT INTO supportbot.turns"
        " (ticket_id, idx, round, role, content, message_id, tokens, created_at, author)"
        " SELECT %s, idx, round, role, content, message_id, tokens, created_at, author FROM supportbot.turns"
        " WHERE ticket_id = %s AND idx < %s",
        (target, source, turn_count),
    )
    await conn.execute(
        "INSERT INTO supportbot.tool_calls (ticket_id, idx, round, step, name, args, result, error, "
        "duration_ms)"
        " SELECT %s, idx, round, step, name, args, result, error, duration_ms FROM supportbot.tool_calls"
        " WHERE ticket_id = %s AND idx < %s",
        (target, source, tool_call_count),
    )
    await conn.execute(
        "INSERT INTO supportbot.facts (ticket_id, idx, kind, value, key, turn, subject, role, supersedes)"
        " SELECT %s, idx, kind, value, key, turn, subject, role, supersedes FROM supportbot.facts"
        " WHERE ticket_id = %s AND idx < %s",
        (target, source, fact_count),
    )
    await conn.execute(
        "INSERT INTO supportbot.steps (ticket_id, seq, round, step, next_step, turn_count,"
        " tool_call_count, update, fact_count, created_at)"
        " SELECT %s, seq, round, step, next_step, turn_count, tool_call_count, update,"
        " fact_count, created_at FROM supportbot.steps WHERE ticket_id = %s AND seq <= %s",
        (target, source, seq),
    )
    await conn.execute(
        "INSERT INTO supportbot.checkpoints (ticket_id, seq, state)"
        " SELECT %s, seq, state FROM supportbot.checkpoints WHERE ticket_id = %s AND seq <= %s",
        (target, source, seq),
    )
    await conn.execute(
        "UPDATE supportbot.tickets SET turn_count = %s, status = %s, last_seq = %s, human_agent = %s"
        " WHERE id = %s",
        (turn_count, status, seq, human_agent, target),
    )


class AsyncHistoryStatements:
    """The steps' history (``store.history``): the statements code outside the store runs, each on the
    transaction or connection it passes."""

    copy_history = staticmethod(copy_history)
    history = staticmethod(history)
    last_seq_of_round = staticmethod(last_seq_of_round)
    make_durable = staticmethod(make_durable)
    record_steps = staticmethod(record_steps)
    round_of_message = staticmethod(round_of_message)
    ticket_round = staticmethod(ticket_round)
