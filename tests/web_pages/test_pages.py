"""The HTML pages through the real ASGI app on a real store of the Hugging Face daily papers."""

from __future__ import annotations

import itertools
from datetime import date, timedelta
from pathlib import Path
from typing import Any

import lxml.html
import pytest
from fastapi import Request
from fastapi.testclient import TestClient

from paperfeed.bootstrap import build_app
from paperfeed.domain.feed import TRENDING_FORMULA
from paperfeed.settings import Settings
from paperfeed.web import create_app
from paperfeed.web.rendering import error_page
from tests.web_pages.conftest import HOSTILE_DAY

Records = dict[str, dict[str, Any]]


def _text(element: object) -> str:
    """An element's text content (lxml's stubs give cssselect() results the base element type)."""
    assert isinstance(element, lxml.html.HtmlElement)
    return str(element.text_content())


def _get(client: TestClient, path: str, status: int = 200) -> tuple[Any, Any]:
    response = client.get(path)
    assert response.status_code == status, (path, response.status_code, response.text[:300])
    assert response.headers["content-type"].startswith("text/html")
    return response, lxml.html.fromstring(response.text)


def _listed(records: Records) -> dict[date, list[dict[str, Any]]]:
    days: dict[date, list[dict[str, Any]]] = {}
    for rec in records.values():
        for text in rec.get("daily_dates") or ([rec["daily_date"]] if rec.get("daily_date") else []):
            days.setdefault(date.fromisoformat(text), []).append(rec)
    return days


def _card_ids(doc: lxml.html.HtmlElement) -> list[str]:
    return [a.get("href").removeprefix("/papers/") for a in doc.cssselect("ol.cards .card-title a")]


def _votes(doc: lxml.html.HtmlElement) -> list[int]:
    return [int(v.text_content().strip()) for v in doc.cssselect("ol.cards .votes .count")]


def test_home_shows_the_latest_day_ranked_by_upvotes(client: TestClient, hf_records: Records) -> None:
    days = _listed(hf_records)
    latest = max(days)
    response, doc = _get(client, "/")
    heading = doc.cssselect("h1")[0].text_content()
    assert f"{latest:%A}, {latest.day} {latest:%B %Y}" in heading
    assert set(_card_ids(doc)) == {rec["id"] for rec in days[latest]}
    votes = _votes(doc)
    assert votes == sorted(votes, reverse=True)
    assert votes[0] == max(rec["upvotes"] for rec in days[latest])
    assert "script-src 'self'" in response.headers["content-security-policy"]
    assert doc.findtext(".//title").startswith(f"Daily Papers, {latest:%a}")
    # The abstract is there without JavaScript, behind a disclosure.
    first = doc.cssselect("ol.cards article")[0]
    assert first.cssselect("details.abstract summary")[0].text_content().strip() == "Abstract"


def test_day_navigation_skips_empty_days_and_says_so(client: TestClient, hf_records: Records) -> None:
    days = sorted(_listed(hf_records))
    # A listed day whose previous listed day is more than one calendar day before it (a weekend).
    day, before = next((d, p) for p, d in itertools.pairwise(days) if (d - p).days == 3)
    _, doc = _get(client, f"/papers/date/{day.isoformat()}")
    prev = doc.cssselect('a[rel="prev"]')[0]
    assert prev.get("href") == f"/papers/date/{before.isoformat()}"
    assert "skips 2 days without papers" in prev.text_content()
    assert any("2 days without papers" in li.text_content() for li in doc.cssselect(".skip-notes li"))
    after = days[days.index(day) + 1]
    assert doc.cssselect('a[rel="next"]')[0].get("href") == f"/papers/date/{after.isoformat()}"


def test_a_day_without_papers_points_to_the_nearest_days(client: TestClient, hf_records: Records) -> None:
    days = sorted(_listed(hf_records))
    listed = set(days)
    empty = next(d for d in (days[10] + timedelta(n) for n in range(1, 10)) if d not in listed)
    _, doc = _get(client, f"/papers/date/{empty.isoformat()}")
    assert doc.cssselect("ol.cards") == []
    text = _text(doc.cssselect(".empty")[0])
    assert "No papers" in text
    before = max(d for d in days if d < empty)
    assert doc.cssselect(".empty a")[0].get("href") == f"/papers/date/{before.isoformat()}"


def test_week_and_month_views_with_the_period_switch(client: TestClient, hf_records: Records) -> None:
    days = _listed(hf_records)
    monday = date(2025, 3, 17)
    in_week = {rec["id"] for d, recs in days.items() if monday <= d <= monday + timedelta(6) for rec in recs}
    _, doc = _get(client, "/papers/week/2025-W12")
    assert f"{len(in_week)} papers" in _text(doc.cssselect(".lede")[0])
    switch = {a.text_content(): a for a in doc.cssselect("nav.segmented a")}
    assert switch["Week"].get("aria-current") == "page"
    assert switch["Day"].get("href") == "/papers/date/2025-03-17"
    assert switch["Month"].get("href") == "/papers/month/2025-03"
    assert doc.cssselect('a[rel="prev"]')[0].get("href") == "/papers/week/2025-W11"
    assert doc.cssselect('a[rel="next"]')[0].get("href") == "/papers/week/2025-W13"
    assert len(_card_ids(doc)) == min(50, len(in_week))

    in_month = {rec["id"] for d, recs in days.items() if (d.year, d.month) == (2025, 3) for rec in recs}
    _, doc = _get(client, "/papers/month/2025-03")
    assert f"{len(in_month)} papers" in _text(doc.cssselect(".lede")[0])
    first_page = _card_ids(doc)
    pages = doc.cssselect("nav.pagination li a")
    assert pages
    assert pages[-1].text_content() == str(-(-len(in_month) // 50))
    _, doc2 = _get(client, "/papers/month/2025-03?page=2")
    second_page = _card_ids(doc2)
    assert second_page
    assert not set(second_page) & set(first_page)
    assert doc2.cssselect("ol.cards .rank")[0].text_content().strip() == "51."
    assert min(_votes(doc)) >= max(_votes(doc2))


@pytest.mark.parametrize(
    ("path", "heading"),
    [
        ("/papers/date/2025-02-30", "No such day"),
        ("/papers/date/yesterday", "No such day"),
        ("/papers/week/2025-W60", "No such week"),
        ("/papers/month/2025-13", "No such month"),
    ],
)
def test_bad_periods_get_a_friendly_404(client: TestClient, path: str, heading: str) -> None:
    _, doc = _get(client, path, status=404)
    assert doc.findtext(".//h1") == heading
    assert doc.cssselect("form[role=search]")


def test_date_picker_works_without_javascript(client: TestClient) -> None:
    response = client.get("/papers/date?date=2025-03-18")
    assert response.status_code == 303
    assert response.headers["location"] == "/papers/date/2025-03-18"
    assert client.get("/papers/date?date=").headers["location"] == "/"
    _get(client, "/papers/date?date=18.03.2025", status=404)


def test_odd_page_numbers_are_a_400_naming_the_parameter(client: TestClient) -> None:
    response = client.get("/papers/month/2025-03?page=abc", headers={"accept": "text/html"})
    assert response.status_code == 400
    assert "page: " in response.text  # more cases: test_bad_input_pages.py


def test_trending_ranks_by_the_documented_score(client: TestClient) -> None:
    _, doc = _get(client, "/trending")
    assert TRENDING_FORMULA in doc.cssselect(".formula code")[0].text_content()
    labels = [p.text_content() for p in doc.cssselect("ol.cards .extra")]
    scores = [float(label.split()[1]) for label in labels]
    assert len(scores) > 10
    assert scores == sorted(scores, reverse=True)
    assert doc.cssselect('.site-nav a[aria-current="page"]')[0].text_content() == "Trending"


def test_paper_page_has_everything_known(client: TestClient, hf_records: Records) -> None:
    rec = next(r for r in hf_records.values() if r.get("github_repo") and r.get("ai_summary"))
    response, doc = _get(client, f"/papers/{rec['id']}")
    assert doc.findtext(".//h1").strip() == " ".join(rec["title"].split())
    authors = [a.text_content() for a in doc.cssselect(".authors.full a")]
    assert authors == rec["authors"]
    assert doc.cssselect(".abstract-full")[0].text_content().startswith(rec["abstract"][:60])
    links = {a.text_content().strip(): a.get("href") for a in doc.cssselect(".actions a")}
    assert links["arXiv abstract"] == f"https://arxiv.org/abs/{rec['id']}"
    assert links["PDF"] == f"https://arxiv.org/pdf/{rec['id']}"
    assert links["GitHub"] == rec["github_repo"].strip()
    bib = doc.cssselect("pre#bibtex")[0].text_content()
    assert f"eprint        = {{{rec['id']}}}" in bib
    assert bib.startswith("@misc{")
    meta = {m.get("property") or m.get("name"): m.get("content") for m in doc.cssselect("meta")}
    assert meta["og:type"] == "article"
    assert meta["og:title"] == doc.findtext(".//h1").strip()
    assert meta["description"]
    assert meta["og:url"].endswith(f"/papers/{rec['id']}")
    listed = [a.get("href") for a in doc.cssselect(".details a[href^='/papers/date/']")]
    assert listed == [f"/papers/date/{d}" for d in rec.get("daily_dates") or [rec["daily_date"]]]
    assert "Copy BibTeX" in response.text


def test_versioned_ids_show_the_same_paper_with_canonical_link(client: TestClient) -> None:
    _, plain = _get(client, "/papers/2401.09603")
    _, versioned = _get(client, "/papers/2401.09603v2")
    assert versioned.findtext(".//h1") == plain.findtext(".//h1")
    canonical = versioned.cssselect('link[rel="canonical"]')[0].get("href")
    assert canonical.endswith("/papers/2401.09603")
    links = {a.text_content().strip(): a.get("href") for a in versioned.cssselect(".actions a")}
    assert links["arXiv abstract"] == "https://arxiv.org/abs/2401.09603v2"
    assert "version 2" in versioned.cssselect(".paper-head .notice")[0].text_content()


@pytest.mark.parametrize(
    ("asked", "canonical"),
    [
        ("arXiv:2401.09603", "/papers/2401.09603"),
        ("https://arxiv.org/abs/2401.09603v1", "/papers/2401.09603v1"),
        ("math.AG/0601001", "/papers/math/0601001"),
    ],
)
def test_other_spellings_redirect_to_the_canonical_url(
    client: TestClient, asked: str, canonical: str
) -> None:
    response = client.get(f"/papers/{asked}")
    assert response.status_code == 301
    assert response.headers["location"] == canonical


def test_old_style_ids_work(client: TestClient) -> None:
    _, doc = _get(client, "/papers/hep-th/9901001")
    assert doc.findtext(".//h1") == "An old-style identifier paper on strings"
    links = {a.text_content().strip(): a.get("href") for a in doc.cssselect(".actions a")}
    assert links["arXiv abstract"] == "https://arxiv.org/abs/hep-th/9901001"
    assert "doi.org/10.1000/xyz123" in doc.cssselect(".details a")[0].get("href")
    _, versioned = _get(client, "/papers/hep-th/9901001v3")
    assert versioned.findtext(".//h1") == doc.findtext(".//h1")


def test_unknown_and_invalid_ids_get_a_friendly_404(client: TestClient) -> None:
    _, doc = _get(client, "/papers/2512.99999", status=404)
    assert doc.findtext(".//h1") == "Paper not found"
    assert doc.cssselect('a[href="https://arxiv.org/abs/2512.99999"]')
    assert doc.cssselect('meta[name="robots"]')[0].get("content") == "noindex"
    _, doc = _get(client, "/papers/not-a-paper", status=404)
    assert doc.findtext(".//h1") == "That is not a paper id"
    assert doc.cssselect("input#nf-q")[0].get("value") == "not-a-paper"


def _assert_inert(doc: lxml.html.HtmlElement) -> None:
    """No markup from the data made it into the page as markup."""
    scripts = doc.cssselect("script")
    assert [s.get("src", "").split("?")[0] for s in scripts] == ["/static/app.js"]
    assert not doc.cssselect("img, svg[onload], iframe, object, embed, textarea")
    for element in doc.iter():
        if not isinstance(element.tag, str):
            continue
        assert not [a for a in element.attrib if a.lower().startswith("on")], lxml.html.tostring(element)
        for attr in ("href", "src", "action"):
            value = (element.get(attr) or "").strip().lower()
            assert not value.startswith(("javascript:", "data:", "vbscript:")), value


def test_hostile_text_is_escaped_on_the_day_page(client: TestClient, hostile_records: Records) -> None:
    response, doc = _get(client, f"/papers/date/{HOSTILE_DAY}")
    _assert_inert(doc)
    body = response.text
    assert '<script>alert("title-xss")' not in body
    assert "&lt;script&gt;alert(&#34;title-xss&#34;)&lt;/script&gt;" in body
    titles = [a.text_content() for a in doc.cssselect("ol.cards .card-title a")]
    assert hostile_records["2405.00001"]["title"] in titles  # shown literally, entities and all
    abstract = doc.cssselect("ol.cards details.abstract p")[0].text_content()
    assert "<img src=x onerror=alert('abstract-xss')>" in abstract
    assert "&#x3C;script&#x3E;" in abstract
    assert "Costs $5 and $10, an unbalanced $ sign" in abstract
    assert "<b>Mallory</b> O'Hara" in [a.text_content() for a in doc.cssselect(".authors a")]
    assert "<svg onload=alert('org-xss')>" in doc.cssselect(".org bdi")[0].text_content()
    # A javascript: repository is not linked at all.
    hostile_card = doc.cssselect("ol.cards article")[0]
    assert not hostile_card.cssselect("a.gh")


def test_hostile_text_is_escaped_on_the_paper_page(client: TestClient) -> None:
    _response, doc = _get(client, "/papers/2405.00001")
    _assert_inert(doc)
    assert doc.findtext(".//title").startswith('<script>alert("title-xss")</script> Attention')
    links = [a.text_content().strip() for a in doc.cssselect(".actions a")]
    assert links == ["arXiv abstract", "PDF"]  # javascript: GitHub and project links dropped
    _, rtl = _get(client, "/papers/2405.00002")
    _assert_inert(rtl)
    assert rtl.cssselect("h1")[0].get("dir") == "auto"
    text = rtl.cssselect(".abstract-full")[0].text_content()
    assert "<script>alert('math-xss')</script>" in text
    assert "\\unknowncmd{y}" in text
    math = rtl.cssselect(".abstract-full math")
    assert [m.get("alttext") for m in math] == ["\\alpha", "\\href{javascript:alert('href-xss')}{x}"]
    assert "javascript" not in lxml.html.tostring(math[1], encoding="unicode").replace(
        math[1].get("alttext"), ""
    )


def test_math_becomes_mathml_with_a_plain_text_title(client: TestClient) -> None:
    _, doc = _get(client, "/papers/2405.00003")
    h1 = doc.cssselect("h1")[0]
    assert [m.get("alttext") for m in h1.cssselect("math")] == ["\\mathcal{O}(n^2)", "K"]
    assert doc.findtext(".//title").startswith("Sub-𝒪(n^2) attention for K tokens")
    abstract = doc.cssselect(".abstract-full")[0]
    assert len(abstract.cssselect("math mfrac")) == 1
    assert abstract.cssselect(".tex")[0].text_content() == "$x^$"
    links = {a.text_content().strip(): a.get("href") for a in doc.cssselect(".actions a")}
    assert links["Project page"] == "https://example.org/subquadratic"
    assert "1.2k GitHub stars" in doc.cssselect(".paper-stats")[0].text_content()


def test_pages_are_accessible_by_structure(client: TestClient) -> None:
    for path in ("/", "/trending", "/papers/week/2025-W12", "/papers/2401.09603", "/papers/2512.99999"):
        response = client.get(path)
        doc = lxml.html.fromstring(response.text)
        assert doc.get("lang") == "en"
        assert doc.cssselect("a.skip-link")[0].get("href") == "#main"
        assert doc.cssselect("main#main")
        assert doc.cssselect("header")
        assert doc.cssselect("footer")
        assert len(doc.cssselect("h1")) == 1, path
        assert doc.cssselect('meta[name="viewport"]')
        assert doc.cssselect('meta[name="description"]')
        for field in doc.cssselect("input:not([type=hidden]):not([type=submit])"):
            assert doc.cssselect(f'label[for="{field.get("id")}"]'), (path, field.get("name"))


def test_static_files_are_served_with_versioned_urls(client: TestClient) -> None:
    _, doc = _get(client, "/")
    css = doc.cssselect('link[rel="stylesheet"]')[0].get("href")
    assert css.startswith("/static/style.css?v=")
    response = client.get(css)
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/css")
    assert "prefers-color-scheme: dark" in response.text
    assert response.headers["cache-control"] == "public, max-age=31536000, immutable"
    assert client.get("/static/style.css").headers["cache-control"] == "no-cache"
    assert client.get("/static/style.css?v=old").headers["cache-control"] == "no-cache"
    assert client.get("/static/../pages.py").status_code == 404
    js = client.get(doc.cssselect("script")[0].get("src"))
    assert js.status_code == 200
    assert "javascript" in js.headers["content-type"]


def test_feed_pages_link_their_rss_and_atom_feeds(client: TestClient) -> None:
    for path, expected in (
        ("/", "/rss/daily"),
        ("/papers/date/2025-03-18", "/rss/daily?date=2025-03-18"),
        ("/trending", "/rss/trending"),
    ):
        _, doc = _get(client, path)
        rss = doc.cssselect('link[rel="alternate"][type="application/rss+xml"]')[0].get("href")
        atom = doc.cssselect('link[rel="alternate"][type="application/atom+xml"]')[0].get("href")
        assert rss == expected
        assert atom == expected.replace("/rss/", "/atom/")
        for url in (rss, atom):
            response = client.get(url)
            assert response.status_code == 200, url
            assert "xml" in response.headers["content-type"]


def test_error_page_for_error_handlers() -> None:
    scope = {
        "type": "http",
        "method": "GET",
        "path": "/api/x",
        "raw_path": b"/api/x",
        "query_string": b"",
        "headers": [(b"host", b"example.org")],
        "server": ("example.org", 80),
        "scheme": "http",
        "root_path": "",
        "app": create_app(lambda: build_app(Settings())),  # its renderer; the App itself is never built
    }
    response = error_page(
        Request(scope), 503, "Search is warming up", "Try again <soon>.", headers={"Retry-After": "5"}
    )
    assert response.status_code == 503
    assert response.headers["retry-after"] == "5"
    assert "script-src 'self'" in response.headers["content-security-policy"]
    doc = lxml.html.fromstring(bytes(response.body))
    assert _text(doc.cssselect(".status-code")[0]) == "503"
    assert doc.findtext(".//h1") == "Search is warming up"
    assert _text(doc.cssselect(".lede")[0]) == "Try again <soon>."
    assert doc.cssselect('link[rel="canonical"]')[0].get("href") == "http://example.org/api/x"


def test_an_empty_instance_says_how_to_get_papers(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path, database_url=None, embedding_backend="fake")
    with TestClient(create_app(lambda: build_app(settings))) as fresh:
        for path in ("/", "/papers/week/2025-W12", "/trending"):
            response = fresh.get(path)
            assert response.status_code == 200, path
        doc = lxml.html.fromstring(fresh.get("/").text)  # the first-run page (tests/first_run has more)
        assert doc.findtext(".//h1") == "Welcome to paperfeed"
        assert "paperfeed import" in _text(doc.cssselect(".first-run")[0])
        assert fresh.get("/papers/2401.09603").status_code == 404
