"""A signed-in reader's page asks which of its papers the reader upvoted once, not once per card (#30).

Every card of a day, search, topic or trending page has a vote button whose state depends on the reader;
asked per card, a day page of 50 papers sent 50 queries to ``paper_upvotes``. The statements are counted
as the database driver receives them, on the served app's own engine.
"""

from __future__ import annotations

from datetime import UTC, date, datetime

import lxml.html
from fastapi.testclient import TestClient

from paperfeed.bootstrap import App
from paperfeed.domain.ingest import Batch
from paperfeed.domain.models import Listing, Paper
from tests.support.statements import recorded_statements

from .conftest import add_reader, sign_in

HTML = {"accept": "text/html"}
DAY = date(2025, 2, 3)
CARDS = 50


def _fifty_papers_on_one_day(app: App) -> list[str]:
    ids = [f"2502.{n:05d}" for n in range(1, CARDS + 1)]
    when = datetime(2025, 2, 1, 9, tzinfo=UTC)
    papers = [
        Paper(id=pid, title=f"Paper number {n}", abstract="About things.", published=when)
        for n, pid in enumerate(ids)
    ]
    listings = [Listing(DAY, pid, "hf-daily", upvotes=n, rank=n) for n, pid in enumerate(ids)]
    app.core.store.apply_batch(Batch(papers=papers, listings=listings))
    return ids


def _upvote_queries(statements: list[tuple[str, object]]) -> list[str]:
    return [s for s, _ in statements if "paper_upvotes" in s and "user_id" in s and "count(" not in s.lower()]


def test_a_signed_in_day_page_of_fifty_cards_asks_for_the_readers_votes_once(
    app: App, site: TestClient
) -> None:
    ids = _fifty_papers_on_one_day(app)
    ada = add_reader(app, "ada@example.org", "Ada")
    for pid in ids[:3]:
        app.readers.community.upvote(ada, pid)
    sign_in(site, app, ada)
    served: App = site.app_state["app"]
    with recorded_statements(served.core.store.engine) as statements:
        page = site.get(f"/papers/date/{DAY.isoformat()}?limit={CARDS}", headers=HTML)
    assert page.status_code == 200, page.text
    doc = lxml.html.fromstring(page.text)
    forms = doc.cssselect("form.vote-form")
    assert len(forms) == CARDS
    pressed = {
        f.get("action", "").split("/")[2]
        for f in forms
        if f.cssselect("button")[0].get("aria-pressed") == "true"
    }
    assert pressed == set(ids[:3]), "the reader's own votes are still shown"
    asked = _upvote_queries(statements)
    assert len(asked) == 1, f"{len(asked)} queries for the reader's votes:\n" + "\n".join(asked[:3])
