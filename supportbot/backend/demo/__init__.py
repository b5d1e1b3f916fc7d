"""The demo business system: customers, subscriptions, invoices, refunds and a help center on the
``demo`` schema of the engine's own database, so everything runs out of the box
(``backend="demo"``). A host application replaces it with its own :class:`supportbot.Backend`."""

from ._backend import DemoBackend
from ._data import DEMO_TODAY, load_demo_data

__all__ = ["DEMO_TODAY", "DemoBackend", "load_demo_data"]
