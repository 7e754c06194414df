"""A store that is still filling: every main page answers 200, search says how much of it meaning
search covers (issue #14). The stores are built by the real import and indexing code, then left
half-done in the ways a first start leaves them."""

from __future__ import annotations

import html
import re
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from paperfeed.adapters.sources.jsonl_file import JsonlFileSource
from paperfeed.bootstrap import App
from paperfeed.services.ingest import IngestService

from .conftest import HTML, import_records, jsonl_bytes, rec

LISTED = [
    rec("2501.00101", daily_date="2025-01-06", upvotes=12),
    rec("2501.00102", daily_date="2025-01-06"),  # no upvotes at all
    rec("2501.00103", daily_date="2025-01-07", upvotes=0),
    rec("2501.00104", daily_date="2025-01-07"),
    rec("2501.00105"),  # never listed
    rec("2501.00106", published="2025-01-07T09:00:00Z"),
]
PAPER = "2501.00101"
PAGES = [
    "/",
    "/papers/date/2025-01-07",
    "/papers/date/2025-01-08",
    "/papers/week/2025-W02",
    "/papers/month/2025-01",
    "/trending",
    "/search",
    "/search?q=zebrafish",
    '/search?q="zebrafish locomotion" author:fishwick',
    f"/papers/{PAPER}",
    "/papers/2501.00105",
    f"/papers/{PAPER}.md",
    "/rss/daily",
    "/atom/daily",
    "/rss/trending",
    "/rss/search?q=zebrafish",
    "/api/daily_papers",
    "/api/daily_papers?date=2025-01-07",
    "/api/papers/search?q=zebrafish",
    f"/api/papers/{PAPER}",
    f"/api/papers/{PAPER}/similar",
    "/api/papers",
]


def _text(response: object) -> str:
    return " ".join(html.unescape(re.sub(r"<[^>]+>", "", response.text)).split())  # type: ignore[attr-defined]


def _embed(app: App, limit: int | None) -> None:
    summary = app.indexes.indexer.current().run(limit=limit)
    assert summary.embedded == (limit if limit is not None else len(LISTED))


def _nothing_embedded(app: App, tmp: Path) -> None:
    pass


def _two_embedded(app: App, tmp: Path) -> None:
    _embed(app, 2)


def _vector_folder_missing(app: App, tmp: Path) -> None:
    _embed(app, None)
    shutil.rmtree(app.indexes.vector_path)  # the vectors are in the database, the index folder is gone


def _all_embedded(app: App, tmp: Path) -> None:
    _embed(app, None)


SCENARIOS: dict[str, tuple[Callable[[App, Path], None], str | None]] = {
    "nothing embedded yet": (_nothing_embedded, "Meaning search covers none of the 6 papers yet"),
    "two papers embedded": (
        _two_embedded,
        "Meaning search covers 2 of 6 papers: 4 have no vector and no indexer is running",
    ),
    "vector index folder missing": (_vector_folder_missing, "Meaning search covers none of the 6 papers yet"),
    "everything embedded": (_all_embedded, None),
}


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_every_main_page_answers_on_a_half_filled_store(
    scenario: str, app: App, new_client: Callable[[], TestClient], tmp_path: Path
) -> None:
    import_records(app, tmp_path / "listed.jsonl", LISTED)
    prepare, notice = SCENARIOS[scenario]
    prepare(app, tmp_path)
    site = new_client()
    for path in PAGES:
        got = site.get(path, headers=HTML if not path.startswith(("/api/", "/rss/", "/atom/")) else {})
        assert got.status_code == 200, (scenario, path, got.text[:300])
    found = site.get("/search?q=zebrafish", headers=HTML)
    said = _text(found)
    assert "Zebrafish locomotion study 2501.00101" in said
    api = site.get("/api/papers/search?q=zebrafish")
    assert len(api.json()) == len(LISTED)
    if notice is None:
        assert "Meaning search covers" not in said
        assert "Meaning search" not in api.headers.get("x-search-notes", "")
    else:
        assert notice in said
        assert notice in api.headers["x-search-notes"]
        assert notice in _text(site.get("/search", headers=HTML))  # said before a query too
    home = _text(site.get("/", headers=HTML))
    assert "Zebrafish locomotion study 2501.00103" in home  # the latest day that has arrived
    assert "Welcome to paperfeed" not in home


def test_papers_missing_from_the_keyword_index_break_no_page(
    app: App, new_client: Callable[[], TestClient], tmp_path: Path
) -> None:
    """Papers written to the store while the site's keyword index did not follow (another writer without
    it): pages still answer, the papers are counted, and the index picks them up on its next open."""
    import_records(app, tmp_path / "listed.jsonl", LISTED)
    _embed(app, 2)
    site = new_client()
    assert site.get("/search?q=zebrafish", headers=HTML).status_code == 200  # the site's indexes are open
    late = [rec("2501.00107", daily_date="2025-01-08", title="Late glacier paper"), rec("2501.00108")]
    (tmp_path / "late.jsonl").write_bytes(jsonl_bytes(late))
    summary = IngestService(app.core.store).run(
        JsonlFileSource(tmp_path / "late.jsonl", batch_size=app.settings.batch_size)
    )  # no index follows
    assert summary.added == 2
    for path in [*PAGES, "/papers/2501.00107", "/papers/date/2025-01-08", "/api/papers/2501.00107/similar"]:
        got = site.get(path, headers=HTML if not path.startswith(("/api/", "/rss/", "/atom/")) else {})
        assert got.status_code == 200, (path, got.text[:300])
    assert "Late glacier paper" in _text(site.get("/", headers=HTML))  # the day page shows what arrived
    app.indexes.keyword.close()  # this test's importer lets go of the index writer, as a finished CLI would
    fresh = new_client()  # a new process opens the keyword index, which catches up with the store
    said = _text(fresh.get("/search?q=late glacier", headers=HTML))
    assert "Late glacier paper" in said
    assert "Meaning search covers 2 of 8 papers: 6 have no vector and no indexer is running" in said
