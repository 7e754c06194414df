"""When this instance will build its topics, said to a reader of /topics and /map before there are any.

The running instance builds them itself: the indexer (``paperfeed index --follow``, which ``paperfeed run``
keeps going) builds them as soon as it has embedded what arrived, and the daily job's ``topics`` step
builds them at its hour (``PAPERFEED_JOBS_DAILY_AT``), both once at least ``PAPERFEED_TOPICS_MIN_PAPERS``
papers have a vector. :class:`TopicsOutlook` holds what is true now (counts, the indexer's last report,
whether a build or a scheduler is running) and :meth:`~TopicsOutlook.sentences` says it, so the empty
pages point at what will happen instead of at a command a reader cannot run (#40 item 8).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from .coverage import describe_duration
from .indexing_status import IndexerReport

__all__ = ["TopicsOutlook"]


def _n(count: int, word: str) -> str:
    return f"{count:,} {word}" + ("" if count == 1 else "s")


@dataclass(frozen=True, slots=True)
class TopicsOutlook:
    """The facts behind the empty topics pages; ``now`` and ``daily_at`` are aware datetimes (UTC)."""

    papers: int  # papers in the store
    embedded: int  # of them, with a vector of the model topics are built from
    needed: int  # PAPERFEED_TOPICS_MIN_PAPERS
    indexer: IndexerReport | None  # the last report of an indexer that is alive (None: none runs)
    building: bool  # a topics build holds its lease right now
    daily_at: datetime | None  # the daily job's next run, when a scheduler is running (else None)
    now: datetime
    failed: str | None = None  # the last topics run's error, when it failed

    def _when_daily(self) -> str:
        assert self.daily_at is not None
        wait = max((self.daily_at - self.now).total_seconds(), 0)
        return f"at {self.daily_at:%H:%M} UTC (in {describe_duration(wait)})"

    def _indexer_pace(self) -> str:
        report = self.indexer
        assert report is not None
        left = max(self.papers - self.embedded, report.remaining if report.state == "embedding" else 0)
        if left == 0:
            return "it has embedded every paper and builds the topics at its next check, within a minute"
        pace = f", about {describe_duration(left / report.rate)} at its pace" if report.rate else ""
        return f"{_n(left, 'paper')} still to embed{pace}; it builds the topics right after"

    def sentences(self) -> list[str]:
        """What a reader is told: what builds the topics, when, and what it waits for."""
        if self.building:
            return ["The topics are being built right now: this page shows them once the build is done."]
        out: list[str] = []
        if self.papers < self.needed:
            out.append(
                f"Topics need at least {_n(self.needed, 'paper')}; this instance has {self.papers:,} so far."
            )
            if self.daily_at is not None:
                out.append(
                    f"The daily job fetches new papers {self._when_daily()} and builds the topics once "
                    "there are enough."
                )
            elif self.indexer is not None:
                out.append("Its indexer builds them as soon as enough papers have arrived and been embedded.")
            else:
                out.append(self._nothing_runs())
        elif self.indexer is not None:
            out.append(f"This instance's indexer builds the topics by itself: {self._indexer_pace()}.")
        elif self.daily_at is not None:
            out.append(
                f"The daily job embeds the papers and builds the topics {self._when_daily()}"
                + (
                    f" ({_n(self.embedded, 'paper')} of {self.papers:,} have a vector so far)."
                    if self.embedded < self.papers
                    else "."
                )
            )
        else:
            out.append(self._nothing_runs())
        if self.failed:
            out.append(f"The last attempt failed: {self.failed}")
        return out

    @staticmethod
    def _nothing_runs() -> str:
        return (
            "No indexer or scheduler of this instance is running, so nothing builds them yet: its "
            "administrator starts `paperfeed run` (which keeps both going) or builds them now with "
            "`paperfeed topics build`."
        )
