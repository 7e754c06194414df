"""How far embedding has come and whether an indexer is at work: what /admin/jobs says about indexing.

An indexing process (``paperfeed index``, the indexer ``paperfeed run`` supervises, the daily job's index
step) reports itself through :class:`IndexerReports` (the store keeps the newest report): who it is, what
it is doing, how many papers it embedded in its current run, how many were left and how fast it went.
:class:`IndexingStatus` puts that next to the counts (papers with a vector of the configured model, the
vector index search reads) and says in sentences what is true: how many papers still have no vector,
whether an indexer is running and at what rate, or which command starts one.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Literal, Protocol

__all__ = [
    "INDEXER_REPORT_CHECKPOINT",
    "STALE_AFTER",
    "IndexerReport",
    "IndexerReportReader",
    "IndexerReports",
    "IndexerState",
    "IndexerWatch",
    "IndexingStatus",
]

IndexerState = Literal["embedding", "idle", "stopped"]
INDEXER_REPORT_CHECKPOINT = "indexer-report"  # where a SQL store keeps the newest report (as JSON)
STALE_AFTER = timedelta(minutes=10)  # an embedding report older than this: the indexer may be stuck


@dataclass(frozen=True, slots=True)
class IndexerReport:
    """What an indexing process last said of itself."""

    holder: str  # host:pid:start (services/jobs.process_identity), so a dead process is recognised
    state: IndexerState  # embedding a backlog; idle (nothing to embed, still watching); stopped (exited)
    embedded: int  # papers embedded in its current run
    remaining: int  # papers still without a vector when it reported
    rate: float | None  # papers per second over its current run (None before its first batch)
    at: datetime

    def to_json(self) -> dict[str, object]:
        return {
            "holder": self.holder,
            "state": self.state,
            "embedded": self.embedded,
            "remaining": self.remaining,
            "rate": self.rate,
            "at": self.at.isoformat(),
        }

    @staticmethod
    def from_json(value: dict[str, object]) -> IndexerReport | None:
        """The report :meth:`to_json` wrote; None for anything else (a damaged value reads as no report)."""
        try:
            state = str(value["state"])
            if state not in ("embedding", "idle", "stopped"):
                return None
            rate = value.get("rate")
            at = datetime.fromisoformat(str(value["at"]))
            embedded, remaining = value.get("embedded"), value.get("remaining")
            return IndexerReport(
                holder=str(value["holder"]),
                state=state,  # type: ignore[arg-type]  # checked against the three states above
                embedded=embedded if isinstance(embedded, int) else 0,
                remaining=remaining if isinstance(remaining, int) else 0,
                rate=float(rate) if isinstance(rate, int | float) else None,
                at=at if at.tzinfo else at.replace(tzinfo=UTC),
            )
        except (KeyError, TypeError, ValueError):
            return None


class IndexerReportReader(Protocol):
    """The newest report an indexing process left (the store; on SQLite also the stdlib reader)."""

    def indexer_report(self) -> IndexerReport | None: ...


class IndexerWatch(Protocol):
    """The indexer at work, if one runs (``services/indexer_status.py``): its newest report, when its
    process is alive and it did not stop."""

    def activity(self) -> IndexerReport | None: ...


class IndexerReports(IndexerReportReader, Protocol):
    """Where indexing processes leave their newest report (the store, so every node's admin sees it)."""

    def report_indexer(self, report: IndexerReport) -> None: ...


def _count(n: int) -> str:
    return f"{n:,}"


def _ago(delta: timedelta) -> str:
    seconds = max(0, int(delta.total_seconds()))
    if seconds < 90:
        return f"{seconds} s ago"
    if seconds < 90 * 60:
        return f"{seconds // 60} min ago"
    if seconds < 48 * 3600:
        return f"{seconds // 3600} h ago"
    return f"{seconds // 86400} days ago"


def _duration(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 90 * 60:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def _who(holder: str) -> str:
    host, _, rest = holder.partition(":")
    pid = rest.split(":", 1)[0]
    return f"pid {pid} on {host}" if pid else holder


@dataclass(frozen=True, slots=True)
class IndexingStatus:
    """The embedding counts and the newest indexer report, as of ``now``.

    ``alive`` says whether the reporting process still runs: False when it is gone (same host: its pid is
    dead) or said it stopped, True otherwise (a process on another host cannot be checked from here)."""

    model_id: str
    papers: int
    backlog: int  # papers without a vector of ``model_id`` for their current text
    indexed: int | None  # papers in the vector index search reads (None: it cannot be read)
    report: IndexerReport | None
    alive: bool
    now: datetime
    other_models: dict[str, int] = field(default_factory=dict)  # vectors of models being replaced

    @property
    def embedded(self) -> int:
        return max(0, self.papers - self.backlog)

    @property
    def share(self) -> float:
        """The share of papers with a vector (1.0 for an empty store: nothing is missing)."""
        return self.embedded / self.papers if self.papers else 1.0

    @property
    def running(self) -> bool:
        """An indexer process is alive (embedding or watching for new papers)."""
        return self.report is not None and self.alive and self.report.state != "stopped"

    def coverage_line(self) -> str:
        if not self.papers:
            return "No papers yet: nothing to embed."
        if not self.backlog:
            return f"All {_count(self.papers)} papers have a vector of {self.model_id}."
        return (
            f"{_count(self.embedded)} of {_count(self.papers)} papers have a vector of {self.model_id} "
            f"({self.share:.1%}); {_count(self.backlog)} still have none."
        )

    def index_line(self) -> str | None:
        if self.indexed is None:
            return "The vector index cannot be read: meaning search is off (see `paperfeed check`)."
        if self.indexed == self.embedded or not self.papers:
            return None
        return (
            f"Meaning search covers {_count(self.indexed)} of them: the vector index takes in new vectors "
            "after each slice the indexer embeds."
        )

    def models_line(self) -> str | None:
        if not self.other_models:
            return None
        older = ", ".join(f"{_count(n)} of {m}" for m, n in sorted(self.other_models.items()))
        return f"Vectors of another model wait to be replaced: {older}."

    def indexer_line(self) -> str:
        report = self.report
        if report is None:
            return self._start_advice("No indexer has run yet.")
        age = self.now - report.at
        who = _who(report.holder)
        if not self.running:
            ended = "stopped" if report.state == "stopped" else "is gone (its process ended)"
            return self._start_advice(f"The last indexer ({who}) {ended} {_ago(age)}.")
        if report.state == "idle":
            return f"An indexer is running ({who}), waiting for new papers; it last reported {_ago(age)}."
        rate = report.rate
        pace = f" at {rate:,.1f} papers/s" if rate else ""
        left = f"; about {_duration(self.backlog / rate)} left" if rate and self.backlog else ""
        stale = " — no report for a while: is it stuck?" if age > STALE_AFTER else ""
        return f"An indexer is embedding ({who}){pace}{left}; it last reported {_ago(age)}{stale}."

    def _start_advice(self, said: str) -> str:
        if not self.backlog:
            return said
        return (
            f"{said} Nothing is embedding the {_count(self.backlog)} papers without a vector: "
            "`paperfeed run` starts an indexer with the server, `paperfeed index` embeds them once."
        )

    def lines(self) -> list[str]:
        """Every sentence, in the order a page shows them."""
        return [
            line
            for line in (self.coverage_line(), self.index_line(), self.models_line(), self.indexer_line())
            if line
        ]
