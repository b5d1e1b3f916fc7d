"""supportbot: durable ticket state, compression and customer profiles for support agents."""

from importlib.metadata import PackageNotFoundError, version

from ._bot import SupportBot
from ._lifecycle import DeletionReport, KeepMode, Pruned, PruneReport, ResetReport
from ._opening import migrate
from ._records import Customer, Hit, Invoice, PastTicket, RefundRequest, Subscription
from ._state import Fact, Outcome, SupportState, TicketStatus, Turn
from .backend.base import Backend, ForgetsCustomers
from .config import Settings
from .errors import SupportbotError
from .llm.base import LLM, Completion, Usage
from .llm.offline import OfflineModel
from .memory._profile import Profile
from .run._rounds import RoundResult
from .run._waiting import Submitted
from .run._worker import WorkerStats
from .store._audit import AuditAction, AuditEntry
from .store._history import StepRecord
from .store._migrate import Migration
from .store._queue import QueueEntry, QueueStats
from .store._tickets import PendingApproval, TicketRow

try:
    __version__ = version("supportbot")
except PackageNotFoundError:  # a source checkout that was never installed
    __version__ = "0+unknown"

__all__: list[str] = [
    "LLM",
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
    "RoundResult",
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
