"""The site's "now" (domain/now.py): the clock while the store is current, its newest activity once that
is more than a week behind (an archive)."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta

from paperfeed.domain.now import ARCHIVE_AFTER, site_now

CLOCK = datetime(2026, 11, 28, 14, 5, tzinfo=UTC)


def test_a_store_a_few_days_behind_is_current_and_counts_from_the_clock() -> None:
    for behind in (timedelta(0), timedelta(hours=15), timedelta(days=3), ARCHIVE_AFTER):
        now = site_now(CLOCK, CLOCK - behind)
        assert now.at == CLOCK
        assert not now.archive
        assert now.note() is None
        assert now.label() == "28 Nov 2026 14:05 UTC, now"


def test_a_store_more_than_a_week_behind_is_an_archive_and_counts_from_its_newest_paper() -> None:
    newest = datetime(2026, 8, 22, tzinfo=UTC)  # the end of 21 Aug, the newest listed day
    now = site_now(CLOCK, newest)
    assert now.at == newest
    assert now.archive
    assert now.today == date(2026, 8, 21), "the end of a listed day belongs to that day"
    assert now.behind == CLOCK - newest
    assert now.note() == (
        "This instance's newest papers are from 21 Aug 2026, 99 days before today (28 Nov 2026): "
        "ages, weeks and “this week” here count from then, not from today."
    )
    assert now.label() == "22 Aug 2026 00:00 UTC, the end of the newest papers"
    assert site_now(CLOCK, CLOCK - ARCHIVE_AFTER - timedelta(seconds=1)).at != CLOCK


def test_an_empty_store_or_a_future_listing_counts_from_the_clock() -> None:
    assert site_now(CLOCK, None).at == CLOCK
    tomorrow = CLOCK + timedelta(days=1)  # the end of today's listed day
    assert site_now(CLOCK, tomorrow).at == CLOCK
    assert not site_now(CLOCK, tomorrow).archive
