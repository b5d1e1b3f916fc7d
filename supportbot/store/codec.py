"""State fields to JSON and back, one pydantic adapter per declared field."""

from __future__ import annotations

import functools
import typing
from collections.abc import Mapping
from typing import Any

from pydantic import TypeAdapter

from ..errors import UnknownStateField
from ..records import ToolCall
from ..state import FIELD_NAMES, LOG_FIELDS, Fact, SupportState, Ticket, Turn

# ticket comes from the tickets row; turns, tool calls and facts from their own tables.
STORED_FIELDS: tuple[str, ...] = tuple(n for n in FIELD_NAMES if n != "ticket" and n not in LOG_FIELDS)


@functools.cache
def _adapters() -> dict[str, TypeAdapter[Any]]:
    hints = typing.get_type_hints(SupportState)
    return {name: TypeAdapter(hints[name]) for name in STORED_FIELDS}


def encode_fields(values: Mapping[str, Any]) -> dict[str, Any]:
    adapters = _adapters()
    encoded = {}
    for name, value in values.items():
        if name in LOG_FIELDS:
            continue  # stored once in their own tables
        adapter = adapters.get(name)
        if adapter is None:
            raise UnknownStateField(f"cannot store unknown state field {name!r}")
        encoded[name] = adapter.dump_python(value, mode="json")
    return encoded


def decode_fields(data: Mapping[str, Any]) -> dict[str, Any]:
    adapters = _adapters()
    return {name: adapters[name].validate_python(value) for name, value in data.items()}


def encode_state(state: SupportState) -> dict[str, Any]:
    return encode_fields({name: getattr(state, name) for name in STORED_FIELDS})


def decode_state(
    data: Mapping[str, Any], *, ticket: Ticket, turns: tuple[Turn, ...] = (), tool_log: tuple[ToolCall, ...] = (),
    facts: tuple[Fact, ...] = (),
) -> SupportState:
    return SupportState(ticket=ticket, turns=turns, tool_log=tool_log, facts=facts, **decode_fields(data))
