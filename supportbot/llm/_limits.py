"""What the caller allows the model call in progress: how many tokens it may answer with, and by
when the round needs it.

The round (``run/_models.py``) sets these around each call; a client that can honour them reads
them with :func:`current` (the OpenAI-compatible client sends ``max_tokens`` and shortens its
timeouts and retries to the deadline). They travel beside the call, not as arguments, so the
public ``LLM`` protocol stays ``chat(messages, schema=, temperature=)``: a host's model, or a
wrapper such as the placeholder model, keeps working unchanged and may read them too.

A context variable is per thread (and per asyncio task), so the rounds a worker runs at once
never see each other's limits.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

__all__ = ["CallLimits", "current", "limited"]


@dataclass(frozen=True, slots=True)
class CallLimits:
    kind: str  # "classify", "check", "facts", "summary", "draft", "answer"
    max_tokens: int | None = None  # the most tokens the answer may take
    deadline: float | None = None  # time.monotonic() by which the round must have its answer

    def remaining(self) -> float | None:
        """Seconds left before the deadline (never below 0); None without one."""
        return None if self.deadline is None else max(0.0, self.deadline - time.monotonic())


_current: ContextVar[CallLimits | None] = ContextVar("supportbot_call_limits", default=None)


def current() -> CallLimits | None:
    """The limits of the call in progress on this thread, if its caller set any."""
    return _current.get()


@contextmanager
def limited(limits: CallLimits) -> Iterator[CallLimits]:
    token = _current.set(limits)
    try:
        yield limits
    finally:
        _current.reset(token)
