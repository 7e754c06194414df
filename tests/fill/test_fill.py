"""First-start fill of the window and catch-up of missed days, against recorded responses on loopback.

The Hugging Face bodies are the four recorded ``api/daily_papers`` responses, two on their own days and
two mapped into the window, other days answered ``[]`` (as HF answers a day without papers). The arXiv
bodies are recorded API feeds; they are relevance-ordered search results, not a real newest-first listing,
which is enough to drive the listing's paging, floor, bound, resume and error handling with real bytes.
"""

from __future__ import annotations

import json
import re
from dataclasses import replace
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import pytest

from paperfeed.domain.fill import (
    CATEGORIES_KEY,
    ListingState,
    SilentReporter,
    hf_day_key,
    listing_key,
)
from paperfeed.services.pipeline import DailyPipeline
from tests.support.defaults import DEFAULTS, comma_list
from tests.support.http_server import ReplayServer, Reply

from .conftest import (
    ARXIV_PATH,
    ATOM,
    HF_PATH,
    NOW,
    Builder,
    arxiv_body,
    arxiv_recorded,
    arxiv_requests,
    expected_top,
    hf_body,
    hf_count,
    hf_dates,
    published,
    serve_days,
    week_mapping,
)

pytestmark = pytest.mark.shared

ID_LIST_ANSWER = "q_testing_s0_m100_cfe7536492ca"


class Recorder:
    """A :class:`~paperfeed.domain.fill.FillReporter` that keeps what it is told."""

    def __init__(self) -> None:
        self.events: list[tuple[str, ...]] = []

    def begin(self, stage: str, total: int) -> None:
        self.events.append(("begin", stage, str(total)))

    def advance(self, stage: str, done: int, detail: str) -> None:
        self.events.append(("advance", stage, str(done), detail))

    def note(self, message: str) -> None:
        self.events.append(("note", message))


def _window_ids(fixtures: Path, mapping: dict[date, str | None]) -> set[str]:
    ids: set[str] = set()
    for recorded in mapping.values():
        if recorded:
            ids.update(item["paper"]["id"] for item in json.loads(hf_body(fixtures, recorded)))
    return ids


def _pipeline(service: object) -> DailyPipeline:
    def unused() -> object:
        raise AssertionError("not part of this test")

    return DailyPipeline(
        ingest=unused,  # type: ignore[arg-type]
        arxiv_harvest=unused,  # type: ignore[arg-type]
        fill=service,  # type: ignore[arg-type]
        indexer=unused,  # type: ignore[arg-type]
        digests=unused,  # type: ignore[arg-type]
        daily_steps=comma_list(DEFAULTS.jobs_daily_steps),
        citation_sources=comma_list(DEFAULTS.citation_sources),
    )


def test_first_start_fills_the_window_and_a_second_start_fetches_nothing_new(
    build: Builder, server: ReplayServer, fixtures_dir: Path, db_url: str
) -> None:
    mapping = week_mapping()
    serve_days(server, fixtures_dir, mapping)
    answer = arxiv_body(fixtures_dir, ID_LIST_ANSWER)
    server.add(ARXIV_PATH, Reply(200, answer, ATOM))  # the id_list question, and every category listing
    app, service = build(NOW, db_url=db_url, fill_days=7)
    events = Recorder()

    report = service.fill(events, probe_timeout=5)

    assert report.offline is None
    assert report.stopped == []
    window = [NOW.date() - timedelta(days=i) for i in range(7)]
    assert report.hf.fetched == window  # newest first
    assert hf_dates(server) == [d.isoformat() for d in window]
    for day, recorded in mapping.items():
        expected = hf_count(fixtures_dir, recorded) if recorded else 0
        assert len(app.core.store.listings_for_day(day, "hf-daily")) == expected, day
    zetta = app.core.store.get_paper("2608.16590")  # what the HF adapter maps arrives with the fill
    assert zetta is not None
    assert zetta.upvotes == 92
    assert zetta.github_repo == "https://github.com/air-embodied-brain/Zetta-Embodiment"
    assert zetta.ai_summary is not None
    assert zetta.ai_summary.startswith("Zetta is a closed-loop embodied")
    # settled days are complete; today and yesterday are not (fetched again next time)
    assert [app.core.store.get_checkpoint(hf_day_key(d)) is not None for d in window] == [False, False] + [
        True
    ] * 5
    # categories: one id_list request for the window's Daily Papers, the top primaries of arXiv's answer
    requests = arxiv_requests(server)
    asked = requests[0]["id_list"].split(",")
    assert sorted(asked) == sorted(_window_ids(fixtures_dir, mapping))
    assert report.arxiv.categories == tuple(expected_top(answer))
    assert report.arxiv.how.startswith("derived from")
    listings = requests[1:]
    assert [r["search_query"] for r in listings] == [f"cat:{c}" for c in report.arxiv.categories]
    assert all(
        (r["sortBy"], r["sortOrder"], r["start"]) == ("submittedDate", "descending", "0") for r in listings
    )
    assert report.arxiv.fetched == list(report.arxiv.categories)
    assert ("begin", "Hugging Face days", "7") in events.events
    assert ("advance", "Hugging Face days", "2", "2026-08-21: 17 papers") in events.events

    server.requests.clear()
    again = service.fill(Recorder(), probe_timeout=5)

    assert hf_dates(server) == [NOW.date().isoformat(), (NOW.date() - timedelta(days=1)).isoformat()]
    assert arxiv_requests(server) == []  # categories kept, every listing completed today
    assert again.hf.complete_before == 5
    assert again.hf.summary.added == 0
    assert again.arxiv.fresh == list(report.arxiv.categories)


def test_a_fill_stopped_mid_way_resumes_without_repeating_a_day(
    build: Builder, server: ReplayServer, fixtures_dir: Path
) -> None:
    mapping = week_mapping()
    serve_days(server, fixtures_dir, mapping)
    server.add(HF_PATH, Reply(503, b"busy"), params={"date": "2026-08-19"})  # HF goes away on day 4
    app, service = build(NOW, fill_days=7, arxiv_categories="cs.SE")
    server.add(ARXIV_PATH, arxiv_recorded(fixtures_dir, "id_0000.0000_s0_m100_8b51d9633a68"))

    first = service.fill(Recorder(), probe_timeout=5)

    assert [d.isoformat() for d in first.hf.fetched] == ["2026-08-22", "2026-08-21", "2026-08-20"]
    assert len(first.stopped) == 1
    assert first.stopped[0].startswith("Hugging Face:")
    assert "503" in first.stopped[0]
    assert app.core.store.get_checkpoint(hf_day_key(date(2026, 8, 20))) is not None
    assert app.core.store.listings_for_day(date(2026, 8, 19)) == []

    serve_days(server, fixtures_dir, mapping)  # HF is back
    server.requests.clear()
    second = service.fill(Recorder(), probe_timeout=5)

    assert second.stopped == []
    # today and yesterday again (never complete), 08-20 not again, then the days the first run missed
    assert hf_dates(server) == [
        "2026-08-22",
        "2026-08-21",
        "2026-08-19",
        "2026-08-18",
        "2026-08-17",
        "2026-08-16",
    ]
    total = 0
    for day, recorded in mapping.items():
        expected = hf_count(fixtures_dir, recorded) if recorded else 0
        assert len(app.core.store.listings_for_day(day, "hf-daily")) == expected, day
        total += expected
    stats = app.core.store.stats()
    assert stats.listings == total  # no duplicates
    assert stats.listing_days == 4


def test_categories_default_to_those_of_the_windows_daily_papers_and_are_kept(
    build: Builder, server: ReplayServer, fixtures_dir: Path
) -> None:
    serve_days(server, fixtures_dir, week_mapping())
    answer = arxiv_body(fixtures_dir, ID_LIST_ANSWER)
    server.add(ARXIV_PATH, Reply(200, answer, ATOM))
    app, service = build(NOW, fill_days=7)
    service.catch_up_hf(SilentReporter())
    server.requests.clear()

    cats, _ = service.categories(SilentReporter())

    assert list(cats) == expected_top(answer)
    assert cats[0] == "cs.SE"  # 64 of the 100 answered papers
    assert len(arxiv_requests(server)) == 1
    assert app.core.store.get_checkpoint(CATEGORIES_KEY) is not None
    # kept for a week: asked again only after that
    later = replace(service, now=lambda: NOW + timedelta(days=6))
    assert later.categories(SilentReporter())[0] == cats
    assert len(arxiv_requests(server)) == 1
    wider = replace(service.settings, days=30)  # a window that still holds those Daily Papers
    much_later = replace(service, now=lambda: NOW + timedelta(days=8), settings=wider)
    much_later.categories(SilentReporter())
    assert len(arxiv_requests(server)) == 2
    # configured categories win and ask nothing
    configured = replace(service, settings=replace(service.settings, categories=("hep-th",)))
    assert configured.categories(SilentReporter()) == (("hep-th",), "configured")
    assert len(arxiv_requests(server)) == 2


LISTING_NOW = datetime(2026, 4, 10, 12, 0, tzinfo=UTC)
PAGES = ("q_testing_s0_m10_bc5a6c384fe9", "q_testing_s10_m10_34e56e15aaac", "q_testing_s20_m10_348a237fecab")


def _ids(body: bytes) -> set[str]:
    return {m.decode() for m in re.findall(rb"<id>https?://arxiv\.org/abs/(\d{4}\.\d{4,5})v\d+</id>", body)}


def test_a_listing_pages_back_to_its_bound_and_resumes_at_the_next_page(
    build: Builder, server: ReplayServer, fixtures_dir: Path
) -> None:
    bodies = [arxiv_body(fixtures_dir, p) for p in PAGES]
    for start, body in zip(("0", "10", "20"), bodies, strict=True):
        server.add(ARXIV_PATH, Reply(200, body, ATOM), params={"search_query": "cat:cs.SE", "start": start})
    # the third page fails once: the pass stops there, keeping the two committed pages
    server.add(
        ARXIV_PATH,
        Reply(503, b"busy"),
        Reply(200, bodies[2], ATOM),
        params={"search_query": "cat:cs.SE", "start": "20"},
    )
    app, service = build(LISTING_NOW, arxiv_categories="cs.SE", arxiv_listing_max=30)
    service = replace(service, settings=replace(service.settings, days=40 * 365))  # floor before them all
    wanted = set().union(*(_ids(b) for b in bodies))
    assert len(wanted) == 30

    with pytest.raises(Exception, match="503"):
        service.catch_up_arxiv(SilentReporter())
    assert [r["start"] for r in arxiv_requests(server)] == ["0", "10", "20"]
    state = ListingState.loads(app.core.store.get_checkpoint(listing_key("cs.SE")))
    assert state.offset == 20
    assert state.completed_at is None
    assert set(app.core.store.get_papers(sorted(wanted))) == _ids(bodies[0]) | _ids(bodies[1])

    server.requests.clear()
    out = service.catch_up_arxiv(SilentReporter())

    assert [r["start"] for r in arxiv_requests(server)] == ["20"]  # resumed at the next page
    assert out.fetched == ["cs.SE"]
    assert set(app.core.store.get_papers(sorted(wanted))) == wanted
    done = ListingState.loads(app.core.store.get_checkpoint(listing_key("cs.SE")))
    assert done.offset is None
    assert done.completed_at == LISTING_NOW
    assert done.high == max(t for b in bodies for t in published(b))
    server.requests.clear()
    assert service.catch_up_arxiv(SilentReporter()).fresh == ["cs.SE"]  # done today: nothing asked
    assert arxiv_requests(server) == []


def test_a_listing_stops_at_the_windows_start(
    build: Builder, server: ReplayServer, fixtures_dir: Path
) -> None:
    body = arxiv_body(fixtures_dir, PAGES[0])
    server.add(ARXIV_PATH, Reply(200, body, ATOM))
    floor = datetime(2020, 1, 1, tzinfo=UTC)
    _, service = build(LISTING_NOW, arxiv_categories="cs.SE", arxiv_listing_max=1000)
    service = replace(
        service, settings=replace(service.settings, days=(LISTING_NOW.date() - floor.date()).days + 1)
    )

    out = service.catch_up_arxiv(SilentReporter())

    assert len(arxiv_requests(server)) == 1  # the first page already reaches before the window
    recent = sum(1 for t in published(body) if t >= floor)
    assert 0 < recent < 10
    assert out.summary.added == recent


def test_an_error_feed_and_an_empty_feed_are_handled_clearly(
    build: Builder, server: ReplayServer, fixtures_dir: Path
) -> None:
    server.add(
        ARXIV_PATH,
        arxiv_recorded(fixtures_dir, "id_abc_s0_m100_b79c8dcf6bc3"),
        params={"search_query": "cat:cs.XX"},
    )
    server.add(
        ARXIV_PATH,
        arxiv_recorded(fixtures_dir, "id_0000.0000_s0_m100_8b51d9633a68"),
        params={"search_query": "cat:cs.SE"},
    )
    assert arxiv_recorded(fixtures_dir, "id_abc_s0_m100_b79c8dcf6bc3").status == 400
    _, service = build(NOW, arxiv_categories="cs.XX,cs.SE")
    events = Recorder()

    out = service.catch_up_arxiv(events)

    assert out.refused == [("cs.XX", "incorrect id format for abc")]
    assert ("note", "arXiv refused the listing of cs.XX: incorrect id format for abc") in events.events
    assert out.fetched == ["cs.SE"]  # the other category went on; empty is simply nothing new
    assert out.summary.added == 0
    assert service.listing_is_fresh("cs.SE")
    assert not service.listing_is_fresh("cs.XX")
    # the daily job's step fails with arXiv's message (the run shows as partial), after the others ran
    with pytest.raises(RuntimeError, match=r"arXiv refused cs\.XX: incorrect id format for abc"):
        _pipeline(service).step("harvest-listings").run()


def test_the_daily_job_catches_up_the_days_missed_during_a_gap(
    build: Builder, server: ReplayServer, fixtures_dir: Path
) -> None:
    mapping = week_mapping()
    serve_days(server, fixtures_dir, mapping)
    _, service = build(NOW, fill_days=7)
    service.catch_up_hf(SilentReporter())
    # the laptop sleeps four days
    later = NOW + timedelta(days=4)
    serve_days(server, fixtures_dir, {later.date() - timedelta(days=i): None for i in range(4)})
    server.requests.clear()

    counts = _pipeline(replace(service, now=lambda: later)).step("harvest-hf").run()

    # the new window is 08-20..08-26: 08-20 is complete; 08-21 and 08-22 were too fresh when fetched
    assert hf_dates(server) == [f"2026-08-{d}" for d in (26, 25, 24, 23, 22, 21)]
    assert counts["days"] == 6
    assert counts["added"] == 0  # the recorded days were there already; their upvotes were re-read
