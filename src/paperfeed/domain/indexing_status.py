"""How far embedding has come and whether an indexer is at work: what /admin/jobs says about indexing.

An indexing process (``paperfeed index``, the indexer ``paperfeed run`` supervises, the daily job's index
step) reports itself through :class:`IndexerReports` (the store keeps the newest report): who it is, what
it is doing, how many papers it embedded in its current run, how many were left and how fast it went.
:class:`IndexingStatus` puts that next to the counts (papers with a vector of the configured model, the
vector index search reads) and says in sentences what is true: how many papers still have no vector,
whether an indexer is running and at what rate, or which command starts one.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Literal, Protocol, get_args

from .wording import agree, count, every

__all__ = [
    "INDEXER_REPORT_CHECKPOINT",
    "STALE_AFTER",
    "IndexerReport",
    "IndexerReportReader",
    "IndexerReports",
    "IndexerState",
    "IndexerWatch",
    "IndexingStatus",
    "RateWindow",
    "SentenceCounts",
    "describe_duration",
]

# What an indexing process is doing: embedding papers (their vectors), splitting and embedding the
# papers' sentences (the second pass), updating the topics; idle (nothing to do, still watching); stopped.
IndexerState = Literal["embedding", "sentences", "topics", "idle", "stopped"]
STATES: tuple[IndexerState, ...] = get_args(IndexerState)
WORKING: frozenset[IndexerState] = frozenset({"embedding", "sentences", "topics"})
INDEXER_REPORT_CHECKPOINT = "indexer-report"  # where a SQL store keeps the newest report (as JSON)
STALE_AFTER = timedelta(minutes=10)  # an embedding report older than this: the indexer may be stuck


@dataclass(frozen=True, slots=True)
class IndexerReport:
    """What an indexing process last said of itself."""

    holder: str  # host:pid:start (services/jobs.process_identity), so a dead process is recognised
    state: IndexerState  # see IndexerState
    embedded: int  # papers done in its current phase (vectors embedded, or papers' sentences made)
    remaining: int  # papers still without a vector when it reported
    rate: float | None  # papers per second of the current phase, over recent progress (None: not yet known)
    at: datetime
    sentences_left: int | None = None  # papers whose sentences are still to make (None: not counted)

    @property
    def left(self) -> int:
        """The papers the current phase still has to do (its backlog when it reported)."""
        if self.state == "sentences":
            return self.sentences_left or 0
        return self.remaining if self.state == "embedding" else 0

    def seconds_left(self, now: datetime) -> float | None:
        """How long the current phase will still take: what was left at the report over the rate of recent
        progress, less the time since the report; None without a rate (before its first measured batches)."""
        if not self.rate or not self.left:
            return None
        return max(1.0, self.left / self.rate - max(0.0, (now - self.at).total_seconds()))

    def to_json(self) -> dict[str, object]:
        return {
            "holder": self.holder,
            "state": self.state,
            "embedded": self.embedded,
            "remaining": self.remaining,
            "rate": self.rate,
            "at": self.at.isoformat(),
            "sentences_left": self.sentences_left,
        }

    @staticmethod
    def from_json(value: dict[str, object]) -> IndexerReport | None:
        """The report :meth:`to_json` wrote; None for anything else (a damaged value reads as no report)."""
        try:
            state = str(value["state"])
            if state not in STATES:
                return None
            rate = value.get("rate")
            at = datetime.fromisoformat(str(value["at"]))
            embedded, remaining = value.get("embedded"), value.get("remaining")
            sentences = value.get("sentences_left")
            return IndexerReport(
                holder=str(value["holder"]),
                state=state,  # narrowed to IndexerState by the check against STATES above
                embedded=embedded if isinstance(embedded, int) else 0,
                remaining=remaining if isinstance(remaining, int) else 0,
                rate=float(rate) if isinstance(rate, int | float) else None,
                at=at if at.tzinfo else at.replace(tzinfo=UTC),
                sentences_left=sentences if isinstance(sentences, int) else None,
            )
        except (KeyError, TypeError, ValueError):
            return None


class RateWindow:
    """Papers per second over the recent progress of one phase of work: a sliding window of
    ``(time, papers done)`` points, so the time-left estimate follows the pace of now, not the average
    since the start (which counts the model's loading and a slower phase before it).

    :meth:`restart` begins a phase; :meth:`add` counts papers done (the first point is only an anchor); the
    rate is the papers done between the oldest point still in the window and the newest, over the time
    between them (None until two points span more than ``min_span`` seconds)."""

    def __init__(self, window: float = 120.0, min_span: float = 0.0) -> None:
        self.window, self.min_span = window, min_span
        self._points: deque[tuple[float, int]] = deque()
        self._done = 0

    def restart(self) -> None:
        """A phase (re)starts: forget the points of the last one."""
        self._points.clear()
        self._done = 0

    def add(self, now: float, papers: int) -> None:
        """``papers`` more were done by ``now``. The first point after :meth:`restart` is the anchor only:
        the time its papers took (a model loading, a backlog query) is not known."""
        if not self._points:
            self._points.append((now, 0))
            return
        self._done += papers
        self._points.append((now, self._done))
        # keep one point at or before the window's start, so the rate spans the whole window
        while len(self._points) > 2 and self._points[1][0] <= now - self.window:
            self._points.popleft()

    def rate(self) -> float | None:
        if len(self._points) < 2:
            return None
        (t0, d0), (t1, d1) = self._points[0], self._points[-1]
        if t1 - t0 <= self.min_span or d1 <= d0:
            return None
        return (d1 - d0) / (t1 - t0)


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
    return count(round(hours / 24), "day")


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


def _ago(delta: timedelta) -> str:
    seconds = max(0, int(delta.total_seconds()))
    if seconds < 90:
        return f"{seconds} s ago"
    if seconds < 90 * 60:
        return f"{seconds // 60} min ago"
    if seconds < 48 * 3600:
        return f"{seconds // 3600} h ago"
    return f"{count(seconds // 86400, 'day')} ago"


def _who(holder: str) -> str:
    host, _, rest = holder.partition(":")
    pid = rest.split(":", 1)[0]
    return f"pid {pid} on {host}" if pid else holder


@dataclass(frozen=True, slots=True)
class SentenceCounts:
    """How far the indexer's second pass is: papers whose sentences are made for the current model, papers
    still to do, and papers whose one-line summary is still to choose from stored sentences."""

    done: int
    backlog: int
    summaries: int = 0


def pace(report: IndexerReport, now: datetime) -> str:
    """`` at 9.3 papers/s, about 16 min left`` for the phase a working indexer reported (the rate of its
    recent progress), or nothing before the rate is known."""
    if not report.rate:
        return ""
    left = report.seconds_left(now)
    return f" at {report.rate:,.1f} papers/s" + (f", about {describe_duration(left)} left" if left else "")


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
    sentences: SentenceCounts | None = None  # the second pass (None: not counted)

    @property
    def embedded(self) -> int:
        return max(0, self.papers - self.backlog)

    @property
    def share(self) -> float:
        """The share of papers with a vector (1.0 for an empty store: nothing is missing)."""
        return self.embedded / self.papers if self.papers else 1.0

    @property
    def running(self) -> bool:
        """An indexer process is alive (at work or watching for new papers)."""
        return self.report is not None and self.alive and self.report.state != "stopped"

    @property
    def sentence_backlog(self) -> int:
        return self.sentences.backlog if self.sentences is not None else 0

    def coverage_line(self) -> str:
        if not self.papers:
            return "No papers yet: nothing to embed."
        if not self.backlog:
            has = agree(self.papers, "has", "have")
            return f"{every(self.papers, 'paper').capitalize()} {has} a vector of {self.model_id}."
        return (
            f"{self.embedded:,} of {count(self.papers, 'paper')} {agree(self.embedded, 'has', 'have')} a "
            f"vector of {self.model_id} ({self.share:.1%}); {self.backlog:,} still "
            f"{agree(self.backlog, 'has', 'have')} none."
        )

    def index_line(self) -> str | None:
        if self.indexed is None:
            return "The vector index cannot be read: meaning search is off (see `paperfeed check`)."
        if self.indexed == self.embedded or not self.papers:
            return None
        return (
            f"Meaning search covers {self.indexed:,} of them: the vector index takes in new vectors "
            "after each batch the indexer embeds."
        )

    def models_line(self) -> str | None:
        if not self.other_models:
            return None
        older = ", ".join(f"{n:,} of {m}" for m, n in sorted(self.other_models.items()))
        return f"Vectors of another model wait to be replaced: {older}."

    def sentences_line(self) -> str | None:
        """How far the second pass is: the papers' sentences (split, embedded, given their roles)."""
        found = self.sentences
        if found is None or not self.papers:
            return None
        if not found.backlog:
            line = "Sentences: every paper's abstract is split into sentences, embedded and given its roles"
            if found.summaries:
                line += f"; {count(found.summaries, 'one-line summary')} still to choose from them"
            return line + "."
        report = self.report
        doing = ""
        if self.running and report is not None and report.state == "sentences":
            doing = f"; the indexer is making them{pace(report, self.now)}"
        elif self.running and report is not None and report.state == "embedding":
            doing = "; the indexer makes them once the papers' vectors are done"
        return (
            f"Sentences: {count(found.done, 'paper')} done, {found.backlog:,} to do (their abstracts "
            f"split into sentences, embedded and given their roles){doing}."
        )

    def indexer_line(self) -> str:
        report = self.report
        if report is None:
            return self._start_advice("No indexer has run yet.")
        age = self.now - report.at
        who = _who(report.holder)
        if not self.running:
            ended = "stopped" if report.state == "stopped" else "is gone (its process ended)"
            return self._start_advice(f"The last indexer ({who}) {ended} {_ago(age)}.")
        stale = " — no report for a while: is it stuck?" if age > STALE_AFTER else ""
        waiting = ""
        if self.backlog and report.state in ("sentences", "topics"):
            waiting = f"; the {count(self.backlog, 'paper')} without a vector come next"
        if report.state == "idle":
            if self.backlog:
                return (
                    f"An indexer is running ({who}): it embeds the {count(self.backlog, 'paper')} without "
                    f"a vector at its next look; it last reported {_ago(age)}."
                )
            return f"An indexer is running ({who}), waiting for new papers; it last reported {_ago(age)}."
        if report.state == "topics":
            return f"An indexer is updating the topics ({who}){waiting}; it last reported {_ago(age)}{stale}."
        if report.state == "sentences":
            return (
                f"An indexer is making the papers' sentences ({who}){pace(report, self.now)}{waiting}; it "
                f"last reported {_ago(age)}{stale}."
            )
        pace_ = ""
        if report.rate:  # the backlog counted now, at the pace of its recent batches
            pace_ = f" at {report.rate:,.1f} papers/s"
            if self.backlog:
                pace_ += f", about {describe_duration(self.backlog / report.rate)} left"
        return f"An indexer is embedding ({who}){pace_}; it last reported {_ago(age)}{stale}."

    def _start_advice(self, said: str) -> str:
        if self.backlog:
            return (
                f"{said} Nothing is embedding the {count(self.backlog, 'paper')} without a vector: "
                "`paperfeed run` starts an indexer with the server, `paperfeed index` embeds them once."
            )
        if self.sentence_backlog:
            return (
                f"{said} Nothing is making the sentences of the {count(self.sentence_backlog, 'paper')} "
                "left: `paperfeed run` starts an indexer with the server, `paperfeed index` makes them once."
            )
        return said

    def lines(self) -> list[str]:
        """Every sentence, in the order a page shows them."""
        found = (
            self.coverage_line(),
            self.index_line(),
            self.models_line(),
            self.sentences_line(),
            self.indexer_line(),
        )
        return [line for line in found if line]
