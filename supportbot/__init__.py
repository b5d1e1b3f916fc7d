"""supportbot: durable ticket state, compression and customer profiles for support agents."""

from importlib.metadata import PackageNotFoundError, version

from .backend.base import Backend
from .bot import SupportBot
from .config import Settings
from .engine import RoundResult
from .errors import SupportbotError
from .llm.base import LLM, Completion, Usage
from .llm.offline import OfflineModel
from .state import SupportState, Turn
from .store.repo import PendingApproval, StepRecord

try:
    __version__ = version("supportbot")
except PackageNotFoundError:  # a source checkout that was never installed
    __version__ = "0+unknown"

__all__: list[str] = [
    "LLM",
    "Backend",
    "Completion",
    "OfflineModel",
    "PendingApproval",
    "RoundResult",
    "Settings",
    "StepRecord",
    "SupportBot",
    "SupportState",
    "SupportbotError",
    "Turn",
    "Usage",
]
