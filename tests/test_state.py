import dataclasses
from datetime import UTC, datetime

import pytest

from supportbot import SupportState, Turn
from supportbot._records import Spend, ToolCall
from supportbot._state import (
    ADDITIVE_FIELDS,
    LOG_FIELDS,
    PERSISTENT_FIELDS,
    ROUND_FIELDS,
    Review,
    StateUpdate,
    Ticket,
    new_round,
    reduce,
    round_reset,
)
from supportbot.errors import AppendOnlyViolation, UnknownStateField

NOW = datetime(2026, 11, 1, tzinfo=UTC)


def _state() -> SupportState:
    return SupportState(ticket=Ticket("T1", "a@example.com", "s", "b", NOW))


def test_turns_append_and_get_their_positions() -> None:
    s = reduce(_state(), {"turns": [Turn("customer", "一"), Turn("agent", "二")]})
    s = reduce(s, {"turns": [Turn("customer", "三")]})
    assert [t.content for t in s.turns] == ["一", "二", "三"]
    assert [t.idx for t in s.turns] == [0, 1, 2]


def test_rewriting_stored_turns_is_rejected() -> None:
    s = reduce(_state(), {"turns": [Turn("customer", "一")]})
    with pytest.raises(AppendOnlyViolation, match="append-only"):
        reduce(s, {"turns": list(s.turns)})
    with pytest.raises(AppendOnlyViolation):
        reduce(s, {"turns": "replace everything"})  # type: ignore[typeddict-item]
    with pytest.raises(AppendOnlyViolation, match="ToolCall"):
        reduce(s, {"tool_log": [Turn("agent", "not a tool call")]})  # type: ignore[list-item]


def test_tool_log_appends_cost_adds_rest_replaces() -> None:
    s = reduce(_state(), {"tool_log": [ToolCall("get_customer")], "cost": 0.25, "draft": "v1"})
    s = reduce(s, {"tool_log": [ToolCall("search")], "cost": 0.5, "draft": "v2"})
    assert [c.name for c in s.tool_log] == ["get_customer", "search"]
    assert s.cost == 0.75
    assert s.draft == "v2"


def test_unknown_field_raises_and_says_what_to_do() -> None:
    with pytest.raises(UnknownStateField, match="declare it on SupportState"):
        reduce(_state(), {"reveiw": None})  # type: ignore[typeddict-unknown-key]


def test_reducer_does_not_mutate_its_input() -> None:
    before = _state()
    after = reduce(before, {"draft": "x", "turns": [Turn("customer", "hi")]})
    assert before.draft == "" and before.turns == ()
    assert after is not before


def test_round_reset_clears_every_per_round_field_and_only_those() -> None:
    busy = reduce(
        _state(),
        {
            "draft": "d",
            "review": Review(passed=False, problems=["p"]),
            "revisions": 2,
            "findings": "f",
            "summary": "kept",
            "profile": "kept",
            "cost": 1.0,
            "round_spend": Spend(calls=2, cost=1.0),
        },
    )
    fresh = new_round(busy)
    assert set(round_reset()) == set(ROUND_FIELDS)
    assert not PERSISTENT_FIELDS & set(ROUND_FIELDS)
    assert (fresh.draft, fresh.review, fresh.revisions, fresh.findings) == ("", None, 0, "")
    assert fresh.round_spend == Spend()  # additive in updates, but a new round starts from zero
    assert (fresh.summary, fresh.profile, fresh.cost) == ("kept", "kept", 1.0)


def test_a_step_update_declares_every_state_field_with_the_fields_type() -> None:
    """StateUpdate is what mypy checks a step's update against; the reducer applies it to
    SupportState, so the two lists of fields must not drift apart. The fields the reducer adds to
    take the items or the amount to add, not the field's own type."""
    fields = {f.name: f.type for f in dataclasses.fields(SupportState)}
    declared = {name: ref.__forward_arg__ for name, ref in StateUpdate.__annotations__.items()}
    assert declared.keys() == fields.keys()
    assert StateUpdate.__required_keys__ == frozenset()
    assert {name: kind for name, kind in declared.items() if name not in LOG_FIELDS | ADDITIVE_FIELDS} == {
        name: kind for name, kind in fields.items() if name not in LOG_FIELDS | ADDITIVE_FIELDS
    }
