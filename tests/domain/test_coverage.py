"""The search notice while meaning search is being built, and how often its counts are taken."""

from __future__ import annotations

from paperfeed.domain.coverage import SearchCoverage
from paperfeed.services.coverage import CoverageService


def test_the_notice_says_how_many_papers_meaning_search_covers() -> None:
    assert SearchCoverage(1200, 3400).note() == (
        "Meaning search covers 1,200 of 3,400 papers; the rest are still being indexed."
    )
    assert SearchCoverage(0, 3400).note() == (
        "Meaning search covers none of the 3,400 papers yet: they are still being indexed, "
        "so results are keyword matches for now."
    )


def test_no_notice_when_everything_or_nothing_is_there() -> None:
    assert SearchCoverage(3400, 3400).note() is None
    assert SearchCoverage(3401, 3400).note() is None  # deleted papers still in the index
    assert SearchCoverage(0, 0).note() is None


def test_counts_are_cached_for_ttl_seconds_and_forgotten_on_demand() -> None:
    now = [100.0]
    counted = {"papers": 0, "indexed": 0}
    state = {"papers": 10, "indexed": 4}

    def papers() -> int:
        counted["papers"] += 1
        return state["papers"]

    def indexed() -> int:
        counted["indexed"] += 1
        return state["indexed"]

    service = CoverageService(papers, indexed, ttl=30, clock=lambda: now[0])
    assert service.note() == "Meaning search covers 4 of 10 papers; the rest are still being indexed."
    state["indexed"] = 10
    now[0] += 29
    assert service.coverage() == SearchCoverage(4, 10)  # still the cached counts
    assert counted == {"papers": 1, "indexed": 1}
    now[0] += 2
    assert service.note() is None
    state["papers"] = 12
    service.forget()
    assert service.coverage() == SearchCoverage(10, 12)
    assert counted == {"papers": 3, "indexed": 3}


def test_an_unreadable_index_gives_no_counts() -> None:
    service = CoverageService(lambda: 10, lambda: None)
    assert service.coverage() is None
    assert service.note() is None
