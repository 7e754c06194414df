"""One "now" for the whole site, and the pages say which (#30 item 10; the rule: domain/now.py).

An instance whose newest paper is months old (an archive imported once, an instance switched off) used to
end every topic's sparkline in weeks of zeros up to today, while trending counted its "last 30 days" and
its "24 h old" from the newest paper without saying so. Now trending, the topics' sparklines and weekly
plots, "rising this week" and "For you" all count from the site's "now" — the clock while the store is
current, the newest activity once that is more than a week old — and every page that counts from an
archive's end says so.

The instance is real: papers in three groups of words imported into a SQLite store, embedded by the fake
embedder through the indexing job, topics built by the App's TopicService, served by the real app.
Dates are relative to the real clock, as the App's services read it.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import lxml.html
import pytest
from fastapi.testclient import TestClient

from paperfeed.bootstrap import build_app
from paperfeed.domain.ingest import Batch
from paperfeed.domain.models import Listing, Paper
from paperfeed.domain.topics import week_of
from paperfeed.settings import Settings
from paperfeed.web import create_app
from tests.topics.conftest import GROUPS

HTML = {"accept": "text/html"}
ARCHIVE_DAYS = 99  # the store: newest paper 21 Aug, today 28 Nov


@dataclass
class Instance:
    site: TestClient
    newest: date  # the newest paper's (and listing's) day


def _populate(settings: Settings, newest: date) -> None:
    """40 papers in each group, one a day back from ``newest`` (so ten weeks of them), each listed on its
    day with a few upvotes."""
    papers: list[Paper] = []
    listings: list[Listing] = []
    for g, words in enumerate(GROUPS.values()):
        for i in range(40):
            n = g * 40 + i + 1
            day = newest - timedelta(days=i * 70 // 40)
            papers.append(
                Paper(
                    id=f"2608.{n:05d}",
                    title=f"{words.split()[0].title()} study number {n}",
                    abstract=f"We study {words} in depth.",
                    authors=("Ada Lovelace",),
                    categories=("cs.LG",),
                    published=datetime(day.year, day.month, day.day, 9, tzinfo=UTC),
                    upvotes=1 + n % 7,
                )
            )
            listings.append(Listing(day, f"2608.{n:05d}", "hf-daily", upvotes=1 + n % 7, rank=g))
    app = build_app(settings)
    try:
        app.core.store.apply_batch(Batch(papers=papers, listings=listings))
        app.indexes.indexer.current().run()
        app.catalogue.topics.build()
    finally:
        app.close()


def _instance(folder: Path, behind_days: int) -> Iterator[Instance]:
    settings = Settings(
        data_dir=folder / "data",
        database_url=None,
        embedding_backend="fake",
        keyword_engine="fts5",
        topics_min_papers=30,
        topics_k=3,
    )
    newest = datetime.now(UTC).date() - timedelta(days=behind_days)
    _populate(settings, newest)
    with TestClient(create_app(lambda: build_app(settings)), follow_redirects=False) as site:
        yield Instance(site, newest)


@pytest.fixture(scope="module")
def archive(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Instance]:
    yield from _instance(tmp_path_factory.mktemp("archive"), ARCHIVE_DAYS)


@pytest.fixture(scope="module")
def current(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Instance]:
    yield from _instance(tmp_path_factory.mktemp("current"), 2)


def _text(element: Any) -> str:
    return " ".join("".join(element.itertext()).split())


def _note(html: str) -> str:
    return " ".join(_text(n) for n in lxml.html.fromstring(html).cssselect(".now-note"))


def _label(day: date) -> str:
    return f"{day.day} {day:%b %Y}"


def test_trending_on_an_archive_counts_from_its_newest_papers_and_says_so(archive: Instance) -> None:
    page = archive.site.get("/trending", headers=HTML)
    assert page.status_code == 200
    doc = lxml.html.fromstring(page.text)
    assert len(doc.cssselect("ol.cards article.card")) > 0, "an archive still has a trending list"
    end = archive.newest + timedelta(days=1)  # the end of the newest listed day
    assert f"{ARCHIVE_DAYS} days before today" in _note(page.text)
    assert f"newest papers are from {_label(archive.newest)}" in _note(page.text)
    lede = _text(doc.cssselect(".lede")[0])
    assert f"the 30 days up to {_label(end)} 00:00 UTC, the newest papers" in lede
    ages = [_text(e) for e in doc.cssselect(".extra")]
    assert any(" h old" in a for a in ages), "ages count from the newest papers, not from today"


def test_topic_sparklines_and_plots_end_at_the_archives_last_week_not_in_flat_weeks(
    archive: Instance,
) -> None:
    body = archive.site.get("/api/topics").json()
    last_week = week_of(archive.newest)
    assert body["topics"]
    for topic in body["topics"]:
        weeks = topic["weeks"]
        assert len(weeks) == 26
        assert weeks[-1]["week"] == last_week.isoformat(), "the sparkline ends at the archive's last week"
        assert sum(w["papers"] for w in weeks[-3:]) > 0, f"{topic['label']} ends in flat weeks"
    page = archive.site.get("/topics", headers=HTML)
    assert f"26 weeks up to the week of {_label(last_week)}" in " ".join(page.text.split())
    assert f"{ARCHIVE_DAYS} days before today" in _note(page.text)
    one = body["topics"][0]["id"]
    topic = archive.site.get(f"/topics/{one}", headers=HTML)
    assert f"{ARCHIVE_DAYS} days before today" in _note(topic.text)
    rows = lxml.html.fromstring(topic.text).cssselect(".topic-weeks tbody tr")
    assert _text(rows[-1].cssselect("td")[0]) == last_week.isoformat()


def test_rising_this_week_on_an_archive_is_its_last_week_and_says_so(archive: Instance) -> None:
    body = archive.site.get("/api/topics/rising").json()
    assert body["week"] == week_of(archive.newest).isoformat()
    assert body["heading"] == "Rising this week"
    assert body["now"]["archive"] is True
    assert f"{ARCHIVE_DAYS} days before today" in body["now"]["note"]


def test_a_current_store_counts_from_the_clock_and_says_nothing_more(current: Instance) -> None:
    page = current.site.get("/trending", headers=HTML)
    assert _note(page.text) == ""
    lede = _text(lxml.html.fromstring(page.text).cssselect(".lede")[0])
    assert f"the last 30 days (up to {_label(datetime.now(UTC).date())}" in lede
    body = current.site.get("/api/topics").json()
    this_week = week_of(datetime.now(UTC).date())
    assert all(t["weeks"][-1]["week"] == this_week.isoformat() for t in body["topics"])
    assert _note(current.site.get("/topics", headers=HTML).text) == ""
    rising = current.site.get("/api/topics/rising").json()
    assert rising["now"]["archive"] is False
    assert rising["week"] == this_week.isoformat()
