"""supportbot: durable ticket state, compression and customer profiles for support agents.

The public API is what this module exports (``__all__``, pinned by tests/test_api.py), the error
tree in :mod:`supportbot.errors`, :class:`Settings` in :mod:`supportbot.config`, the business-system
protocol in :mod:`supportbot.backend.base` and the model protocol in :mod:`supportbot.llm.base`.
Every other module is internal (its name starts with ``_``) and may change in any release.

Names are loaded on first use: ``import supportbot`` reads only this module, the errors and the
settings, so a process that imports it for one type does not load the engine, the demo business
system or the offline model.
"""

from __future__ import annotations

import importlib
from importlib.metadata import PackageNotFoundError, version
from typing import TYPE_CHECKING

from . import _moved
from .config import Settings
from .errors import SupportbotError

if TYPE_CHECKING:
    from ._front._bot import SupportBot
    from ._front._bot_async import AsyncSupportBot
    from ._front._opening import migrate
    from ._records import Customer, Hit, Invoice, PastTicket, RefundRequest, Subscription
    from ._reports import DeletionReport, KeepMode, Pruned, ResetReport
    from ._state import Fact, Outcome, SupportState, TicketStatus, Turn
    from .backend.base import Backend, ForgetsCustomers
    from .backend.base_async import AsyncBackend, AsyncForgetsCustomers
    from .llm.base import LLM, AsyncLLM, Completion, Usage
    from .llm.offline import AsyncOfflineModel, OfflineModel
    from .memory._profile import Profile
    from .run._rounds import RoundResult
    from .run._values import RetentionReport, ServiceClock, Submitted, WorkerStats
    from .store._migrations import Migration
    from .store._rows import (
        AuditAction,
        AuditEntry,
        PendingApproval,
        PruneReport,
        QueueEntry,
        QueueStats,
        StepRecord,
        TicketRow,
    )

_moved.install()

try:
    __version__ = version("supportbot")
except PackageNotFoundError:  # a source checkout that was never installed
    __version__ = "0+unknown"

# Where each exported name lives; the TYPE_CHECKING imports above say the same to type checkers
# (tests/test_api.py checks that the two agree).
_HOMES: dict[str, str] = {
    "LLM": ".llm.base",
    "AsyncLLM": ".llm.base",
    "AsyncBackend": ".backend.base_async",
    "AsyncForgetsCustomers": ".backend.base_async",
    "AsyncOfflineModel": ".llm.offline",
    "AsyncSupportBot": "._front._bot_async",
    "AuditAction": ".store._rows",
    "AuditEntry": ".store._rows",
    "Backend": ".backend.base",
    "Completion": ".llm.base",
    "Customer": "._records",
    "DeletionReport": "._reports",
    "Fact": "._state",
    "ForgetsCustomers": ".backend.base",
    "Hit": "._records",
    "Invoice": "._records",
    "KeepMode": "._reports",
    "Migration": ".store._migrations",
    "OfflineModel": ".llm.offline",
    "Outcome": "._state",
    "PastTicket": "._records",
    "PendingApproval": ".store._rows",
    "Profile": ".memory._profile",
    "PruneReport": ".store._rows",
    "Pruned": "._reports",
    "QueueEntry": ".store._rows",
    "QueueStats": ".store._rows",
    "RefundRequest": "._records",
    "ResetReport": "._reports",
    "RetentionReport": ".run._values",
    "RoundResult": ".run._rounds",
    "ServiceClock": ".run._values",
    "StepRecord": ".store._rows",
    "Submitted": ".run._values",
    "Subscription": "._records",
    "SupportBot": "._front._bot",
    "SupportState": "._state",
    "TicketRow": ".store._rows",
    "TicketStatus": "._state",
    "Turn": "._state",
    "Usage": ".llm.base",
    "WorkerStats": ".run._values",
    "migrate": "._front._opening",
}


def __getattr__(name: str) -> object:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'supportbot' has no attribute {name!r}")
    value = getattr(importlib.import_module(home, __name__), name)
    globals()[name] = value  # the next lookup is a plain attribute
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_HOMES})


__all__: list[str] = [
    "LLM",
    "AsyncBackend",
    "AsyncForgetsCustomers",
    "AsyncLLM",
    "AsyncOfflineModel",
    "AsyncSupportBot",
    "AuditAction",
    "AuditEntry",
    "Backend",
    "Completion",
    "Customer",
    "DeletionReport",
    "Fact",
    "ForgetsCustomers",
    "Hit",
    "Invoice",
    "KeepMode",
    "Migration",
    "OfflineModel",
    "Outcome",
    "PastTicket",
    "PendingApproval",
    "Profile",
    "PruneReport",
    "Pruned",
    "QueueEntry",
    "QueueStats",
    "RefundRequest",
    "ResetReport",
    "RetentionReport",
    "RoundResult",
    "ServiceClock",
    "Settings",
    "StepRecord",
    "Submitted",
    "Subscription",
    "SupportBot",
    "SupportState",
    "SupportbotError",
    "TicketRow",
    "TicketStatus",
    "Turn",
    "Usage",
    "WorkerStats",
    "migrate",
]
