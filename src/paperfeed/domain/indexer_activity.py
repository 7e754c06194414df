"""What the embedding indexer is doing, as the readers of the vector index need to know it.

"Meaning search covers 0 of 739,000 papers: they are still being indexed" was wrong when no indexer ran
at all (issue #30, item 12). An indexer (``paperfeed index``, ``index --follow`` under ``paperfeed run``,
the daily job's index step) publishes an :class:`IndexerActivity` while it works; the coverage notice,
``paperfeed stats`` and /admin/jobs read it through :class:`IndexerActivityStore` and say what is true:
an indexer is embedding at this rate with this much left, or none is running and which command starts one.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Literal, Protocol

__all__ = ["IndexerActivity", "IndexerActivityStore", "current_activity", "describe_duration"]

IndexerState = Literal["embedding", "idle"]

# An entry of a process on another host (a PostgreSQL deployment's indexer node) cannot be checked for
# life; it counts while it was updated this recently (an embedding indexer writes every few seconds, an
# idle one at every look for new papers).
STALE_AFTER = timedelta(minutes=10)


@dataclass(frozen=True, slots=True)
class IndexerActivity:
    """One indexer process: ``holder`` is ``host:pid:start`` (:func:`services.jobs.process_identity`)."""

    holder: str
    state: IndexerState
    started_at: datetime
    updated_at: datetime
    embedded: int = 0  # papers embedded by this process since it started
    backlog: int = 0  # papers still to embed at its last update
    rate: float = 0.0  # papers per second over its current run (0: not measured yet)

    @property
    def pid(self) -> int:
        parts = self.holder.split(":")
        return int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else 0

    def to_json(self) -> dict[str, object]:
        return {
            "holder": self.holder,
            "state": self.state,
            "started_at": self.started_at.isoformat(),
            "updated_at": self.updated_at.isoformat(),
            "embedded": self.embedded,
            "backlog": self.backlog,
            "rate": self.rate,
        }

    @staticmethod
    def from_json(value: dict[str, object]) -> IndexerActivity | None:
        """None for an entry that is not one (a hand-edited or half-understood file is skipped)."""
        try:
            state = str(value["state"])
            if state not in ("embedding", "idle"):
                return None
            return IndexerActivity(
                holder=str(value["holder"]),
                state="embedding" if state == "embedding" else "idle",
                started_at=_aware(datetime.fromisoformat(str(value["started_at"]))),
                updated_at=_aware(datetime.fromisoformat(str(value["updated_at"]))),
                embedded=int(str(value.get("embedded", 0))),
                backlog=int(str(value.get("backlog", 0))),
                rate=float(str(value.get("rate", 0.0))),
            )
        except (KeyError, TypeError, ValueError):
            return None

    def remaining_seconds(self) -> float | None:
        """How long the backlog takes at the measured rate (None: not embedding, or no rate yet)."""
        if self.state != "embedding" or self.rate <= 0:
            return None
        return self.backlog / self.rate

    def phrase(self) -> str:
        """``embedding at 9.3 papers/s, about 16 min left`` / ``waiting for new papers``."""
        if self.state == "idle":
            return "waiting for new papers"
        if self.rate <= 0:
            return f"embedding ({self.backlog:,} papers to go)"
        left = self.remaining_seconds()
        tail = f", about {describe_duration(left)} left" if left is not None else ""
        return f"embedding at {self.rate:,.1f} papers/s{tail}"


class IndexerActivityStore(Protocol):
    """Where indexers publish what they do (one entry per process) and readers find it."""

    def publish(self, activity: IndexerActivity) -> None:
        """Replace this process's entry atomically."""
        ...

    def withdraw(self, holder: str) -> None:
        """Remove this process's entry (it is exiting)."""
        ...

    def read_all(self) -> list[IndexerActivity]:
        """Every entry found, live or not."""
        ...


def current_activity(
    entries: list[IndexerActivity], *, is_dead: Callable[[str], bool], now: datetime
) -> IndexerActivity | None:
    """The indexer that matters to a reader: an embedding one before an idle one, the most recently
    updated first; entries of processes that are gone (or not heard of for :data:`STALE_AFTER`) are not."""
    live = [a for a in entries if not is_dead(a.holder) and now - a.updated_at <= STALE_AFTER]
    if not live:
        return None
    return max(live, key=lambda a: (a.state == "embedding", a.updated_at))


def describe_duration(seconds: float) -> str:
    """``40 s``, ``16 min``, ``3 h 20 min``, ``2 days``: a remaining time as a person would say it."""
    if seconds < 60:
        return f"{max(1, round(seconds))} s"
    minutes = round(seconds / 60)
    if minutes < 60:
        return f"{minutes} min"
    hours, minutes = divmod(minutes, 60)
    if hours < 48:
        return f"{hours} h {minutes} min" if minutes else f"{hours} h"
    return f"{round(hours / 24)} days"


def _aware(moment: datetime) -> datetime:
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)
