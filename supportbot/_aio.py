"""What only the asyncio bot needs: an opening that is both awaited and entered.

``await AsyncSupportBot.open(...)`` gives the bot; ``async with AsyncSupportBot.open(...) as bot``
opens it and closes it at the end of the block, as ``with SupportBot.open(...) as bot`` does.
"""

from __future__ import annotations

from collections.abc import Coroutine, Generator
from types import TracebackType
from typing import Any, Generic, Protocol, TypeVar


class _Closing(Protocol):
    async def close(self) -> None: ...


B = TypeVar("B", bound=_Closing)


class AsyncOpening(Generic[B]):
    def __init__(self, opening: Coroutine[Any, Any, B]) -> None:
        self._opening = opening
        self._opened: B | None = None

    def __await__(self) -> Generator[Any, None, B]:
        return self._opening.__await__()

    async def __aenter__(self) -> B:
        self._opened = await self._opening
        return self._opened

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._opened is not None:
            await self._opened.close()
