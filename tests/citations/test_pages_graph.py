"""The citation graph on the paper page, on SQLite and PostgreSQL, over a graph stored through
``CitationRecords.save_links`` (``tests/support/citation_graph.py``): counts in the header, Related work,
References and Cited by with their paging, sorting and "in this instance" filter as plain links, and
bad query parameters answered 400 (never a 500)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import lxml.html
import pytest
from fastapi.testclient import TestClient

from paperfeed.bootstrap import build_app
from paperfeed.domain.paper_graph import Citation, PaperLinks, WorkRef
from paperfeed.settings import Settings
from paperfeed.web import create_app
from paperfeed.web.security import SESSION_COOKIE
from tests.community.conftest import add_reader
from tests.conftest import BACKENDS
from tests.support.citation_graph import CITER, EARLIER, LONELY, ME, PRIOR, THIRD, graph_settings

HTML = {"accept": "text/html"}


@pytest.fixture(scope="module", params=BACKENDS)
def settings(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Settings]:
    pg = request.getfixturevalue("pg_server") if request.param != "sqlite" else None
    with graph_settings(request.param, tmp_path_factory.mktemp("graph-pages"), pg) as s:
        yield s


@pytest.fixture(scope="module")
def client(settings: Settings) -> Iterator[TestClient]:
    with TestClient(create_app(lambda: build_app(settings)), follow_redirects=False) as c:
        yield c


def _page(client: TestClient, url: str) -> Any:
    response = client.get(url, headers=HTML)
    assert response.status_code == 200, response.text[:500]
    return lxml.html.fromstring(response.text)


def _entries(doc: Any, section: str) -> list[tuple[str, str]]:
    """(title, href) of each entry of a section's lists."""
    links = doc.xpath(f'//section[@id="{section}"]//ol/li/a[1]')
    return [(a.text_content(), a.get("href")) for a in links]


def test_the_header_counts_references_citations_and_the_last_12_months(client: TestClient) -> None:
    doc = _page(client, f"/papers/{ME}")
    counts = " ".join(li.text_content() for li in doc.xpath('//li[@class="graph-counts"]'))
    assert "25 references" in counts
    assert "23 citations (10 in the last 12 months)" in counts
    assert doc.xpath('//li[@class="graph-counts"]/a/@href') == ["#references", "#cited-by"]


def test_references_are_paged_twenty_at_a_time_most_cited_first(client: TestClient) -> None:
    doc = _page(client, f"/papers/{ME}")
    first = _entries(doc, "references")
    assert len(first) == 20
    assert first[0] == ("Reference number 3", "https://doi.org/10.1000/ref3")  # cited by 970
    assert first[-1][0] == "Reference number 22"
    heading = doc.xpath('//section[@id="references"]/h2')[0].text_content()
    assert "(25)" in heading
    next_link = doc.xpath('//section[@id="references"]//a[@rel="next"]/@href')
    assert next_link == [f"/papers/{ME}?refs_page=2#references"]

    second = _page(client, next_link[0])
    rest = _entries(second, "references")
    assert len(rest) == 5
    assert second.xpath('//section[@id="references"]//ol/@start') == ["21"]
    assert not {t for t, _ in rest} & {t for t, _ in first}
    assert second.xpath('//section[@id="references"]//a[@rel="prev"]/@href') == [f"/papers/{ME}#references"]


def test_entries_in_the_store_link_inside_paperfeed_and_others_outside(client: TestClient) -> None:
    doc = _page(client, f"/papers/{ME}?refs_instance=1")
    assert sorted(_entries(doc, "references")) == [
        ("A store reference from December", "/papers/2312.00002"),
        ("Attention is all you need", "/papers/1706.03762"),
    ]
    cited = dict(_entries(_page(client, f"/papers/{ME}?cited_instance=1"), "cited-by"))
    assert set(cited.values()) == {
        f"/papers/{CITER}",
        "/papers/2402.00011",
        "/papers/2403.00012",
        "/papers/2404.00013",
    }
    outside = _entries(_page(client, f"/papers/{ME}"), "cited-by")
    hrefs = [href for _, href in outside]
    assert any(h.startswith("https://www.semanticscholar.org/paper/") for h in hrefs)
    everything = [
        h for p in (1, 2) for _, h in _entries(_page(client, f"/papers/{ME}?cited_page={p}"), "cited-by")
    ]
    assert any(h.startswith("https://openalex.org/W") for h in everything)
    assert len(everything) == 23


def test_sorting_by_date_puts_the_newest_first_and_keeps_the_other_list_as_it_was(client: TestClient) -> None:
    doc = _page(client, f"/papers/{ME}?refs_sort=date&cited_page=2")
    titles = [t for t, _ in _entries(doc, "references")]
    assert titles[:3] == [
        "A store reference from December",
        "Attention is all you need",
        "Reference number 25",
    ]
    # the references' links keep the cited-by page, and the other way round
    assert all("refs_sort=date" in h for h in doc.xpath('//section[@id="cited-by"]//p/a/@href'))
    assert any("cited_page=2" in h for h in doc.xpath('//section[@id="references"]//a/@href'))
    current = doc.xpath('//section[@id="references"]//p[@class="graph-controls"]/a[@aria-current]/text()')
    assert current == ["newest", "all"]


def test_related_work_says_why_each_entry_is_there(client: TestClient) -> None:
    doc = _page(client, f"/papers/{ME}")
    section = doc.xpath('//section[@id="related"]')[0]
    groups = {h3.text_content(): h3.getnext() for h3 in section.xpath("./h3")}
    assert list(groups) == ["Prior works", "Derivative works", "Shares references"]

    def reasons(title: str) -> dict[str, str]:
        return {
            li.xpath("./a")[0].get("href"): li.xpath('./span[@class="graph-reason"]')[0].text_content()
            for li in groups[title].xpath("./li")
        }

    prior = reasons("Prior works")
    assert next(iter(prior.values())).startswith("co-cited with 11 of this paper's references")
    assert "https://doi.org/" + PRIOR.removeprefix("doi:") not in prior  # not a reference of ME
    assert reasons("Derivative works")[f"/papers/{CITER}"] == "cites it and 7 of its references"
    shares = reasons("Shares references")
    assert shares[f"/papers/{THIRD}"].startswith("shares 12 references")
    assert shares[f"/papers/{EARLIER}"].startswith("shares 9 references")


def test_a_paper_without_edges_says_so_in_one_line(client: TestClient) -> None:
    doc = _page(client, f"/papers/{LONELY}")
    assert not doc.xpath('//section[@id="references" or @id="cited-by" or @id="related"]')
    assert not doc.xpath('//li[@class="graph-counts"]')
    note = doc.xpath('//section[@id="citations"]/p')[0].text_content()
    assert note == "No citation data yet."  # readers get no command line


def test_administrators_are_told_how_to_harvest(client: TestClient, settings: Settings) -> None:
    app = build_app(settings)
    try:
        admin = add_reader(app, "admin@example.org", "Admin", role="admin")
        session = app.readers.accounts.create_session(admin).session
    finally:
        app.close()
    client.cookies.set(SESSION_COOKIE, session)
    try:
        doc = _page(client, f"/papers/{LONELY}")
    finally:
        client.cookies.clear()
    note = doc.xpath('//section[@id="citations"]/p')[0].text_content()
    assert note.startswith("No citation data yet.")
    assert f"paperfeed harvest citations {LONELY}" in note


def test_a_page_past_the_end_shows_a_note_and_the_way_back(client: TestClient) -> None:
    doc = _page(client, f"/papers/{ME}?refs_page=9")
    section = doc.xpath('//section[@id="references"]')[0]
    assert "Page 9 is past the end: there are 2 pages." in section.text_content()
    assert _entries(doc, "references") == []
    assert section.xpath('.//a[@rel="prev"]/@href') == [f"/papers/{ME}?refs_page=2#references"]
    assert len(_entries(doc, "cited-by")) == 20  # the other list is unaffected


@pytest.mark.parametrize(
    ("query", "param"),
    [
        ("refs_sort=bogus", "refs_sort"),
        ("cited_sort=", "cited_sort"),
        ("refs_page=0", "refs_page"),
        ("cited_page=-3", "cited_page"),
        ("refs_page=abc", "refs_page"),
        ("refs_page=99999999999999999999", "refs_page"),
        ("cited_instance=maybe", "cited_instance"),
    ],
)
def test_bad_parameters_are_a_400_that_names_them(client: TestClient, query: str, param: str) -> None:
    response = client.get(f"/papers/{ME}?{query}", headers=HTML)
    assert response.status_code == 400
    assert param in response.text
    assert "text/html" in response.headers["content-type"]


def test_unknown_and_misspelt_ids(client: TestClient) -> None:
    assert client.get("/papers/2401.09999?refs_page=2", headers=HTML).status_code == 404
    moved = client.get(f"/papers/arXiv:{ME}?refs_page=2", headers=HTML)
    assert moved.status_code == 301
    assert moved.headers["location"] == f"/papers/{ME}?refs_page=2"


def test_the_service_reads_the_stored_counts(settings: Settings) -> None:
    """``App.paper_graph`` on the same store: the counts the header shows, and no data for LONELY."""
    app = build_app(settings)
    try:
        summary = app.catalogue.paper_graph.summary(ME)
        assert (summary.counts.references, summary.counts.citations, summary.has_data) == (25, 23, True)
        assert app.catalogue.paper_graph.summary(LONELY).has_data is False
    finally:
        app.close()


HOSTILE = '<img src=x onerror="alert(1)">](javascript:alert(2)) # heading'


def test_titles_from_sources_cannot_inject_markup(tmp_path: Path) -> None:
    """A source's title is text on the page and in the Markdown; links come from ids, always https."""
    with graph_settings("sqlite", tmp_path / "data", None) as settings:
        app = build_app(settings)
        try:
            evil = WorkRef("doi:10.666/evil", HOSTILE, 2020, doi='10.666/evil"><script>alert(3)</script>')
            me = WorkRef(LONELY, "A paper nobody has harvested")
            edge = Citation(LONELY, evil.key, "s2", contexts=(HOSTILE,))
            app.catalogue.citations.save_links(
                [PaperLinks(LONELY, "s2", me, (me, evil), (edge,))], harvested_at=datetime.now(UTC)
            )
        finally:
            app.close()
        with TestClient(create_app(lambda: build_app(settings))) as client:
            page = client.get(f"/papers/{LONELY}", headers=HTML).text
            markdown = client.get(f"/papers/{LONELY}.md").text
    assert "<img src=x" not in page
    assert "<script>alert(3)" not in page
    doc: Any = lxml.html.fromstring(page)
    (link,) = doc.xpath('//section[@id="references"]//ol/li/a')
    assert link.text_content() == HOSTILE
    assert link.get("href").startswith("https://doi.org/10.666/evil%22%3E%3Cscript%3E")
    assert doc.xpath('//section[@id="references"]//q[@class="graph-context"]')[0].text_content() == HOSTILE
    line = next(line for line in markdown.splitlines() if "10.666" in line)
    # every bracket, angle bracket and hash escaped: one link, to the DOI, whose text is the whole title
    assert line.startswith(
        r'- [\<img src=x onerror="alert(1)"\>\](javascript:alert(2)) \# heading]'
        "(https://doi.org/10.666/evil%22%3E%3Cscript%3Ealert%283%29%3C/script%3E) (2020; cited by 1)"
    )
