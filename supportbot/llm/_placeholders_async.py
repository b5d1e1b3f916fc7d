"""A model that never sees personal data (``Settings.pii_placeholders``).

Wraps the configured model for one ticket's step: phones, emails, ID and bank card numbers in
everything sent to it, prose and records alike (``i18n._prompts.PromptSections``,
``SummarySections``), are replaced by the ticket's stable placeholders (``memory._mask.Placeholders``),
and the values are put back in what it returns, text and parsed fields. The draft checks then see
the restored draft, as the customer will.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

from pydantic import BaseModel

from ..memory._mask import Placeholders
from .base import AsyncLLM, Completion, Message


class AsyncPlaceholderModel:
    def __init__(self, inner: AsyncLLM, placeholders: Placeholders) -> None:
        self.inner = inner
        self.placeholders = placeholders

    async def chat(
        self,
        messages: Sequence[Message],
        *,
        schema: type[BaseModel] | None = None,
        temperature: float = 0.0,
    ) -> Completion:
        hide = self.placeholders.hide
        hidden = [{key: _mapped(value, hide) for key, value in message.items()} for message in messages]
        completion = await self.inner.chat(hidden, schema=schema, temperature=temperature)
        show = self.placeholders.show
        parsed = _mapped(completion.parsed, show) if completion.parsed is not None else None
        return dataclasses.replace(completion, text=show(completion.text), parsed=parsed)


def _mapped(value: Any, change: Callable[[str], str]) -> Any:
    """``value`` with ``change`` applied to every string in it: records, tuples, dicts, models."""
    if isinstance(value, str):
        return change(value)
    if isinstance(value, BaseModel):
        return value.model_copy(
            update={name: _mapped(getattr(value, name), change) for name in type(value).model_fields}
        )
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        fields = {
            f.name: _mapped(getattr(value, f.name), change) for f in dataclasses.fields(value) if f.init
        }
        return dataclasses.replace(value, **fields)
    if isinstance(value, (tuple, list)):
        return type(value)(_mapped(item, change) for item in value)
    if isinstance(value, dict):
        return {key: _mapped(item, change) for key, item in value.items()}
    return value
