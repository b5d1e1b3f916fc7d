"""The HTTP API for customer-facing clients (``supportbot[console]``): ``create_app()`` gives an
ASGI app over ``AsyncSupportBot`` to mount in a FastAPI or Starlette application, and
``python -m supportbot serve`` runs it, with a chat page at ``/chat`` to try it.

Modules (internal): ``_keys`` (API keys: their form, digest, scope and rate), ``_app`` (the app).
The core package never imports this one.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._app import create_app

__all__ = ["create_app"]


def __getattr__(name: str) -> Any:
    # FastAPI loads only when the app is made: the CLI's key commands need none of it.
    if name == "create_app":
        from ._app import create_app

        return create_app
    raise AttributeError(f"module 'supportbot.http' has no attribute {name!r}")
