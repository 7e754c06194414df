"""Submitting papers by arXiv id or URL: fetched from recorded arXiv answers on a loopback server, imported
through the ingest service, listed on the day's feed with who submitted them; the cap and clear errors."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime

import pytest
from sqlalchemy import func, select

from paperfeed.adapters.store.schema import listings, papers
from paperfeed.adapters.store.schema_community import paper_submissions
from paperfeed.bootstrap import App
from paperfeed.domain.community import (
    ArxivUnreachable,
    InvalidSubmission,
    LimitReached,
    PaperNotFound,
    UnknownArxivPaper,
)
from tests.support.http_server import ReplayServer, Reply

from .conftest import API_PATH, DAY, add_reader

NOW = datetime(2026, 3, 2, 15, 30, tzinfo=UTC)


@pytest.fixture
def fixed(app: App) -> App:
    app.readers.community.clock = lambda: NOW
    return app


def _count(app: App, query: object) -> int:
    with app.core.store.engine.connect() as conn:
        return int(conn.execute(query).scalar_one())  # type: ignore[call-overload]


@pytest.mark.parametrize(
    ("text", "paper_id", "id_list"),
    [
        ("1605.08386", "1605.08386", "1605.08386"),
        ("https://arxiv.org/abs/2104.12255v1", "2104.12255", "2104.12255"),
        ("https://arxiv.org/pdf/2104.12255v1.pdf", "2104.12255", "2104.12255"),
        ("arXiv:astro-ph/0601001", "astro-ph/0601001", "astro-ph/0601001"),
        ("  quant-ph/0201082v1 ", "quant-ph/0201082", "quant-ph/0201082"),
    ],
)
def test_a_new_paper_is_fetched_imported_and_put_on_todays_feed(
    fixed: App, arxiv: ReplayServer, text: str, paper_id: str, id_list: str
) -> None:
    ada = add_reader(fixed, "ada@example.org", "Ada")
    result = fixed.readers.community.submit(ada, text)
    assert result.created
    assert result.fetched
    assert result.paper_id == paper_id
    assert result.day == NOW.date()
    assert [r.params["id_list"] for r in arxiv.requests] == [id_list]
    stored = fixed.core.store.get_paper(paper_id)
    assert stored is not None
    assert "arxiv-api" in " ".join(stored.sources)  # imported like any harvest, with its source recorded
    assert stored.title  # real metadata from the recorded answer
    day = fixed.catalogue.feeds.day(NOW.date())
    assert [item.paper.id for item in day.items] == [paper_id]
    submission = fixed.readers.community.submission(paper_id)
    assert submission is not None
    assert (submission.name, submission.user_id, submission.day) == ("Ada", ada.id, NOW.date())
    found = fixed.search.hybrid.search(stored.title, limit=5)  # findable at once: imported through ingest
    assert paper_id in [hit.paper.id for hit in found.hits]


def test_submitting_again_returns_the_submission_and_changes_nothing(fixed: App, arxiv: ReplayServer) -> None:
    ada = add_reader(fixed, "ada@example.org", "Ada")
    bob = add_reader(fixed, "bob@example.org", "Bob")
    first = fixed.readers.community.submit(ada, "1605.08386")
    again = fixed.readers.community.submit(bob, "https://arxiv.org/abs/1605.08386v1")
    assert first.created
    assert not again.created
    assert not again.fetched
    assert again.submission == first.submission
    assert len(arxiv.requests) == 1  # no second fetch
    assert _count(fixed, select(func.count()).select_from(paper_submissions)) == 1
    assert (
        _count(fixed, select(func.count()).select_from(listings).where(listings.c.paper_id == "1605.08386"))
        == 1
    )
    assert fixed.readers.community.submitted_today(bob) == 0  # a re-submission does not use the cap


def test_a_paper_already_on_a_daily_feed_is_not_listed_again(fixed: App, server: ReplayServer) -> None:
    ada = add_reader(fixed, "ada@example.org")
    result = fixed.readers.community.submit(ada, "https://arxiv.org/abs/2501.00201")
    assert not result.created
    assert result.submission is None
    assert result.day is not None
    assert result.day.isoformat() == DAY
    assert server.requests == []
    assert fixed.readers.community.submitted_today(ada) == 0


def test_a_stored_paper_never_listed_is_put_on_the_feed_without_fetching(
    fixed: App, server: ReplayServer
) -> None:
    ada = add_reader(fixed, "ada@example.org")
    result = fixed.readers.community.submit(ada, "hep-th/9901001v1")
    assert result.created
    assert not result.fetched
    assert server.requests == []
    assert [i.paper.id for i in fixed.catalogue.feeds.day(NOW.date()).items] == ["hep-th/9901001"]
    assert _count(fixed, select(func.count()).select_from(papers)) == 6  # not duplicated


def test_the_daily_cap_refuses_before_asking_arxiv(fixed: App, arxiv: ReplayServer) -> None:
    ada = add_reader(fixed, "ada@example.org")
    for text in ("2501.00205", "hep-th/9901001", "1605.08386"):  # the cap in these tests is 3
        assert fixed.readers.community.submit(ada, text).created
    asked = len(arxiv.requests)
    with pytest.raises(LimitReached) as refused:
        fixed.readers.community.submit(ada, "2104.12255")
    assert "3 papers today" in str(refused.value)
    assert refused.value.retry_after == 8 * 3600 + 30 * 60  # until midnight UTC
    assert len(arxiv.requests) == asked
    assert fixed.core.store.get_paper("2104.12255") is None
    # an already listed paper is still answered (it writes nothing)
    assert not fixed.readers.community.submit(ada, "2501.00202").created
    # and another reader has a cap of their own
    assert fixed.readers.community.submit(add_reader(fixed, "bob@example.org"), "2104.12255").created


@pytest.mark.parametrize(
    "text",
    ["", "   ", "not an id", "2501.999999", "1313.00001", "https://example.org/abs/2501.00001", "x" * 600],
)
def test_text_that_is_no_arxiv_id_is_refused_without_asking_arxiv(
    fixed: App, server: ReplayServer, text: str
) -> None:
    with pytest.raises(InvalidSubmission, match="is not an arXiv id or URL"):
        fixed.readers.community.submit(add_reader(fixed, "ada@example.org"), text)
    assert server.requests == []


def test_an_id_arxiv_does_not_know_is_a_clear_error(fixed: App, arxiv: ReplayServer) -> None:
    ada = add_reader(fixed, "ada@example.org")
    with pytest.raises(UnknownArxivPaper, match=r"arXiv has no paper with id 2501\.99999"):
        fixed.readers.community.submit(ada, "2501.99999")
    assert fixed.readers.community.submission("2501.99999") is None
    assert fixed.readers.community.submitted_today(ada) == 1  # the attempt counts against the cap (issue #12)
    assert fixed.catalogue.feeds.day(NOW.date()).total == 0


@pytest.mark.parametrize(
    "reply",
    [Reply(503, b"down for maintenance", {"Retry-After": "0"}), Reply(200, b"<html>not a feed</html>")],
    ids=["503", "garbage"],
)
def test_arxiv_down_or_garbled_is_a_clear_error_and_nothing_is_submitted(
    fixed: App, server: ReplayServer, reply: Reply
) -> None:
    server.add(API_PATH, reply)
    ada = add_reader(fixed, "ada@example.org")
    with pytest.raises(ArxivUnreachable, match="Nothing was submitted; try again later"):
        fixed.readers.community.submit(ada, "2502.00001")
    assert fixed.readers.community.submission("2502.00001") is None
    assert fixed.readers.community.submitted_today(ada) == 1  # the attempt counts against the cap (issue #12)


def test_arxiv_unreachable_at_all(tmp_path: object, fixed: App) -> None:
    fixed.settings.arxiv_api_url = "http://127.0.0.1:9/api/query"  # discard port: connection refused
    fixed.__dict__.pop("arxiv_api", None)
    with pytest.raises(ArxivUnreachable):
        fixed.readers.community.submit(add_reader(fixed, "ada@example.org"), "2502.00001")


def test_a_paper_hidden_by_an_administrator_cannot_be_submitted(fixed: App, server: ReplayServer) -> None:
    fixed.readers.accounts.hide_paper("2501.00205", reason="spam")
    with pytest.raises(PaperNotFound, match="taken off this site"):
        fixed.readers.community.submit(add_reader(fixed, "ada@example.org"), "2501.00205")
    assert server.requests == []


def test_closed_submissions(fixed: App, server: ReplayServer) -> None:
    fixed.readers.community.limits = replace(fixed.readers.community.limits, submissions_per_day=0)
    with pytest.raises(LimitReached, match="Submissions are closed"):
        fixed.readers.community.submit(add_reader(fixed, "ada@example.org"), "2501.00205")
