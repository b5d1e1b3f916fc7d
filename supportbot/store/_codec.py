"""State fields to JSON and back, one pydantic adapter per declared field.

Two things keep stored states small. A checkpoint leaves out fields at their defaults (most
per-round fields, early in a round). A value that a tool call of the same round returned as is
(the customer record, the help-center hits, a refund request) is stored as a reference to that
call, ``{"$tool": idx}``: the tool log holds it already (with ``"$patch"``, the few entries in which
it differs from that result).
"""

from __future__ import annotations

import functools
import typing
from collections.abc import Mapping, Sequence
from typing import Annotated, Any, cast

from pydantic import BeforeValidator, PlainSerializer, TypeAdapter

from .._records import Spend, ToolCall
from .._state import FIELD_NAMES, LOG_FIELDS, Fact, StateUpdate, SupportState, Ticket, Turn, field_defaults
from ..errors import StoreError, UnknownStateField

# ticket comes from the tickets row; turns, tool calls and facts from their own tables.
STORED_FIELDS: tuple[str, ...] = tuple(n for n in FIELD_NAMES if n != "ticket" and n not in LOG_FIELDS)
_DEFAULTS: dict[str, Any] = field_defaults(STORED_FIELDS)
_REF = "$tool"
_PATCH = "$patch"


def _spend(value: Any) -> Any:
    return Spend(*value) if isinstance(value, list) else value


# A spend is in most step records: [calls, prompt_tokens, completion_tokens, cost] is a third the size.
_COMPACT: dict[Any, Any] = {
    Spend: Annotated[
        Spend,
        BeforeValidator(_spend),
        PlainSerializer(lambda s: [s.calls, s.prompt_tokens, s.completion_tokens, s.cost]),
    ],
}


@functools.cache
def _adapters() -> dict[str, TypeAdapter[Any]]:
    hints = typing.get_type_hints(SupportState)
    return {name: TypeAdapter(_COMPACT.get(hints[name], hints[name])) for name in STORED_FIELDS}


def encode_fields(values: Mapping[str, Any], *, tools: Sequence[ToolCall] = ()) -> dict[str, Any]:
    """JSON for the given fields; ``tools``: calls whose results may be referred to instead of copied."""
    adapters = _adapters()
    encoded = {}
    for name, value in values.items():
        if name in LOG_FIELDS:
            continue  # stored once in their own tables
        adapter = adapters.get(name)
        if adapter is None:
            raise UnknownStateField(f"cannot store unknown state field {name!r}")
        data = adapter.dump_python(value, mode="json")
        if data and isinstance(data, (dict, list)):
            data = next((ref for call in tools if (ref := _reference(data, call)) is not None), data)
        encoded[name] = data
    return encoded


# A value that differs from a tool's result in this many entries at most is stored as a reference
# and its differences (a refund request with the customer's words for its amount added).
_MAX_PATCH = 2


def _reference(data: dict[str, Any] | list[Any], call: ToolCall) -> dict[str, Any] | None:
    """``{"$tool": idx}`` when ``data`` is what ``call`` returned, with ``"$patch"``: the entries
    that differ, when it is that result with a few entries changed or added; else None."""
    if call.idx is None:
        return None
    if call.result == data:
        return {_REF: call.idx}
    result = call.result
    if not (isinstance(data, dict) and isinstance(result, dict) and result and result.keys() <= data.keys()):
        return None
    patch = {key: value for key, value in data.items() if key not in result or result[key] != value}
    return {_REF: call.idx, _PATCH: patch} if len(patch) <= _MAX_PATCH else None


def decode_fields(data: Mapping[str, Any], *, tools: Sequence[ToolCall] = ()) -> dict[str, Any]:
    adapters = _adapters()
    decoded = {}
    for name, value in data.items():
        if isinstance(value, dict) and _REF in value:
            idx = value[_REF]
            if idx >= len(tools):
                raise StoreError(f"stored field {name!r} refers to tool call {idx}, which is not loaded")
            patch = value.get(_PATCH, {})
            value = tools[idx].result  # noqa: PLW2901 - the reference is replaced by what it points at
            if patch:
                value = {**value, **patch}  # noqa: PLW2901
        adapter = adapters.get(name)
        if adapter is None:
            raise UnknownStateField(
                f"a stored state has field {name!r}, which this version does not know; "
                "open the database with the version that wrote it, or upgrade"
            )
        decoded[name] = adapter.validate_python(value)
    return decoded


def decode_update(data: Mapping[str, Any], *, tools: Sequence[ToolCall] = ()) -> StateUpdate:
    """A stored step's update, as the reducer takes it again."""
    # Each value was validated by its field's adapter, and an unknown name raised: the dict holds
    # what StateUpdate declares, which a type checker cannot see through the adapters.
    return cast(StateUpdate, decode_fields(data, tools=tools))


def encode_state(state: SupportState) -> dict[str, Any]:
    """The state without turns, tool calls, facts and fields at their defaults."""
    changed = {name: value for name in STORED_FIELDS if (value := getattr(state, name)) != _DEFAULTS[name]}
    return encode_fields(changed, tools=state.round_calls)


def decode_state(
    data: Mapping[str, Any],
    *,
    ticket: Ticket,
    turns: tuple[Turn, ...] = (),
    tool_log: tuple[ToolCall, ...] = (),
    facts: tuple[Fact, ...] = (),
) -> SupportState:
    return SupportState(
        ticket=ticket, turns=turns, tool_log=tool_log, facts=facts, **decode_fields(data, tools=tool_log)
    )
