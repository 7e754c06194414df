"""A search answer with notes is shared briefly when anonymous, and stays private when signed in.

While an import runs, meaning search lags behind the store, so every search answer carries a note ("…
covers N of M papers"). Such an answer changes when the index does, which no write announces, so it
cannot live as long as a normal one; but rendered anew for every anonymous reader, it cost most of the
server's CPU under load (docs/benchmarks.md, "Load"). An anonymous copy is therefore ``public,
max-age=5`` and kept by the page cache for 5 s; a signed-in reader's is ``private, no-store``; the
internal header that carries the 5 s never reaches a client.
"""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from paperfeed.bootstrap import App
from paperfeed.domain.accounts import User
from paperfeed.web.headers import PUBLIC_SECONDS_HEADER
from tests.community.conftest import add_reader, bearer, sign_in

SEARCHES = [("/api/papers/search?q=lichen", {"accept": "application/json"}), ("/search?q=lichen", {})]


@pytest.fixture
def ada(app: App) -> User:
    return add_reader(app, "ada@example.org", "Ada Partial")


@pytest.mark.parametrize(("url", "accept"), SEARCHES)
def test_an_anonymous_search_with_notes_is_shared_for_five_seconds(
    site: TestClient, url: str, accept: dict[str, str]
) -> None:
    first = site.get(url, headers=accept)
    assert first.status_code == 200
    if url.startswith("/api/"):
        assert "covers" in first.headers.get("x-search-notes", ""), "the index is empty: a note is expected"
    assert first.headers["cache-control"] == "public, max-age=5, stale-while-revalidate=0"
    assert PUBLIC_SECONDS_HEADER not in first.headers
    again = site.get(url, headers=accept)
    assert again.headers["x-paperfeed-cache"] == "hit"
    assert again.content == first.content


@pytest.mark.parametrize(("url", "accept"), SEARCHES)
def test_a_signed_in_search_with_notes_stays_private(
    site: TestClient, app: App, ada: User, url: str, accept: dict[str, str]
) -> None:
    if url.startswith("/api/"):
        answer = site.get(url, headers={**accept, **bearer(app, ada)})
    else:
        sign_in(site, app, ada)
        answer = site.get(url, headers=accept)
    assert answer.status_code == 200
    assert answer.headers["cache-control"] == "private, no-store"
    assert PUBLIC_SECONDS_HEADER not in answer.headers
    assert "x-paperfeed-cache" not in answer.headers
