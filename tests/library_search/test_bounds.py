"""What one search of a library may cost (issue #41, finding 1), on SQLite and PostgreSQL.

The probe's attack: a reader with thousands of saved papers with notes sends queries of 50 distinct
four-letter words; every term was matched against every word of every paper (9-14 s a request), the whole
library was read again for each search, and signed-in readers had no limit. These tests pin the bounds
that replaced that, each by what a search reads or answers (the time it takes is bench/library_search.py's):
at most 32 distinct terms, nothing read again when the library did not change, only the changed papers read
when it did, the answers the same as the exhaustive matching's, and a limit per reader.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from paperfeed.bootstrap import App
from paperfeed.domain.library_search import MAX_LIBRARY_QUERY_TERMS
from paperfeed.domain.models import Paper
from paperfeed.services import library_search as library_search_module
from paperfeed.services.library_search import LibrarySearch, LibrarySearchLimited
from paperfeed.services.rate_limits import ClientRateLimiter
from paperfeed.settings import Settings
from tests.accounts.conftest import PAPER_IDS, make_settings, quick_sign_in
from tests.support.smtp_server import SmtpTestServer

ZEBRAFISH, GLACIER, SHEEP, ATLAS = PAPER_IDS
ME = "reader@example.org"


@pytest.fixture
def settings(tmp_path: Path, smtp_server: SmtpTestServer, db_url: str) -> Settings:
    return make_settings(tmp_path / "data", smtp_server, database_url=db_url)


class _Counting:
    """The visible-papers lookup, counting the ids each search asks for."""

    def __init__(self, papers: object) -> None:
        self.papers, self.asked = papers, []  # type: ignore[var-annotated]

    def get(self, ids: Sequence[str]) -> dict[str, Paper]:
        self.asked.append(list(ids))
        return self.papers.get(ids)  # type: ignore[attr-defined, no-any-return]


def _reader(app: App) -> int:
    app.readers.accounts.sign_up(ME, None, None, client="t", base_url="http://t")
    me = app.readers.accounts.user_by_email(ME).id
    for paper in (ZEBRAFISH, GLACIER, SHEEP):
        app.readers.library.save(me, paper, ["Reading"])
    app.readers.library.set_note(me, GLACIER, "Ask Maria about the backscatter calibration")
    return me


def _counted(
    app: App, counting: _Counting, limiter: ClientRateLimiter | None = None, indexed_papers: int | None = None
) -> LibrarySearch:
    """The app's library search reading papers through ``counting`` (the rate limit off by default)."""
    base = app.readers.library_search
    papers: Any = counting  # the one method search calls, counted
    return LibrarySearch(
        base.records,
        papers,
        base.embeddings,
        None,
        limiter or ClientRateLimiter(0),
        base.indexed_papers if indexed_papers is None else indexed_papers,
    )


def _search(app: App) -> tuple[LibrarySearch, _Counting]:
    counting = _Counting(app.catalogue.visible)
    return _counted(app, counting), counting


def _ids(search: LibrarySearch, me: int, query: str) -> list[str]:
    return [h.paper.id for h in search.search(me, query).hits]


def test_a_long_query_searches_its_first_32_words_and_says_so(app: App) -> None:
    me = _reader(app)
    search, _ = _search(app)
    words = [f"q{n:02d}" for n in range(50)]
    found = search.search(me, " ".join([*words[:40], "backscatter", *words[40:]]))
    assert found.hits == ()  # "backscatter" is the 41st word: past the cap, not searched
    assert f"searched the first {MAX_LIBRARY_QUERY_TERMS} of the query's 51 words" in found.notes
    first = search.search(me, " ".join(["backscatter", *words]))
    assert [h.paper.id for h in first.hits] == [GLACIER]


def test_a_search_reads_no_paper_again_while_the_library_is_unchanged(app: App) -> None:
    me = _reader(app)
    search, counting = _search(app)
    assert _ids(search, me, "calibration") == [GLACIER]
    assert sorted(counting.asked[0]) == sorted([ZEBRAFISH, GLACIER, SHEEP])  # the index is built once
    counting.asked.clear()
    for _ in range(3):
        assert _ids(search, me, "calibration") == [GLACIER]
    assert counting.asked == [[GLACIER]] * 3  # only the hits, read afresh to be shown


def test_a_change_reads_only_the_papers_it_changed(app: App) -> None:
    me = _reader(app)
    search, counting = _search(app)
    assert _ids(search, me, "livestock") == []
    counting.asked.clear()
    app.readers.library.set_note(me, SHEEP, "Counting livestock, a lower bound")
    assert _ids(search, me, "livestock") == [SHEEP]
    assert counting.asked[0] == [SHEEP]  # the changed paper; then the hit
    app.readers.library.save(me, ATLAS, ["Thesis"])
    app.readers.library.set_note(me, GLACIER, "")  # the note goes: its words stop matching
    app.readers.library.unsave(me, ZEBRAFISH)
    assert _ids(search, me, "thesis") == [ATLAS]
    assert _ids(search, me, "backscatter") == [GLACIER]  # in its abstract too: still found
    assert _ids(search, me, "calibration") == []  # only the note held it
    assert ZEBRAFISH not in _ids(search, me, "zebrafish")
    assert search.search(me, "livestock").searched == 3


def test_a_renamed_tag_is_searched_by_its_new_name(app: App) -> None:
    me = _reader(app)
    search, _ = _search(app)
    assert set(_ids(search, me, "reading")) == {ZEBRAFISH, GLACIER, SHEEP}
    tag = next(t for t in app.readers.library.tags(me) if t.name == "Reading")
    app.readers.library.update_tag(me, tag.id, name="Journal club")
    assert _ids(search, me, "reading") == []
    assert set(_ids(search, me, "journal club")) == {ZEBRAFISH, GLACIER, SHEEP}


def test_many_changes_are_folded_into_one_index_with_the_same_answers(
    app: App, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(library_search_module, "FOLD_AT", 1)
    me = _reader(app)
    search, counting = _search(app)
    assert _ids(search, me, "calibration") == [GLACIER]
    noted: list[str] = []
    for n, paper in enumerate((ZEBRAFISH, SHEEP, ATLAS)):
        app.readers.library.set_note(me, paper, f"fold{n} shared words")
        noted.append(paper)
        counting.asked.clear()
        assert set(_ids(search, me, "shared")) == set(noted)
        assert counting.asked[0] == [paper]  # folding reads no paper again
    assert _ids(search, me, "fold2") == [ATLAS]
    assert _ids(search, me, "calibration") == [GLACIER]
    index = search._indexes[me]
    assert len(index.changed) <= 1
    assert index.alive.all()  # folded: no dead copies kept


def test_a_paper_hidden_since_the_index_was_built_is_not_shown(app: App) -> None:
    me = _reader(app)
    search, _ = _search(app)
    assert _ids(search, me, "calibration") == [GLACIER]
    app.readers.accounts.store.hide_paper(GLACIER, None, "spam", app.readers.accounts.clock())
    assert _ids(search, me, "calibration") == []  # only the note held it


def test_searches_past_the_readers_limit_are_429_with_retry_after(
    app: App, site: TestClient, new_browser: Callable[[], TestClient]
) -> None:
    _reader(app)
    quick_sign_in(site, app, ME)
    limit = app.settings.library_search_rate_per_minute
    for _ in range(limit):
        assert site.get("/api/me/library/search?q=calibration").status_code == 200
    refused = site.get("/api/me/library/search?q=calibration")
    assert refused.status_code == 429
    assert int(refused.headers["retry-after"]) >= 1
    assert "too many searches of your library" in refused.json()["error"]
    page = site.get("/library/search?q=calibration", headers={"accept": "text/html"})
    assert page.status_code == 429
    assert "too many searches of your library" in page.text
    other = new_browser()
    quick_sign_in(other, app, "someone@example.org")
    assert other.get("/api/me/library/search?q=calibration").status_code == 200  # per reader


def test_readers_who_evict_each_other_pay_for_the_rebuilds(app: App, monkeypatch: pytest.MonkeyPatch) -> None:
    """The attack: two readers whose libraries do not fit in the process's indexes together
    (``PAPERFEED_LIBRARY_SEARCH_INDEXED_PAPERS``) take turns, so every search drops the other's index and
    rebuilds its own: a full read of the library each time (seconds of CPU for a large one) for each of
    the 30 searches a minute the limit allowed each of them. Now a rebuild of a dropped index counts as
    more searches (one per ``REBUILD_PAPERS_PER_SEARCH`` papers; 1 here, for 3-paper libraries), so the
    rebuilds they can cause are a few, not the rate limit's 30; a reader whose index stays pays nothing."""
    monkeypatch.setattr(library_search_module, "REBUILD_PAPERS_PER_SEARCH", 1)
    me = _reader(app)
    app.readers.accounts.sign_up("other@example.org", None, None, client="t", base_url="http://t")
    other = app.readers.accounts.user_by_email("other@example.org").id
    for paper in (GLACIER, SHEEP, ATLAS):
        app.readers.library.save(other, paper, ["Reading"])
    counting = _Counting(app.catalogue.visible)
    now = [0.0]  # no time passes: the buckets refill only by what the test does
    limit = 30
    search = _counted(app, counting, ClientRateLimiter(limit, clock=lambda: now[0]), indexed_papers=4)
    done = {me: 0, other: 0}
    refused: dict[int, LibrarySearchLimited] = {}
    for _ in range(limit):
        for reader in (me, other):
            if reader in refused:
                continue
            try:
                search.search(reader, "calibration")
                done[reader] += 1
            except LibrarySearchLimited as exc:
                refused[reader] = exc
    full_reads = sum(1 for asked in counting.asked if len(asked) == 3)
    assert full_reads >= done[me] + done[other] - 1  # the premise: (nearly) every search was a rebuild
    assert set(refused) == {me, other}
    assert all(exc.retry_after >= 1 for exc in refused.values())
    # the first build is free (30 - 1), then each search is 1 + 3 of the 30: 8 more, the last on credit
    assert done == {me: 9, other: 9}

    alone = _counted(app, counting, ClientRateLimiter(limit, clock=lambda: now[0]), indexed_papers=4)
    for _ in range(limit):  # an index that stays: every search the limit allows, and no rebuild
        alone.search(me, "calibration")
    with pytest.raises(LibrarySearchLimited):
        alone.search(me, "calibration")
