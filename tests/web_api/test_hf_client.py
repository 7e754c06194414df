"""The real ``huggingface_hub`` client against paperfeed served by uvicorn on loopback."""

from __future__ import annotations

from datetime import UTC, date, datetime
from typing import Any

import pytest
from huggingface_hub import HfApi
from huggingface_hub.errors import HfHubHTTPError

from paperfeed.bootstrap import App

pytestmark = pytest.mark.shared


@pytest.fixture(autouse=True)
def _online_hub(monkeypatch: pytest.MonkeyPatch) -> None:
    """The embedders switch huggingface_hub to offline mode process-wide (they must never download);
    a test in the same worker may have done so. Our loopback server is the hub here, so allow it."""
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)


@pytest.fixture(scope="module")
def hf(live_url: str) -> HfApi:
    return HfApi(endpoint=live_url, token=False)


def test_list_daily_papers_by_date_week_month_and_pages(hf: HfApi, web_app: App) -> None:
    feeds = web_app.catalogue.feeds
    day = list(hf.list_daily_papers(date="2025-03-14", limit=100))
    expected = feeds.day(date(2025, 3, 14)).items
    assert [p.id for p in day] == [i.paper.id for i in expected]
    assert [p.title for p in day] == [i.paper.title for i in expected]
    assert [p.upvotes or 0 for p in day] == [i.upvotes for i in expected]
    assert all(p.submitted_at == datetime(2025, 3, 14, tzinfo=UTC) for p in day)
    assert day[0].published_at == expected[0].paper.published
    assert [a.name for a in day[0].authors or []] == list(expected[0].paper.authors)

    week = list(hf.list_daily_papers(week="2025-W11", p=1, limit=20))
    assert [p.id for p in week] == [i.paper.id for i in feeds.week("2025-W11", limit=20, offset=20).items]
    month = list(hf.list_daily_papers(month="2025-03", sort="trending", limit=15))
    assert [p.id for p in month] == [
        i.paper.id for i in feeds.month("2025-03", limit=15, sort="trending").items
    ]
    latest = list(hf.list_daily_papers(limit=5))
    assert [p.id for p in latest] == [i.paper.id for i in feeds.day(None).items[:5]]


def test_paper_info(hf: HfApi, hf_records: dict[str, Any]) -> None:
    info = hf.paper_info("2503.10613v2")
    rec = hf_records["2503.10613"]
    assert info.id == "2503.10613"
    assert info.title == rec["title"]
    assert info.summary == rec["abstract"]
    assert info.upvotes == rec["upvotes"]
    assert [a.name for a in info.authors or []] == rec["authors"]
    assert info.published_at == datetime.fromisoformat(rec["published"])
    assert info.submitted_at == datetime(2025, 3, 14, tzinfo=UTC)
    assert info.github_repo == rec["github_repo"]
    starred = next(r for r in hf_records.values() if r.get("github_stars") and r.get("organization"))
    other = hf.paper_info(starred["id"])
    assert other.github_stars == starred["github_stars"]
    assert other.organization is not None
    assert other.organization.fullname == starred["organization"]


def test_unknown_and_invalid_papers_raise_http_errors(hf: HfApi) -> None:
    with pytest.raises(HfHubHTTPError) as missing:
        hf.paper_info("2503.99999")
    assert missing.value.response.status_code == 404
    assert "not in this paperfeed instance" in str(missing.value)
    with pytest.raises(HfHubHTTPError) as invalid:
        hf.read_paper("not-a-paper")
    assert invalid.value.response.status_code == 400


def test_read_paper(hf: HfApi, hf_records: dict[str, Any]) -> None:
    text = hf.read_paper("2503.10613")
    rec = hf_records["2503.10613"]
    assert text.startswith(f"# {rec['title']}\n")
    assert rec["abstract"][:100] in text


def test_list_papers_search(hf: HfApi, web_app: App) -> None:
    found = list(hf.list_papers(query="multi-turn image editing", limit=10))
    expected = web_app.search.hybrid.search("multi-turn image editing", limit=10).hits
    assert [p.id for p in found] == [h.paper.id for h in expected]
    assert found
