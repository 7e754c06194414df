"""Search answers with notes: the embedding backlog's note is kept a minute, a failed part 5 s.

After every import meaning search lags the store until the indexer has embedded the new papers, so every
search answer carries a note ("… covers N of M papers"), for hours after a large import. Such an answer
is an ordinary one, shared like any search, but the page cache keeps it a minute at most so the count and
the semantic matches follow the indexer. An answer a failed part left partial ("semantic search is
unavailable…") changes when the index is repaired, which no write announces: an anonymous copy is
``public, max-age=5`` and kept 5 s (``tests/reliability/test_check.py`` repairs an index behind one), a
signed-in reader's page is ``private, no-store`` (the API's search is the same for a script with a token
as for anyone: it gets the anonymous answer). The internal headers that carry these never reach a client.
"""

from __future__ import annotations

import time

import pytest
from fastapi.testclient import TestClient

from paperfeed.bootstrap import App
from paperfeed.domain.accounts import User
from paperfeed.web import rendering
from paperfeed.web.headers import KEEP_SECONDS_HEADER, PUBLIC_SECONDS_HEADER
from tests.community.conftest import add_reader, bearer, sign_in

SEARCHES = [("/api/papers/search?q=lichen", {"accept": "application/json"}), ("/search?q=lichen", {})]


@pytest.fixture
def ada(app: App) -> User:
    return add_reader(app, "ada@example.org", "Ada Partial")


@pytest.mark.parametrize(("url", "accept"), SEARCHES)
def test_an_anonymous_search_with_the_coverage_note_is_shared_as_any_search_and_kept_a_minute_at_most(
    site: TestClient, url: str, accept: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    assert rendering.COVERAGE_SEARCH_HEADERS[KEEP_SECONDS_HEADER] == "60"
    monkeypatch.setitem(rendering.COVERAGE_SEARCH_HEADERS, KEEP_SECONDS_HEADER, "1")  # a minute is long
    first = site.get(url, headers=accept)
    assert first.status_code == 200
    if url.startswith("/api/"):
        assert "covers" in first.headers.get("x-search-notes", ""), "the index is empty: a note is expected"
    else:
        assert "Meaning search covers" in first.text
    assert first.headers["cache-control"] == "public, max-age=60, stale-while-revalidate=300"
    assert PUBLIC_SECONDS_HEADER not in first.headers
    assert KEEP_SECONDS_HEADER not in first.headers
    again = site.get(url, headers=accept)
    assert again.headers["x-paperfeed-cache"] == "hit"
    assert again.content == first.content
    time.sleep(1.1)
    assert site.get(url, headers=accept).headers["x-paperfeed-cache"] == "miss", "kept past its bound"


def test_a_signed_in_search_page_with_notes_stays_private(site: TestClient, app: App, ada: User) -> None:
    sign_in(site, app, ada)
    answer = site.get("/search?q=lichen")
    assert answer.status_code == 200
    assert "Ada Partial" in answer.text
    assert answer.headers["cache-control"] == "private, no-store"
    assert PUBLIC_SECONDS_HEADER not in answer.headers
    assert "x-paperfeed-cache" not in answer.headers


def test_a_script_with_a_token_gets_the_anonymous_api_search_with_its_notes(
    site: TestClient, app: App, ada: User
) -> None:
    """The API's search never looks at who asks: a token holder's answer is everyone's, kept as theirs."""
    url, accept = SEARCHES[0]
    answer = site.get(url, headers={**accept, **bearer(app, ada)})
    assert answer.status_code == 200
    assert "covers" in answer.headers.get("x-search-notes", "")
    assert answer.headers["cache-control"] == "public, max-age=60, stale-while-revalidate=300"
    assert PUBLIC_SECONDS_HEADER not in answer.headers
    assert KEEP_SECONDS_HEADER not in answer.headers
    anonymous = site.get(url, headers=accept)
    assert anonymous.headers["x-paperfeed-cache"] == "hit"
    assert anonymous.content == answer.content
