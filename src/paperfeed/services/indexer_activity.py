"""An indexer telling the readers what it does (:mod:`paperfeed.domain.indexer_activity`): embedding, at
what rate, how much is left, or idle between looks for new papers; gone when its process is."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime

from paperfeed.domain.indexer_activity import (
    IndexerActivity,
    IndexerActivityStore,
    IndexerState,
    current_activity,
)

__all__ = ["ActivityReporter", "read_activity"]


@dataclass
class ActivityReporter:
    """Publishes this process's activity, at most once per ``every`` seconds while embedding."""

    store: IndexerActivityStore
    holder: str  # host:pid:start of this process
    every: float = 2.0
    clock: Callable[[], float] = time.monotonic
    now: Callable[[], datetime] = lambda: datetime.now(UTC)
    _started: datetime | None = field(default=None, init=False)
    _run_started: float = field(default=0.0, init=False)
    _last: float = field(default=-1e18, init=False)
    _embedded: int = field(default=0, init=False)  # by this process, over all its runs
    _run_base: int = field(default=0, init=False)

    def begin(self, backlog: int) -> None:
        """A run starts with ``backlog`` papers to embed."""
        self._run_started = self.clock()
        self._run_base = self._embedded
        self._publish("embedding", self._embedded, backlog, 0.0)

    def progress(self, embedded: int, backlog: int) -> None:
        """``embedded`` papers of this run are committed; ``backlog`` are left."""
        self._embedded = self._run_base + embedded
        now = self.clock()
        if now - self._last < self.every:
            return
        elapsed = now - self._run_started
        rate = embedded / elapsed if elapsed > 0 else 0.0
        self._publish("embedding", self._embedded, backlog, rate)

    def idle(self) -> None:
        """A long-lived indexer (``index --follow``) waits for new papers and will embed them itself."""
        self._publish("idle", self._embedded, 0, 0.0)

    def withdraw(self) -> None:
        self.store.withdraw(self.holder)

    def _publish(self, state: IndexerState, embedded: int, backlog: int, rate: float) -> None:
        moment = self.now()
        if self._started is None:
            self._started = moment
        self._last = self.clock()
        self.store.publish(
            IndexerActivity(self.holder, state, self._started, moment, embedded, backlog, round(rate, 3))
        )


def read_activity(
    store: IndexerActivityStore, is_dead: Callable[[str], bool], now: Callable[[], datetime]
) -> Callable[[], IndexerActivity | None]:
    """The live indexer as the coverage notice, ``paperfeed stats`` and /admin/jobs see it."""
    return lambda: current_activity(store.read_all(), is_dead=is_dead, now=now())
