"""While the data keeps changing, a cached anonymous page is reused for a grace period; removals are not.

An import writes every second, and the signed-in readers of a public instance vote all the time: if every
change emptied the page cache, it would be empty whenever it mattered. So an answer whose data version
differs only in its *content* part (votes, comments) is still served for ``page_cache_grace_seconds``
after that change, counted from the worker's last read before it (its *papers* part, imports and
harvests, for ``page_cache_import_grace_seconds``), marked ``X-Paperfeed-Cache: stale``; after that it
is rendered anew. Hiding a paper, a comment or a reader is a *removal*: it empties the cache at once,
whatever the grace, because a moderator's action must never wait.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime

import pytest
from fastapi.testclient import TestClient

from paperfeed.bootstrap import App
from paperfeed.domain.accounts import User
from paperfeed.domain.ingest import Batch
from paperfeed.domain.models import Paper
from paperfeed.settings import Settings
from tests.community.conftest import add_reader
from tests.public_cache.tuned import tuned_site

JSON = {"accept": "application/json"}
PAPER = "2501.00202"  # listed with 11 Hugging Face upvotes


def _site(settings: Settings, grace: float, refresh: float = 0.0) -> TestClient:
    """``refresh`` 0: past the grace a reader waits for the render (test_refresh_behind.py covers more)."""
    return tuned_site(settings, grace=grace, refresh=refresh)


@pytest.fixture
def ada(app: App) -> User:
    return add_reader(app, "ada@example.org", "Ada Grace")


def _upvotes(site: TestClient) -> tuple[int, str]:
    answer = site.get(f"/api/papers/{PAPER}", headers=JSON)
    assert answer.status_code == 200, answer.text
    return answer.json()["upvotes"], answer.headers.get("x-paperfeed-cache", "")


def test_a_vote_reaches_a_cached_answer_after_the_grace_not_before(
    settings: Settings, app: App, ada: User
) -> None:
    with _site(settings, grace=1.5) as site:
        before, how = _upvotes(site)
        assert how == "miss"
        app.readers.community.upvote(ada, PAPER)  # another process's write: the version's content part moves
        assert _upvotes(site) == (before, "stale"), "within the grace the rendered answer is reused"
        time.sleep(1.6)
        assert _upvotes(site) == (before + 1, "miss"), "after the grace it is rendered anew"
        assert _upvotes(site) == (before + 1, "hit")


def test_without_grace_a_vote_reaches_the_cached_answer_at_once(
    settings: Settings, app: App, ada: User
) -> None:
    with _site(settings, grace=0.0, refresh=60.0) as site:  # a grace of 0 is strict whatever the refresh
        before, _ = _upvotes(site)
        app.readers.community.upvote(ada, PAPER)
        assert _upvotes(site) == (before + 1, "miss")


def test_hiding_a_paper_empties_the_cache_at_once_whatever_the_grace(settings: Settings, app: App) -> None:
    with _site(settings, grace=300.0) as site:
        assert site.get(f"/api/papers/{PAPER}", headers=JSON).status_code == 200
        assert site.get(f"/api/papers/{PAPER}", headers=JSON).headers["x-paperfeed-cache"] == "hit"
        app.readers.accounts.hide_paper(PAPER, reason="spam")
        assert site.get(f"/api/papers/{PAPER}", headers=JSON).status_code == 404
        page = site.get(f"/papers/{PAPER}")
        assert page.status_code == 404


def test_hiding_a_reader_empties_the_cache_at_once_whatever_the_grace(
    settings: Settings, app: App, ada: User
) -> None:
    app.readers.community.add_comment(ada, PAPER, "A remark from Ada that a moderator will remove.")
    with _site(settings, grace=300.0) as site:
        assert "A remark from Ada" in site.get(f"/papers/{PAPER}").text
        assert site.get(f"/papers/{PAPER}").headers["x-paperfeed-cache"] == "hit"
        app.readers.accounts.hide_user(ada.id)
        shown = site.get(f"/papers/{PAPER}")
        assert shown.headers["x-paperfeed-cache"] == "miss"
        assert "A remark from Ada" not in shown.text


def _site_with(settings: Settings, grace: float, import_grace: float) -> TestClient:
    return tuned_site(settings, grace=grace, import_grace=import_grace)


def _import_unlisted(app: App, n: int) -> None:
    """An import writes papers: the version's papers part moves, its content part does not."""
    when = datetime(2030, 1, n, tzinfo=UTC)  # newer than every paper of the instance
    app.core.store.apply_batch(
        Batch(papers=[Paper(id=f"2502.{n:05d}", title=f"Imported {n}", published=when)])
    )


def _newest(site: TestClient) -> tuple[str, str]:
    answer = site.get("/api/papers?limit=1", headers=JSON)
    assert answer.status_code == 200, answer.text
    return answer.json()[0]["id"], answer.headers.get("x-paperfeed-cache", "")


def test_an_import_reaches_a_cached_answer_after_the_import_grace_not_the_vote_grace(
    settings: Settings, app: App
) -> None:
    with _site_with(settings, grace=0.0, import_grace=1.5) as site:
        before, how = _newest(site)
        assert how == "miss"
        _import_unlisted(app, 1)
        assert _newest(site) == (before, "stale"), "within the import grace the rendered answer is reused"
        time.sleep(1.6)
        assert _newest(site) == ("2502.00001", "miss"), "after the import grace it is rendered anew"


def test_a_vote_does_not_wait_for_the_import_grace(settings: Settings, app: App, ada: User) -> None:
    with _site_with(settings, grace=0.0, import_grace=300.0) as site:
        before, _ = _upvotes(site)
        _import_unlisted(app, 2)
        app.readers.community.upvote(ada, PAPER)
        assert _upvotes(site) == (before + 1, "miss"), "a vote after an import waited for the import grace"


def test_without_import_grace_an_import_shows_at_once(settings: Settings, app: App) -> None:
    with _site_with(settings, grace=300.0, import_grace=0.0) as site:
        _newest(site)
        _import_unlisted(app, 3)
        assert _newest(site) == ("2502.00003", "miss")


def test_the_grace_counts_from_the_change_not_the_render(settings: Settings, app: App, ada: User) -> None:
    """A page rendered long before the daily import still gets the whole grace once the import starts."""
    with _site(settings, grace=1.5) as site:
        before, how = _upvotes(site)
        assert how == "miss"
        time.sleep(1.6)  # the copy is now older than the grace, and still current
        assert _upvotes(site) == (before, "hit")
        app.readers.community.upvote(ada, PAPER)
        assert _upvotes(site) == (before, "stale"), "an old copy got no grace when the data changed"
        time.sleep(1.6)
        assert _upvotes(site) == (before + 1, "miss")


def test_an_idle_worker_grants_no_grace_to_an_old_copy(settings: Settings, app: App, ada: User) -> None:
    """It cannot know when the data changed after its last read, so it counts from that read."""
    with _site(settings, grace=1.5) as site:
        before, how = _upvotes(site)
        assert how == "miss"
        time.sleep(1.6)  # no request: the worker's last read of the version is now older than the grace
        app.readers.community.upvote(ada, PAPER)
        assert _upvotes(site) == (before + 1, "miss"), "an old copy was served after an unseen change"
