"""supportbot: durable ticket state, compression and customer profiles for support agents."""

from importlib.metadata import PackageNotFoundError, version

from .audit import AuditAction, AuditEntry
from .backend.base import Backend, ForgetsCustomers
from .bot import SupportBot
from .config import Settings
from .errors import SupportbotError
from .lifecycle import DeletionReport, KeepMode, Pruned, PruneReport, ResetReport
from .llm.base import LLM, Completion, Usage
from .llm.offline import OfflineModel
from .memory.profile import Profile
from .opening import migrate
from .records import Customer, Hit, Invoice, PastTicket, RefundRequest, Subscription
from .rounds import RoundResult
from .state import Fact, Outcome, SupportState, TicketStatus, Turn
from .store.migrate import Migration
from .store.queue import QueueEntry, QueueStats
from .store.repo import PendingApproval, TicketRow
from .store.steps_repo import StepRecord
from .waiting import Submitted
from .worker import WorkerStats

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
