"""The operator CLI (``python -m supportbot``): one module per command group, all internal."""

from ._main import main

__all__ = ["main"]
