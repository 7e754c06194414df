"""An instance without papers greets with a first-run page, not an empty feed (issue #14)."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

from fastapi.testclient import TestClient

from paperfeed.bootstrap import App
from paperfeed.domain.ingest import Batch
from paperfeed.web.headers import CSP

from .conftest import HTML, import_records, rec, sign_in_as


def _urls(html: str) -> list[str]:
    return re.findall(r'(?:src|href|action)="([^"]+)"', html)


def test_an_empty_store_shows_the_first_run_page(site: TestClient) -> None:
    for path in ("/", "/papers/date/2025-01-06"):
        page = site.get(path, headers=HTML)
        assert page.status_code == 200, path
        text = " ".join(page.text.split())
        assert "Welcome to paperfeed" in text
        assert "This instance holds no papers yet" in text
        assert "make run DATA=papers.jsonl.gz" in text
        assert "paperfeed import papers.jsonl.gz" in text
        assert "drag and drop a JSONL or BibTeX file" in text
        assert "fetches Hugging Face Daily Papers and the newest arXiv listings on start" in text
        for variable in ("PAPERFEED_HF_API_URL", "PAPERFEED_ARXIV_OAI_URL", "PAPERFEED_CONTACT_EMAIL"):
            assert variable in text
        assert "No papers listed on this day" not in text  # not the empty feed
        assert page.headers["content-security-policy"] == CSP
        # served locally: every script, stylesheet, link and form target is on this site
        foreign = [u for u in _urls(page.text) if u.startswith(("http:", "https:", "//"))]
        assert foreign == ["http://testserver/"], foreign  # the canonical link only


def test_only_an_administrator_gets_the_drop_zone(new_client: Callable[[], TestClient], app: App) -> None:
    anonymous, reader, admin = new_client(), new_client(), new_client()
    sign_in_as(reader, app, "reader@example.org")
    sign_in_as(admin, app, "admin@example.org", role="admin")
    clients = {"anon": anonymous, "reader": reader, "admin": admin}
    seen = {who: client.get("/", headers=HTML).text for who, client in clients.items()}
    assert 'action="/admin/import"' not in seen["anon"]
    assert 'href="/signin?next=/"' in seen["anon"]
    assert 'action="/admin/import"' not in seen["reader"]
    assert "Your account is not an administrator" in seen["reader"]
    assert 'action="/admin/import"' in seen["admin"]
    assert 'enctype="multipart/form-data"' in seen["admin"]
    assert 'type="file" name="file"' in seen["admin"]
    assert "data-dropzone" in seen["admin"]


def test_papers_without_daily_listings_are_not_a_first_run(
    site: TestClient, app: App, tmp_path: Path
) -> None:
    import_records(app, tmp_path / "p.jsonl", [rec("2501.00101"), rec("2501.00102")])  # no daily_date
    page = site.get("/", headers=HTML)
    assert page.status_code == 200
    text = " ".join(page.text.split())
    assert "Welcome to paperfeed" not in text
    assert "This instance holds 2 papers, but none is on a daily list" in text


def test_a_listed_paper_ends_the_first_run(site: TestClient, app: App, tmp_path: Path) -> None:
    assert "Welcome to paperfeed" in site.get("/", headers=HTML).text
    import_records(app, tmp_path / "p.jsonl", [rec("2501.00101", daily_date="2025-01-06", upvotes=3)])
    page = site.get("/", headers=HTML)
    assert "Welcome to paperfeed" not in page.text
    assert "Zebrafish locomotion study 2501.00101" in page.text


def test_an_empty_batch_leaves_the_first_run_page(site: TestClient, app: App) -> None:
    app.core.store.apply_batch(Batch())  # a harvest that found nothing
    assert "Welcome to paperfeed" in site.get("/", headers=HTML).text
