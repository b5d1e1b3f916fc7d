"""The bounded map behind the per-ticket and per-customer caches."""

from __future__ import annotations

import threading

import pytest

from supportbot.store._recent import LastWritten


def test_it_keeps_the_most_recently_written_entries() -> None:
    recent: LastWritten[str, int] = LastWritten(2)
    recent["a"], recent["b"] = 1, 2
    recent["a"] = 10  # written again: "b" is now the oldest
    recent["c"] = 3
    assert (recent.get("a"), recent.get("b"), recent.get("c"), len(recent)) == (10, None, 3, 2)
    recent["d"] = 4
    assert (recent.get("a"), recent.get("c"), recent.get("d"), len(recent)) == (None, 3, 4, 2)


def test_pop_and_clear() -> None:
    recent: LastWritten[str, tuple[int, ...]] = LastWritten(3)
    recent["a"], recent["b"] = (), (1,)
    assert recent.get("a") == ()  # an empty value is kept, not taken for a miss
    assert recent.pop("a") == () and recent.pop("a") is None and len(recent) == 1
    recent.clear()
    assert len(recent) == 0 and recent.get("b") is None


def test_it_refuses_a_size_below_one() -> None:
    with pytest.raises(ValueError, match="at least one"):
        LastWritten(0)


def test_threads_never_push_it_past_its_size() -> None:
    recent: LastWritten[int, int] = LastWritten(50)
    errors: list[BaseException] = []

    def churn(offset: int) -> None:
        try:
            for n in range(2000):
                recent[offset + n % 80] = n
                recent.get(offset + (n * 7) % 80)
                if n % 13 == 0:
                    recent.pop(offset + (n * 3) % 80)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=churn, args=(k * 40,)) for k in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == [] and 0 < len(recent) <= 50
