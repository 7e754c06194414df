"""OpenAlex as a citation source, against its real recorded answers on loopback.

The recorded seed lookup (``filter=openalex:W3045921891|W3046863325``) holds arXiv 2007.14454 (DOI
``10.48550/arxiv.2007.14454``) and a journal paper; it is served for our ``filter=doi:…`` lookup of that
arXiv id and an id OpenAlex does not have. The references are resolved from the recorded
``cited_by:`` answer (the 38 works the two seeds reference), the citations from the recorded ``cites:``
answer (5 works citing either seed, ``next_cursor`` set) and its empty follow-up page (cursor end).
Expected values are read from the files here, not from the adapter.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from paperfeed.adapters.sources.http import PoliteClient
from paperfeed.adapters.sources.openalex import OpenAlexSource
from paperfeed.domain.errors import SourceAnswerError, SourceUnavailable
from tests.support.http_server import ReplayServer, Reply

from .scholarly_replay import openalex, recording

pytestmark = pytest.mark.shared

ARXIV = "2007.14454"
UNKNOWN = "2401.99999"
SEED = "W3045921891"
OTHER = "W3046863325"
WORKS = "/works"


def source(server: ReplayServer, **kw: Any) -> OpenAlexSource:
    client = PoliteClient(
        user_agent="paperfeed-test", timeout=10.0, retries=2, min_interval={}, backoff_base=0.001
    )
    return OpenAlexSource(
        client, server.base_url, **{"mailto": "dev@paperfeed.invalid", "api_key": None, **kw}
    )


def results(fixtures_dir: Path, name: str) -> list[dict[str, Any]]:
    body = recording(fixtures_dir, "openalex_api", name)["body"]
    return list(body["results"])


def next_cursor(fixtures_dir: Path, name: str) -> str:
    return str(recording(fixtures_dir, "openalex_api", name)["body"]["meta"]["next_cursor"])


def serve(server: ReplayServer, fixtures_dir: Path) -> None:
    """A route added later wins, so each cursor walk's end is added before its start."""
    end = openalex(fixtures_dir, "works_cursor_next_page_empty_end.json")
    doi = f"doi:10.48550/arxiv.{ARXIV}|10.48550/arxiv.{UNKNOWN}"
    server.add(WORKS, end, params={"filter": doi})
    start = openalex(fixtures_dir, "works_filter_openalex_ids_cursor_start.json")
    server.add(WORKS, start, params={"filter": doi, "cursor": "*"})
    seed = next(
        w
        for w in results(fixtures_dir, "works_filter_openalex_ids_cursor_start.json")
        if w["id"].endswith(SEED)
    )
    refs = [r.rsplit("/", 1)[-1] for r in seed["referenced_works"]]
    resolve = "openalex:" + "|".join(refs)
    server.add(WORKS, end, params={"filter": resolve})
    cited_by = openalex(fixtures_dir, "works_filter_cited_by_cursor_start.json")
    server.add(WORKS, cited_by, params={"filter": resolve, "cursor": "*"})
    cites_start = openalex(fixtures_dir, "works_filter_cites_cursor_start.json")
    after = next_cursor(fixtures_dir, "works_filter_cites_cursor_start.json")
    for wid in (SEED, OTHER):
        server.add(WORKS, cites_start, params={"filter": f"cites:{wid}", "cursor": "*"})
        server.add(WORKS, end, params={"filter": f"cites:{wid}", "cursor": after})


def test_lookup_by_arxiv_doi_references_and_cursor_paged_citations(
    server: ReplayServer, fixtures_dir: Path
) -> None:
    serve(server, fixtures_dir)
    links = list(source(server).links([ARXIV, UNKNOWN], max_citations=1000))

    assert [x.paper_id for x in links] == [ARXIV, UNKNOWN]
    assert links[1].work is None  # not in OpenAlex: nothing stored, no error
    paper = links[0]
    assert paper.work is not None
    seed = next(
        w
        for w in results(fixtures_dir, "works_filter_openalex_ids_cursor_start.json")
        if w["id"].endswith(SEED)
    )
    assert (paper.work.key, paper.work.openalex_id, paper.work.doi) == (
        ARXIV,
        SEED,
        f"10.48550/arxiv.{ARXIV}",
    )
    assert paper.work.title == seed["title"]
    assert paper.work.citation_count == seed["cited_by_count"] == 0

    refs = [r.rsplit("/", 1)[-1] for r in seed["referenced_works"]]
    resolved = {
        w["id"].rsplit("/", 1)[-1]: w
        for w in results(fixtures_dir, "works_filter_cited_by_cursor_start.json")
    }
    out = [e for e in paper.edges if e.citing == ARXIV]
    assert len(out) == len(set(refs)) == 37
    works = {w.key: w for w in paper.works}
    known = [w for w in refs if w in resolved]
    assert known, "the recorded cited_by answer resolves some of the seed's references"
    for wid in refs:
        raw = resolved.get(wid)
        if raw is None:  # OpenAlex did not resolve it: still an edge, keyed by its OpenAlex id
            assert works[f"openalex:{wid}"].title is None
            continue
        doi = (raw.get("doi") or "").removeprefix("https://doi.org/")
        if doi.startswith("10.48550/arxiv."):
            key = doi.removeprefix("10.48550/arxiv.")
        elif any("arxiv.org/abs/" in (loc.get("landing_page_url") or "") for loc in raw["locations"]):
            key = next(
                loc["landing_page_url"]
                for loc in raw["locations"]
                if "arxiv.org/abs/" in (loc.get("landing_page_url") or "")
            ).rsplit("/", 1)[-1]
        elif doi:
            key = f"doi:{doi}"
        else:
            key = f"openalex:{wid}"
        # a real record (W2963341956, BERT) has an empty title: read as unknown, not as ""
        assert works[key].title == (raw["title"] or raw["display_name"] or None), wid
        assert works[key].citation_count == raw["cited_by_count"]
    # a citing work counts only when its own referenced_works lists the paper
    citing = results(fixtures_dir, "works_filter_cites_cursor_start.json")
    expected = [c for c in citing if f"https://openalex.org/{SEED}" in c["referenced_works"]]
    assert [e for e in paper.edges if e.cited == ARXIV] == [] == expected
    assert paper.citations_complete
    assert all(e.source == "openalex" and e.contexts == () and e.is_influential is None for e in paper.edges)

    cursors = [r.params["cursor"] for r in server.requests if r.params["filter"] == f"cites:{SEED}"]
    assert cursors == [
        "*",
        next_cursor(fixtures_dir, "works_filter_cites_cursor_start.json"),
    ]  # until an empty page
    assert all(r.params["mailto"] == "dev@paperfeed.invalid" for r in server.requests)


def test_citing_works_are_those_listing_the_paper(server: ReplayServer, fixtures_dir: Path) -> None:
    """The journal seed W3046863325 (cited_by_count 5): every recorded citing work lists it."""
    serve(server, fixtures_dir)
    other = next(
        w
        for w in results(fixtures_dir, "works_filter_openalex_ids_cursor_start.json")
        if w["id"].endswith(OTHER)
    )
    refs = "openalex:" + "|".join(r.rsplit("/", 1)[-1] for r in other["referenced_works"])
    server.add(
        WORKS,
        Reply(200, b'{"meta": {"next_cursor": null}, "results": []}', {"Content-Type": "application/json"}),
        params={"filter": refs},
    )
    links = source(server).paper_links("2401.00001", other, max_citations=1000)
    into = [e.citing for e in links.edges if e.cited == "2401.00001"]
    citing = [
        c
        for c in results(fixtures_dir, "works_filter_cites_cursor_start.json")
        if f"https://openalex.org/{OTHER}" in c["referenced_works"]
    ]
    assert len(into) == len(citing) == other["cited_by_count"] == 5
    assert sorted(into) == sorted(f"doi:{c['doi'].removeprefix('https://doi.org/')}" for c in citing)
    # the limit cuts the list and says so
    server.requests.clear()
    cut = source(server).paper_links("2401.00001", other, max_citations=2)
    assert sum(e.cited == "2401.00001" for e in cut.edges) <= 2
    assert not cut.citations_complete
    assert [r.params["per-page"] for r in server.requests if r.params["filter"].startswith("cites:")] == ["2"]


def test_400_is_an_answer_error_with_openalex_message(server: ReplayServer, fixtures_dir: Path) -> None:
    server.add(WORKS, openalex(fixtures_dir, "works_400_invalid_filter_field.json"))
    with pytest.raises(
        SourceAnswerError,
        match=r"HTTP 400 for GET http://127\.0\.0\.1:\d+/works\?filter=doi.*Invalid query parameters error",
    ):
        list(source(server).links([ARXIV], max_citations=10))
    assert len(server.requests) == 1


def test_401_points_at_the_api_key(server: ReplayServer, fixtures_dir: Path) -> None:
    server.add(WORKS, openalex(fixtures_dir, "works_401_invalid_api_key.json"))
    with pytest.raises(
        SourceUnavailable, match=r"HTTP 401 \(Invalid or missing API key.*check PAPERFEED_OPENALEX_API_KEY"
    ):
        list(source(server, api_key="wrong").links([ARXIV], max_citations=10))
    assert server.requests[0].params["api_key"] == "wrong"


def test_the_html_404_is_an_answer_error_naming_the_url(server: ReplayServer, fixtures_dir: Path) -> None:
    server.add(WORKS, openalex(fixtures_dir, "work_by_doi_404_html.json"))
    with pytest.raises(
        SourceAnswerError,
        match=r"HTTP 404 for GET http://127\.0\.0\.1:\d+/works\?filter=.*"
        r"a text/html page, not the API's JSON; check PAPERFEED_OPENALEX_API_URL",
    ):
        list(source(server).links([ARXIV], max_citations=10))


def test_a_5xx_storm_ends_in_unavailable_naming_the_url(server: ReplayServer) -> None:
    server.add(WORKS, Reply(503, b"busy", {"Content-Type": "text/plain"}))
    with pytest.raises(
        SourceUnavailable,
        match=r"unreachable after 3 attempts \(HTTP 503\) for GET http://127\.0\.0\.1:\d+/works\?filter=doi",
    ):
        list(source(server).links([ARXIV], max_citations=10))


@pytest.mark.parametrize("cut", [0, 100, 20000])
def test_truncated_json_is_an_answer_error_naming_the_url(
    server: ReplayServer, fixtures_dir: Path, cut: int
) -> None:
    whole = openalex(fixtures_dir, "works_filter_openalex_ids_cursor_start.json")
    server.add(WORKS, Reply(200, whole.body[:cut], whole.headers))
    with pytest.raises(
        SourceAnswerError, match=r"not JSON .* for GET http://127\.0\.0\.1:\d+/works\?filter=doi"
    ):
        list(source(server).links([ARXIV], max_citations=10))
