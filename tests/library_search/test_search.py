"""Search my library: a reader finds their own papers by the words of a private note or a tag (pages, API,
MCP) and by meaning — the real MiniLM model ranking a paper that shares no word with the query; nobody
else's library is ever searched."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np
import pytest
from fastapi.testclient import TestClient

from paperfeed.bootstrap import App, build_app
from paperfeed.services import library_search as library_search_module
from paperfeed.services.library_search import LibrarySearch
from paperfeed.services.rate_limits import ClientRateLimiter
from paperfeed.settings import Settings
from paperfeed.web import create_app
from tests.accounts.conftest import PAPER_IDS, load_papers, quick_sign_in

ZEBRAFISH, GLACIER, SHEEP, ATLAS = PAPER_IDS
ME, OTHER = "reader@example.org", "other@example.org"


def _reader(app: App, email: str) -> int:
    if app.readers.accounts.store.user_by_email(email) is None:
        app.readers.accounts.sign_up(email, None, None, client="t", base_url="http://t")
    return app.readers.accounts.user_by_email(email).id


def _library(app: App) -> int:
    me = _reader(app, ME)
    for paper in (ZEBRAFISH, GLACIER, SHEEP):
        app.readers.library.save(me, paper, ["Reading"])
    app.readers.library.set_note(me, GLACIER, "Ask **Maria** about the backscatter calibration")
    app.readers.library.set_note(me, ATLAS, "not saved, but noted: wavelet tricks")  # a note alone counts
    app.readers.library.save(me, SHEEP, ["Thesis chapter 3"])
    other = _reader(app, OTHER)
    app.readers.library.save(other, ATLAS)
    app.readers.library.set_note(other, ATLAS, "Maria's favourite")
    return me


def test_a_private_notes_words_find_its_paper_on_the_page_api_and_nobody_elses(
    app: App, site: TestClient
) -> None:
    me = _library(app)
    found = app.readers.library_search.search(me, "maria calibration")
    assert found.hits[0].paper.id == GLACIER
    assert "note" in found.hits[0].matched
    assert ATLAS not in [
        h.paper.id for h in app.readers.library_search.search(me, "favourite").hits
    ]  # another's note
    assert app.readers.library_search.search(me, "thesis chapter").hits[0].paper.id == SHEEP  # a tag
    assert app.readers.library_search.search(me, "wavelet").hits[0].paper.id == ATLAS

    quick_sign_in(site, app, ME)
    page = site.get("/library/search?q=Maria", headers={"accept": "text/html"})
    assert page.status_code == 200
    assert page.headers["cache-control"] == "private, no-store"
    assert f'data-paper="{GLACIER}"' in page.text
    assert "<strong>Maria</strong>" in page.text  # the note, rendered and sanitised
    assert 'action="/library/search"' in site.get("/library", headers={"accept": "text/html"}).text
    api = site.get("/api/me/library/search?q=backscatter")
    assert api.status_code == 200
    assert api.json()["items"][0]["paper"]["id"] == GLACIER
    assert site.get("/api/me/library/search?q=").status_code == 400
    assert site.get("/api/me/library/search?q=" + "x" * 300).status_code == 400
    assert site.get("/library/search?q=" + "x" * 300, headers={"accept": "text/html"}).status_code == 400


def test_anonymous_visitors_have_no_library_to_search(site: TestClient) -> None:
    assert site.get("/api/me/library/search?q=x").status_code == 401
    page = site.get("/library/search?q=x", headers={"accept": "text/html"})
    assert page.status_code == 303
    assert page.headers["location"].startswith("/signin")


@pytest.fixture(scope="module")
def real_model_app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[App]:
    """The real MiniLM embedder (torch, offline), the four papers embedded by the real indexer."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    settings = Settings(data_dir=tmp_path_factory.mktemp("lib-meaning"), embedding_backend="torch")
    app = build_app(settings)
    load_papers(app)
    app.indexes.indexer.current().run()
    yield app
    app.close()


def test_meaning_finds_a_paper_that_shares_no_word_with_the_query(real_model_app: App) -> None:
    app = real_model_app
    me = _reader(app, ME)
    for paper in PAPER_IDS:
        app.readers.library.save(me, paper)
    query = "movement of aquatic animals"  # no word of it is in any title, abstract, author, tag or note
    found = app.readers.library_search.search(me, query)
    assert found.notes == ()
    assert found.hits[0].paper.id == ZEBRAFISH
    assert found.hits[0].matched == ("meaning",)
    # a paper about counting sheep, noted as livestock: found by a query of neither's words
    app.readers.library.set_note(me, SHEEP, "Reminds me of counting livestock on farms")
    assert app.readers.library_search.search(me, "cattle and farm animals").hits[0].paper.id == SHEEP


def test_the_page_of_the_real_app_over_http(real_model_app: App, tmp_path: Path) -> None:
    settings = real_model_app.settings
    with TestClient(create_app(lambda: build_app(settings)), follow_redirects=False) as client:
        quick_sign_in(client, real_model_app, ME)
        page = client.get("/library/search?q=movement+of+aquatic+animals", headers={"accept": "text/html"})
        assert page.status_code == 200
        first = page.text.index('data-paper="')
        assert page.text[first : first + 30].startswith(f'data-paper="{ZEBRAFISH}"')


class _Space:
    """A deterministic embedder of one model: every text points along ``axis`` of a 4-d space."""

    def __init__(self, model_id: str, axis: int) -> None:
        self.model_id, self.axis, self.dimension = model_id, axis, 4
        self.embedded: list[str] = []

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.embedded.extend(texts)
        out = np.zeros((len(texts), 4), dtype=np.float32)
        out[:, self.axis] = 1.0
        return out


class _Adoptable:
    """The embedder in use, which ``paperfeed model adapt`` may swap (as ``Embedders`` does)."""

    def __init__(self, first: _Space) -> None:
        self.model, self.asked = first, 0

    def current(self) -> _Space:
        self.asked += 1
        return self.model

    def loading(self) -> bool:
        return False


def _search(app: App, source: _Adoptable) -> LibrarySearch:
    """The app's library search over ``source``'s embedder, its rate limit off."""
    return LibrarySearch(
        app.readers.library_search.records,
        app.catalogue.visible,
        app.indexes.embeddings,
        source,
        ClientRateLimiter(0),
        app.settings.library_search_indexed_papers,
    )


def test_a_notes_vector_is_made_again_by_a_newly_adopted_model(app: App) -> None:
    me = _library(app)
    base, adapted = _Space("base", 0), _Space("adapted", 1)
    source = _Adoptable(base)
    search = _search(app, source)
    query = "zzz qqq"  # no word of any paper: only meaning can find one
    assert GLACIER in [h.paper.id for h in search.search(me, query).hits]  # the note, in base's space
    assert source.asked == 1  # one embedder for the whole search
    source.model = adapted  # paperfeed model adapt adopted another model
    found = search.search(me, query)
    assert source.asked == 2
    assert "Ask **Maria** about the backscatter calibration" in adapted.embedded  # the note, made again
    assert GLACIER in [h.paper.id for h in found.hits]
    assert all(h.matched == ("meaning",) for h in found.hits)


def test_notes_past_a_searchs_share_are_embedded_in_the_background(
    app: App, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(library_search_module, "NOTES_PER_SEARCH", 1)
    me = _library(app)
    for paper in (ZEBRAFISH, SHEEP):
        app.readers.library.set_note(me, paper, f"a note on {paper}")
    space = _Space("base", 0)
    search = _search(app, _Adoptable(space))
    try:
        first = search.search(me, "zzz qqq")  # one note embedded in the request, three handed on
        assert any("3 of your 4 notes are not searched by meaning yet" in n for n in first.notes), first.notes
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and search._waiting:
            time.sleep(0.05)
        found = search.search(me, "zzz qqq")
        assert found.notes == ()
        assert {h.paper.id for h in found.hits} == {ZEBRAFISH, GLACIER, SHEEP, ATLAS}  # every noted paper
    finally:
        search.close()
    assert search._worker is None or not search._worker.is_alive()


def test_a_library_with_more_notes_than_the_cache_holds_embeds_each_note_once(
    app: App, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The notes' cache is shared by every reader (least recent go first): a library bigger than it used
    to embed its evicted notes again on every search. Its index keeps the vectors it took."""
    monkeypatch.setattr(library_search_module, "NOTE_CACHE", 2)
    me = _library(app)
    for paper in (ZEBRAFISH, SHEEP):
        app.readers.library.set_note(me, paper, f"a note on {paper}")
    space = _Space("base", 0)
    search = _search(app, _Adoptable(space))
    try:
        first = search.search(me, "zzz qqq")
        assert first.notes == ()
        assert len(space.embedded) == 1 + 4  # the query and the four notes
        for query in ("yyy", "xxx"):
            found = search.search(me, query)
            assert {h.paper.id for h in found.hits} == {ZEBRAFISH, GLACIER, SHEEP, ATLAS}
        assert space.embedded[5:] == ["yyy", "xxx"]  # the queries only: no note again
        app.readers.library.set_note(me, SHEEP, "an edited note")
        search.search(me, "www")
        assert space.embedded[7:] == ["www", "an edited note"]  # only the edited note
    finally:
        search.close()
