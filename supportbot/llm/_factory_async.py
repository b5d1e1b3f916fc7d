"""Which models a SupportBot talks to when the caller passes none: a configured endpoint, else offline."""

from __future__ import annotations

from collections.abc import Callable

from ..config import Settings
from .base import AsyncLLM


def models_from_settings(
    settings: Settings, *, on_token: Callable[[str], None] | None = None
) -> tuple[AsyncLLM, AsyncLLM]:
    """(llm, small_llm): the OpenAI-compatible endpoint when SUPPORTBOT_LLM_BASE_URL is set,
    otherwise the deterministic offline model. ``on_token`` streams the main model's free-text
    replies (drafts); the small model, which triages, reviews and summarizes, never streams."""
    # Each is imported only when chosen: a bot on a real endpoint never loads the offline model.
    if not settings.llm_base_url:
        from .offline import AsyncOfflineModel

        return AsyncOfflineModel(on_token=on_token), AsyncOfflineModel()
    from ._openai_async import AsyncOpenAICompatible

    return (
        AsyncOpenAICompatible.from_settings(settings, on_token=on_token),
        AsyncOpenAICompatible.from_settings(settings, small=True),
    )
