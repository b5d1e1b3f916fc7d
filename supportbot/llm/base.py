"""The model protocol every step talks to, and what a call returns.

Any object with a matching ``chat`` method works: the OpenAI-compatible client, the offline model,
or a scripted fake in tests.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar, runtime_checkable

from pydantic import BaseModel

# {"role": "system" | "user" | "assistant", "content": "..."}. A prompt built by supportbot also
# carries its sections as records under prompts.SECTIONS, for a model that reads structure (the
# offline model); clients send role and content only.
Message = Mapping[str, Any]
M = TypeVar("M", bound=BaseModel)


@dataclass(frozen=True, slots=True)
class Usage:
    prompt_tokens: int = 0
    completion_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


@dataclass(frozen=True, slots=True)
class Completion:
    text: str
    parsed: BaseModel | None = None  # the validated object when a schema was asked for
    usage: Usage = field(default_factory=Usage)
    cost: float = 0.0
    model: str = ""


@runtime_checkable
class LLM(Protocol):
    def chat(
        self,
        messages: Sequence[Message],
        *,
        schema: type[BaseModel] | None = None,
        temperature: float = 0.0,
    ) -> Completion:
        """Answer the conversation; with ``schema``, also return ``parsed`` validated against it."""
        ...


@runtime_checkable
class AsyncLLM(Protocol):
    """``LLM`` for ``AsyncSupportBot``: the same contract, as a coroutine."""

    async def chat(
        self,
        messages: Sequence[Message],
        *,
        schema: type[BaseModel] | None = None,
        temperature: float = 0.0,
    ) -> Completion:
        """Answer the conversation; with ``schema``, also return ``parsed`` validated against it."""
        ...
