"""A per-client limit on requests whose work a cache cannot absorb (anonymous searches, ``docs/security.md``).

A token bucket per client address, in the process's memory: ``per_minute`` requests a minute on average,
as many at once. Each web worker keeps its own buckets (a client may get ``per_minute`` from each), so a
busy public instance needs no shared store for it; the clients remembered are bounded (the least recently
seen are forgotten first). Signed-in readers are not limited here: they are accountable, and their own
limits are per account (``services/accounts.py``).
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field

__all__ = ["ClientRateLimiter"]


@dataclass
class ClientRateLimiter:
    per_minute: int  # 0: no limit
    clock: Callable[[], float] = time.monotonic
    max_clients: int = 50_000
    _buckets: OrderedDict[str, tuple[float, float]] = field(default_factory=OrderedDict, init=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False)

    def wait(self, client: str) -> float:
        """0 when ``client`` may go now (the request is counted), else the seconds until it may."""
        if self.per_minute <= 0:
            return 0.0
        return self._take(client, 1.0, debt=False)

    def charge(self, client: str, requests: float) -> None:
        """Count ``requests`` more against ``client`` (work one request did that costs as much as that
        many): its bucket may go below empty, and its next requests wait until it has refilled."""
        if self.per_minute <= 0 or requests <= 0:
            return
        self._take(client, requests, debt=True)

    def _take(self, client: str, cost: float, *, debt: bool) -> float:
        """Refill ``client``'s bucket to now and take ``cost`` from it: always when ``debt`` (it may go
        below empty), else only when it holds as much; the seconds until it would (0: taken)."""
        rate = self.per_minute / 60.0
        now = self.clock()
        with self._lock:
            tokens, at = self._buckets.pop(client, (float(self.per_minute), now))
            tokens = min(float(self.per_minute), tokens + (now - at) * rate)
            wait = 0.0
            if debt or tokens >= cost:
                tokens -= cost
            else:
                wait = (cost - tokens) / rate
            self._buckets[client] = (tokens, now)
            while len(self._buckets) > self.max_clients:
                self._buckets.popitem(last=False)
        return wait
