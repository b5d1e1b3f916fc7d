"""The demo business system: customers, subscriptions, invoices, refunds and a help center on the
``demo`` schema of the engine's own database, so everything runs out of the box
(``backend="demo"``). A host application replaces it with its own :class:`supportbot.Backend`."""

from ._backend import DemoBackend, load_demo_data
from ._backend_async import AsyncDemoBackend
from ._data import DEMO_TODAY

__all__ = ["DEMO_TODAY", "AsyncDemoBackend", "DemoBackend", "load_demo_data"]
