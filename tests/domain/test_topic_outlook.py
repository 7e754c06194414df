"""What the empty /topics and /map pages say will build the topics, and when (#40 item 8).

Before, both told a reader to run ``paperfeed topics build`` while the running instance builds them itself
(its indexer right after embedding, the daily job at its hour): now they say which one, when, and what it
waits for; the command is named only when nothing that builds them is running.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from paperfeed.domain.indexing_status import IndexerReport
from paperfeed.domain.topic_outlook import TopicsOutlook

NOW = datetime(2026, 11, 26, 12, 0, tzinfo=UTC)


def _report(state: str = "embedding", remaining: int = 900, rate: float | None = 3.0) -> IndexerReport:
    return IndexerReport("host:1:2", state, 100, remaining, rate, NOW)  # type: ignore[arg-type]


def outlook(**changes: object) -> TopicsOutlook:
    facts: dict[str, object] = {
        "papers": 1_000,
        "embedded": 100,
        "needed": 200,
        "indexer": None,
        "building": False,
        "daily_at": None,
        "now": NOW,
    } | changes
    return TopicsOutlook(**facts)  # type: ignore[arg-type]


def test_an_indexer_at_work_builds_them_right_after_it_embeds_and_the_page_says_how_long() -> None:
    (line,) = outlook(indexer=_report()).sentences()
    assert line == (
        "This instance's indexer builds the topics by itself: 900 papers still to embed, about 5 min at its "
        "pace; it builds the topics right after."
    )
    assert "paperfeed topics build" not in line


def test_an_idle_indexer_with_everything_embedded_builds_them_at_its_next_check() -> None:
    (line,) = outlook(embedded=1_000, indexer=_report("idle", 0)).sentences()
    assert "builds the topics at its next check, within a minute" in line


def test_without_an_indexer_the_daily_job_builds_them_at_its_hour() -> None:
    (line,) = outlook(daily_at=NOW + timedelta(hours=17, minutes=30)).sentences()
    assert line == (
        "The daily job embeds the papers and builds the topics at 05:30 UTC (in 17 h 30 min) "
        "(100 papers of 1,000 have a vector so far)."
    )


def test_too_few_papers_says_how_many_are_needed_and_what_brings_more() -> None:
    lines = outlook(papers=12, embedded=12, daily_at=NOW + timedelta(hours=2)).sentences()
    assert lines == [
        "Topics need at least 200 papers; this instance has 12 so far.",
        "The daily job fetches new papers at 14:00 UTC (in 2 h) and builds the topics once there are enough.",
    ]


def test_a_build_under_way_is_said_as_such() -> None:
    assert outlook(building=True, indexer=_report()).sentences() == [
        "The topics are being built right now: this page shows them once the build is done."
    ]


def test_only_when_nothing_runs_are_the_commands_named_and_a_failure_is_said() -> None:
    lines = outlook(failed="too few papers for topics").sentences()
    assert "No indexer or scheduler of this instance is running" in lines[0]
    assert "`paperfeed run`" in lines[0]
    assert "`paperfeed topics build`" in lines[0]
    assert lines[1] == "The last attempt failed: too few papers for topics"
