"""Structured answers from servers that support JSON output well, partly or not at all.

Modes, best first (``Settings.llm_json_mode``):

    json_schema          OpenAI's ``response_format: {"type": "json_schema", ...}``: the server
                         constrains the answer to the schema
    json_object+schema   ``{"type": "json_object", "schema": ...}``: llama.cpp's form of the same
    json_object          any JSON object (DeepSeek, older vLLM and Ollama); the schema is in the prompt
    none                 no ``response_format`` at all; the answer's JSON is repaired from its text

The schema is always in the prompt too, so every mode can be answered. With ``auto`` the client
starts at ``json_schema`` and steps down one mode each time the server refuses one (an HTTP 400,
422 or 500 whose error names the response format); the mode that worked is remembered for the
server and model for the life of the process, so the detection costs one refused request per mode,
once. A mode that has answered once is never given up because of a later error.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, ValidationError

from .base import Message

__all__ = [
    "LADDER",
    "JsonModes",
    "describe",
    "parse",
    "refuses_format",
    "response_format",
    "with_schema_hint",
]

LADDER = ("json_schema", "json_object+schema", "json_object", "none")
# Words a server's error uses when it does not accept the response format it was sent; a 500 must
# name the format itself (llama.cpp's does), else it is the server failing, retried as such.
_FORMAT_WORDS = re.compile(r"response_format|json_schema|json_object|schema|grammar", re.IGNORECASE)
_FORMAT_NAMED = re.compile(r"response_format|json_schema", re.IGNORECASE)
_TRAILING_COMMA = re.compile(r",\s*([}\]])")


class JsonModes:
    """The mode each (server, model) answered in, for this process: detected once, then reused."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._modes: dict[tuple[str, str], tuple[str, bool]] = {}  # -> (mode, confirmed)

    def mode(self, key: tuple[str, str], fixed: str) -> str:
        if fixed != "auto":
            return fixed
        with self._lock:
            return self._modes.get(key, (LADDER[0], False))[0]

    def confirm(self, key: tuple[str, str], mode: str) -> None:
        with self._lock:
            if self._modes.get(key, (mode, False))[0] == mode:
                self._modes[key] = (mode, True)

    def step_down(self, key: tuple[str, str], refused: str) -> str | None:
        """The next mode after ``refused`` (remembered), or None when there is none to step to or
        ``refused`` had already answered (then the error is not about the format)."""
        with self._lock:
            mode, confirmed = self._modes.get(key, (LADDER[0], False))
            if confirmed and mode == refused:
                return None
            if mode != refused:  # another thread stepped down meanwhile
                return mode
            at = LADDER.index(refused)
            if at + 1 >= len(LADDER):
                return None
            self._modes[key] = (LADDER[at + 1], False)
            return LADDER[at + 1]


MODES = JsonModes()


def response_format(mode: str, schema: type[BaseModel]) -> dict[str, Any] | None:
    """The ``response_format`` a request in ``mode`` carries (None: the field is left out)."""
    if mode == "json_schema":
        # Not strict: OpenAI's strict mode refuses pydantic's optional fields and defaults.
        return {
            "type": "json_schema",
            "json_schema": {"name": schema.__name__, "schema": schema.model_json_schema(), "strict": False},
        }
    if mode == "json_object+schema":
        return {"type": "json_object", "schema": schema.model_json_schema()}
    if mode == "json_object":
        return {"type": "json_object"}
    return None


def refuses_format(status: int, message: str) -> bool:
    """Whether an error answer says the server does not take the response format it was sent.
    llama.cpp's servers answer an unknown format with 500, others with 400 or 422."""
    if status == 500:
        return _FORMAT_NAMED.search(message) is not None
    return status in (400, 422) and _FORMAT_WORDS.search(message) is not None


def with_schema_hint(messages: Sequence[Message], schema: type[BaseModel]) -> list[dict[str, Any]]:
    """The messages with the JSON schema appended to the system prompt.

    Merged into the leading system message rather than added as a second one, because several
    open-model chat templates (served by vLLM or Ollama) accept a system message only first.
    """
    hint = (
        "Reply with one JSON object and nothing else. It must validate against this JSON schema:\n"
        + json.dumps(schema.model_json_schema(), separators=(",", ":"))
    )
    out = [dict(m) for m in messages]
    if out and out[0].get("role") == "system":
        out[0] = {**out[0], "content": f"{out[0].get('content', '')}\n\n{hint}"}
    else:
        out.insert(0, {"role": "system", "content": hint})
    return out


def parse(text: str, schema: type[BaseModel]) -> BaseModel:
    """``text`` validated against ``schema``, after repairing what small models and servers
    without JSON mode get wrong: a Markdown fence, prose around the object, trailing commas, an
    object cut off by ``max_tokens`` (its open strings and brackets closed). Raises
    ValidationError when even the repaired text does not validate."""
    try:
        return schema.model_validate_json(text.strip())
    except ValidationError as exc:
        repaired = repair(text)
        if repaired is None:
            raise
        try:
            return schema.model_validate_json(repaired)
        except ValidationError:
            raise exc from None  # the model is shown its own text's errors, not the repair's


def repair(text: str) -> str | None:
    """The JSON object in ``text``, made parseable where it can be; None when it holds none."""
    start = text.find("{")
    if start < 0:
        return None
    closers: list[str] = []
    in_string = escaped = False
    end = None
    for at in range(start, len(text)):
        char = text[at]
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
            continue
        if char == '"':
            in_string = True
        elif char in "{[":
            closers.append("}" if char == "{" else "]")
        elif char in "}]" and closers:
            closers.pop()
            if not closers:
                end = at + 1
                break
    if end is not None:
        body = text[start:end]
    else:  # cut off: close the string and the brackets still open
        body = text[start:].rstrip()
        body = (body + '"' if in_string else body.rstrip(",:")) + "".join(reversed(closers))
    body = _TRAILING_COMMA.sub(r"\1", body)
    try:
        json.loads(body)
    except ValueError:
        return None
    return body


def describe(exc: ValidationError) -> str:
    """One line per error, without pydantic's documentation links (noise in a prompt)."""
    lines = []
    for error in exc.errors(include_url=False):
        where = ".".join(str(part) for part in error["loc"]) or "(root)"
        lines.append(f"- {where}: {error['msg']}")
    return "\n".join(lines[:20])
