"""The search notice while meaning search does not cover every paper, and how often its counts are taken.

It says what is true (issue #30, item 12): with no indexer running, "still being indexed" was false for
739k imported papers; it now says none runs and which command starts one.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

from paperfeed.domain.coverage import SearchCoverage, describe_duration
from paperfeed.domain.indexing_status import IndexerReport
from paperfeed.services.coverage import CoverageService

NOW = datetime(2026, 11, 28, 12, tzinfo=UTC)


class _Papers:
    """The store's count of papers (:class:`~paperfeed.domain.coverage.PaperCount`)."""

    def __init__(self, count: Callable[[], int]) -> None:
        self.count = count

    def count_papers(self) -> int:
        return self.count()


class _Vectors:
    """A vector index of ``count()`` papers (None: unreadable)."""

    def __init__(self, count: Callable[[], int | None]) -> None:
        self._count = count

    def current(self) -> None:
        return None

    def count(self) -> int | None:
        return self._count()


class _NoIndexer:
    def activity(self) -> IndexerReport | None:
        return None


def activity(state: str = "embedding", *, rate: float | None = 9.3, remaining: int = 9000) -> IndexerReport:
    found = IndexerReport.from_json(
        {"holder": "host:123:456", "state": state, "embedded": 100, "remaining": remaining, "rate": rate}
        | {"at": NOW.isoformat()}
    )
    assert found is not None
    return found


def test_with_no_indexer_running_the_notice_says_so_and_names_the_command() -> None:
    said = SearchCoverage(0, 739_000).note(None)
    assert said is not None
    assert said.startswith("Meaning search covers none of the 739,000 papers yet: 739,000 have no vector")
    assert "no indexer is running" in said
    assert "`paperfeed index`" in said
    assert "still being indexed" not in said


def test_with_an_indexer_at_work_it_gives_its_rate_and_the_time_left() -> None:
    said = SearchCoverage(1200, 3400).note(activity(rate=2.0, remaining=2200))
    assert said == (
        "Meaning search covers 1,200 of 3,400 papers: the indexer is embedding at 2.0 papers/s, about "
        "18 min left; until then, results for the 2,200 others are keyword matches."
    )
    idle = SearchCoverage(3390, 3400).note(activity("idle", rate=None, remaining=0))
    assert idle is not None
    assert "will embed the 10 new ones at its next look" in idle


def test_no_notice_when_everything_or_nothing_is_there() -> None:
    assert SearchCoverage(3400, 3400).note() is None
    assert SearchCoverage(3401, 3400).note() is None  # deleted papers still in the index
    assert SearchCoverage(0, 0).note() is None


def test_an_indexer_before_its_first_batch_is_embedding_without_a_rate() -> None:
    said = SearchCoverage(0, 50).note(activity(rate=None, remaining=50))
    assert said is not None
    assert "the indexer is embedding them; until then" in said


def test_durations_read_as_a_person_would_say_them() -> None:
    assert [describe_duration(s) for s in (3, 59, 600, 3600, 12_000, 400_000)] == [
        "3 s",
        "59 s",
        "10 min",
        "1 h",
        "3 h 20 min",
        "5 days",
    ]


def test_the_papers_count_is_cached_for_ttl_seconds_the_index_size_is_read_every_time() -> None:
    now = [100.0]
    counted = {"papers": 0, "indexed": 0}
    state = {"papers": 10, "indexed": 4}

    def papers() -> int:
        counted["papers"] += 1
        return state["papers"]

    def indexed() -> int:
        counted["indexed"] += 1
        return state["indexed"]

    service = CoverageService(_Papers(papers), _Vectors(indexed), _NoIndexer(), ttl=30, clock=lambda: now[0])
    assert service.coverage() == SearchCoverage(4, 10)
    state["indexed"] = 10
    now[0] += 29
    assert service.note() is None  # the indexer finished: the notice goes at once
    assert counted == {"papers": 1, "indexed": 2}
    state["papers"] = 12
    assert service.coverage() == SearchCoverage(10, 10)  # papers still the cached count
    now[0] += 2
    assert service.coverage() == SearchCoverage(10, 12)
    state["papers"] = 13
    service.forget()
    assert service.coverage() == SearchCoverage(10, 13)
    assert counted["papers"] == 3


def test_an_unreadable_index_gives_no_counts() -> None:
    service = CoverageService(_Papers(lambda: 10), _Vectors(lambda: None), _NoIndexer())
    assert service.coverage() is None
    assert service.note() is None
