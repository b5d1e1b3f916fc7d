"""supportbot: durable ticket state, compression and customer profiles for support agents."""

from .backend.base import Backend, ForgetsCustomers
from .bot import SupportBot, migrate
from .config import Settings
from .engine import RoundResult
from .errors import SupportbotError
from .lifecycle import DeletionReport, KeepMode, Pruned, PruneReport, ResetReport
from .llm.base import LLM, Completion, Usage
from .llm.offline import OfflineModel
from .memory.profile import PastTicket, Profile
from .records import Customer, Hit, Invoice, RefundRequest, Subscription
from .state import Fact, Outcome, SupportState, TicketStatus, Turn
from .store.migrate import Migration
from .store.repo import PendingApproval, StepRecord, TicketRow

__all__: list[str] = [
    "LLM",
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
    "RefundRequest",
    "ResetReport",
    "RoundResult",
    "Settings",
    "StepRecord",
    "Subscription",
    "SupportBot",
    "SupportState",
    "SupportbotError",
    "TicketRow",
    "TicketStatus",
    "Turn",
    "Usage",
    "migrate",
]
