"""The vector reader's timing: at most one look per ``every`` seconds, a new index found, errors kept.

The whole path (two processes' compositions on one folder) is tests/search/test_index_appears_later.py;
these pin the rate limit and the error rules on a counting stand-in for the index.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import cast

import pytest

from paperfeed.domain.search import VectorIndex, VectorIndexError
from paperfeed.services.vector_reader import VectorReader


@dataclass
class Counted:
    reloads: int = 0

    def reload_if_changed(self) -> bool:
        self.reloads += 1
        return False


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_nothing_saved_is_looked_for_again_once_per_interval_then_reloads_are_rate_limited() -> None:
    clock, found = Clock(), Counted()
    opened: list[int] = []
    available: list[Counted] = []

    def open_index() -> VectorIndex | None:
        opened.append(1)
        return available[0] if available else None  # type: ignore[return-value]

    reader = VectorReader(open_index, every=5.0, clock=clock)
    assert reader() is None
    assert reader() is None
    assert len(opened) == 1  # within the interval: not looked for again
    available.append(found)
    clock.now += 5
    assert reader() is cast(VectorIndex, found)  # found on the next look
    assert len(opened) == 2
    assert found.reloads == 0  # just opened: nothing newer to look for
    reader()
    assert found.reloads == 0
    clock.now += 5
    reader()
    reader()
    assert found.reloads == 1  # one look per interval


def test_a_damaged_index_is_reported_on_every_call_until_it_opens() -> None:
    clock = Clock()
    broken = [True]

    def open_index() -> VectorIndex | None:
        if broken[0]:
            raise VectorIndexError("manifest.json is not JSON")
        return Counted()  # type: ignore[return-value]

    reader = VectorReader(open_index, every=5.0, clock=clock)
    for _ in range(2):
        with pytest.raises(VectorIndexError):
            reader()
    broken[0] = False
    clock.now += 5
    assert reader() is not None
