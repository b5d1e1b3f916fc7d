# Generated from _factory_async.py by scripts/async_to_sync.py: edit that file and run the script.
"""Which models a SupportBot talks to when the caller passes none: a configured endpoint, else offline."""

from __future__ import annotations

from collections.abc import Callable

from ..config import Settings
from .base import LLM


def models_from_settings(
    settings: Settings, *, on_token: Callable[[str], None] | None = None
) -> tuple[LLM, LLM]:
    """(llm, small_llm): the OpenAI-compatible endpoint when SUPPORTBOT_LLM_BASE_URL is set,
    otherwise the deterministic offline model. ``on_token`` streams the main model's free-text
    replies (drafts); the small model, which triages, reviews and summarizes, never streams."""
    # Each is imported only when chosen: a bot on a real endpoint never loads the offline model.
    if not settings.llm_base_url:
        from .offline import OfflineModel

        return OfflineModel(on_token=on_token), OfflineModel()
    from ._openai import OpenAICompatible

    return (
        OpenAICompatible.from_settings(settings, on_token=on_token),
        OpenAICompatible.from_settings(settings, small=True),
    )
