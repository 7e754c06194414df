"""Semantic Scholar's Graph API as a citation source, against its real recorded answers on loopback.

The recordings (../shared/fixtures/s2_api) are of papers other test suites used, not of arXiv ids, so
each is served on the path our adapter asks for: the batch answer for our four arXiv ids (its first
entry is ``null``: an unknown paper), the two-page reference list of CorpusID:1033682 (``next``: 100,
then a last page with nine ``paperId: null`` entries) and the cited-by pages of CorpusID:14514057 for
the batch's second paper. Expected values are read from the files here, not from the adapter.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from paperfeed.adapters.sources.http import PoliteClient
from paperfeed.adapters.sources.semantic_scholar import SemanticScholarSource
from paperfeed.domain.errors import SourceAnswerError, SourceUnavailable
from tests.support.http_server import ReplayServer, Reply

from .scholarly_replay import S2_BASE, recording, s2

pytestmark = pytest.mark.shared

IDS = ["2401.00001", "2401.00002", "2401.00003", "2401.00004"]
BATCH = f"{S2_BASE}/paper/batch"


class Sleeps(list[float]):
    def __call__(self, seconds: float) -> None:
        self.append(seconds)


def source(server: ReplayServer, sleeps: Sleeps | None = None, **kw: Any) -> SemanticScholarSource:
    client = PoliteClient(
        user_agent="paperfeed-test",
        timeout=10.0,
        retries=2,
        min_interval={},
        backoff_base=0.01,
        sleep=Sleeps() if sleeps is None else sleeps,
    )
    return SemanticScholarSource(client, f"{server.base_url}{S2_BASE}", **{"api_key": None, **kw})


def batch_papers(fixtures_dir: Path) -> list[Any]:
    body = recording(fixtures_dir, "s2_api", "batch_full_fields_with_null_for_unknown_id.json")["body"]
    assert isinstance(body, list)
    assert body[0] is None
    assert len(body) == 4
    return body


def serve_graph(server: ReplayServer, fixtures_dir: Path) -> list[Any]:
    papers = batch_papers(fixtures_dir)
    server.add(BATCH, s2(fixtures_dir, "batch_full_fields_with_null_for_unknown_id.json"))
    second = papers[1]["paperId"]
    refs = f"{S2_BASE}/paper/{second}/references"
    server.add(refs, s2(fixtures_dir, "references_full_page1_offset0_next100.json"), params={"offset": "0"})
    server.add(refs, s2(fixtures_dir, "references_full_page2_offset100_last.json"), params={"offset": "100"})
    cites = f"{S2_BASE}/paper/{second}/citations"
    server.add(cites, s2(fixtures_dir, "citations_title_page1_offset0_next100.json"), params={"offset": "0"})
    server.add(
        cites, s2(fixtures_dir, "citations_title_page19_offset1800_last.json"), params={"offset": "100"}
    )
    for paper in papers[2:]:
        assert paper is not None
        pid = paper["paperId"]
        server.add(
            f"{S2_BASE}/paper/{pid}/references", s2(fixtures_dir, "references_full_single_page_no_next.json")
        )
        server.add(
            f"{S2_BASE}/paper/{pid}/citations",
            s2(fixtures_dir, "citations_title_page19_offset1800_last.json"),
        )
    return papers


def items(fixtures_dir: Path, *names: str) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for name in names:
        out.extend(recording(fixtures_dir, "s2_api", name)["body"]["data"])
    return out


def test_batch_paging_contexts_and_unresolved_references(server: ReplayServer, fixtures_dir: Path) -> None:
    papers = serve_graph(server, fixtures_dir)
    links = list(source(server).links(IDS, max_citations=1000))

    assert [x.paper_id for x in links] == IDS
    assert links[0].work is None
    assert links[0].edges == ()
    second = links[1]
    assert second.work is not None
    assert second.work.key == IDS[1]
    assert second.work.arxiv_id == IDS[1]
    assert second.work.s2_id == papers[1]["paperId"]
    assert second.work.citation_count == papers[1]["citationCount"]

    refs = items(
        fixtures_dir,
        "references_full_page1_offset0_next100.json",
        "references_full_page2_offset100_last.json",
    )
    cites = items(
        fixtures_dir,
        "citations_title_page1_offset0_next100.json",
        "citations_title_page19_offset1800_last.json",
    )
    assert (len(refs), len(cites)) == (156, 181)
    ref_ids = {r["citedPaper"]["paperId"] for r in refs} - {None}
    cite_ids = {c["citingPaper"]["paperId"] for c in cites} - {None}
    null_refs = sum(r["citedPaper"]["paperId"] is None for r in refs)
    null_cites = sum(c["citingPaper"]["paperId"] is None for c in cites)
    assert (null_refs, null_cites) == (9, 4)

    out = [e for e in second.edges if e.citing == IDS[1]]
    into = [e for e in second.edges if e.cited == IDS[1]]
    assert len(out) == len(ref_ids)
    assert len(into) == len(cite_ids)
    assert second.unkeyed == null_refs + null_cites  # no usable id: counted, not stored
    assert second.references_complete
    assert second.citations_complete
    keys = {w.key for w in second.works}
    assert {e.cited for e in out} | {e.citing for e in into} | {IDS[1]} == keys

    # an arXiv reference is keyed by its arXiv id (so it meets the store's paper), others by DOI or S2 id
    arxiv_ref = next(r for r in refs if (r["citedPaper"].get("externalIds") or {}).get("ArXiv"))
    arxiv_key = arxiv_ref["citedPaper"]["externalIds"]["ArXiv"]
    edge = next(e for e in out if e.cited == arxiv_key)
    assert edge.contexts == tuple(dict.fromkeys(arxiv_ref["contexts"]))
    assert edge.intents == tuple(dict.fromkeys(arxiv_ref["intents"]))
    assert edge.is_influential is arxiv_ref["isInfluential"]
    assert edge.source == "s2"
    assert sum(bool(e.contexts) for e in out) == sum(
        bool(r["contexts"]) for r in refs if r["citedPaper"]["paperId"]
    )
    assert sum(e.is_influential is True for e in out) == len(
        {r["citedPaper"]["paperId"] for r in refs if r["isInfluential"] and r["citedPaper"]["paperId"]}
    )
    work = next(w for w in second.works if w.key == arxiv_key)
    assert work.title == arxiv_ref["citedPaper"]["title"]
    assert work.year == arxiv_ref["citedPaper"]["year"]

    # the requests: one batch POST with arXiv: ids, references/citations paged by the answers' `next`
    posts = [r for r in server.requests if r.method == "POST"]
    assert len(posts) == 1
    assert posts[0].path == BATCH
    assert json.loads(posts[0].body) == {"ids": [f"arXiv:{i}" for i in IDS]}
    assert "externalIds" in posts[0].params["fields"]
    ref_offsets = [
        r.params["offset"] for r in server.requests if r.path.endswith(f"{papers[1]['paperId']}/references")
    ]
    assert ref_offsets == ["0", "100"]
    assert all("x-api-key" not in {k.lower() for k in r.headers} for r in server.requests)
    fields = next(r.params["fields"] for r in server.requests if r.path.endswith("/references"))
    assert {"contexts", "intents", "isInfluential", "externalIds", "publicationDate"} <= set(
        fields.split(",")
    )


def test_citations_stop_at_the_limit_and_say_so(server: ReplayServer, fixtures_dir: Path) -> None:
    serve_graph(server, fixtures_dir)
    links = list(source(server).links(IDS, max_citations=100))
    second = links[1]
    assert not second.citations_complete
    assert second.references_complete
    assert sum(e.cited == IDS[1] for e in second.edges) == 100
    asked = [r.params for r in server.requests if r.path.endswith(f"{second.work.s2_id}/citations")]  # type: ignore[union-attr]
    assert [(p["offset"], p["limit"]) for p in asked] == [("0", "100")]  # no second page fetched


def test_the_api_key_travels_as_x_api_key(server: ReplayServer, fixtures_dir: Path) -> None:
    server.add(BATCH, Reply(200, b"[null]", {"Content-Type": "application/json"}))
    links = list(source(server, api_key="secret-key").links(["2401.00001"], max_citations=10))
    assert links[0].work is None
    assert server.requests[0].headers.get("x-api-key") == "secret-key"


def test_400_is_an_answer_error_with_s2s_message(server: ReplayServer, fixtures_dir: Path) -> None:
    server.add(BATCH, s2(fixtures_dir, "paper_bad_fields_400.json"))
    with pytest.raises(
        SourceAnswerError,
        match=r"HTTP 400 for POST http://127\.0\.0\.1:\d+/graph/v1/paper/batch\?fields=.*"
        r"Unrecognized or unsupported fields",
    ):
        list(source(server).links(IDS, max_citations=10))
    assert len(server.requests) == 1  # not retried


def test_403_says_the_service_refuses_us(server: ReplayServer, fixtures_dir: Path) -> None:
    server.add(BATCH, s2(fixtures_dir, "batch_403_forbidden.json"))
    with pytest.raises(
        SourceUnavailable,
        match=r"refused POST .*/paper/batch.*HTTP 403 \(Forbidden\); check PAPERFEED_S2_API_KEY",
    ):
        list(source(server, api_key="bad").links(IDS, max_citations=10))


def test_404_on_a_papers_list_means_s2_does_not_know_it(server: ReplayServer, fixtures_dir: Path) -> None:
    papers = serve_graph(server, fixtures_dir)
    server.add(
        f"{S2_BASE}/paper/{papers[1]['paperId']}/references", s2(fixtures_dir, "paper_not_found_404.json")
    )
    links = list(source(server).links(IDS, max_citations=10))
    assert links[1].work is None  # as the port asks: unknown, not an error that stops the harvest
    assert links[1].edges == ()
    assert links[2].work is not None  # the next papers are harvested
    assert links[2].edges


def test_404_of_the_batch_endpoint_is_an_answer_error(server: ReplayServer, fixtures_dir: Path) -> None:
    server.add(BATCH, s2(fixtures_dir, "paper_not_found_404.json"))
    with pytest.raises(
        SourceAnswerError, match=r"HTTP 404 for POST .*/paper/batch\?.*Paper with id 0 not found"
    ):
        list(source(server).links(IDS, max_citations=10))


def test_429_without_retry_after_backs_off_then_succeeds(server: ReplayServer, fixtures_dir: Path) -> None:
    sleeps = Sleeps()
    server.add(
        BATCH,
        s2(fixtures_dir, "search_429_too_many_requests.json"),
        s2(fixtures_dir, "batch_full_fields_with_null_for_unknown_id.json"),
    )
    found = source(server, sleeps).lookup(IDS)
    assert found[0] is None
    assert found[1] is not None
    assert len(server.requests) == 2
    assert len(sleeps) == 1
    assert 0 <= sleeps[0] <= 0.01


def test_429_with_retry_after_waits_that_long(server: ReplayServer, fixtures_dir: Path) -> None:
    sleeps = Sleeps()
    server.add(
        BATCH,
        s2(fixtures_dir, "search_429_too_many_requests.json", **{"Retry-After": "7"}),  # no recording has one
        s2(fixtures_dir, "batch_full_fields_with_null_for_unknown_id.json"),
    )
    source(server, sleeps).lookup(IDS)
    assert sleeps == [7.0]


def test_a_5xx_storm_ends_in_unavailable_naming_the_url(server: ReplayServer, fixtures_dir: Path) -> None:
    server.add(BATCH, s2(fixtures_dir, "batch_500_internal_error.json"))
    with pytest.raises(
        SourceUnavailable,
        match=r"unreachable after 3 attempts \(HTTP 500\) for POST http://127\.0\.0\.1:\d+/graph/v1/paper/batch\?fields=",
    ):
        list(source(server).links(IDS, max_citations=10))
    assert len(server.requests) == 3


def test_a_504_on_citations_ends_in_unavailable_naming_the_url(
    server: ReplayServer, fixtures_dir: Path
) -> None:
    papers = serve_graph(server, fixtures_dir)
    server.add(
        f"{S2_BASE}/paper/{papers[1]['paperId']}/citations", s2(fixtures_dir, "citations_504_timeout.json")
    )
    with pytest.raises(SourceUnavailable, match=r"\(HTTP 504\) for GET .*/citations\?fields=.*offset=0"):
        list(source(server).links(IDS, max_citations=10))


@pytest.mark.parametrize("cut", [0, 1, 5000])
def test_truncated_json_is_an_answer_error_naming_the_url(
    server: ReplayServer, fixtures_dir: Path, cut: int
) -> None:
    papers = serve_graph(server, fixtures_dir)
    whole = s2(fixtures_dir, "references_full_page1_offset0_next100.json")
    server.add(
        f"{S2_BASE}/paper/{papers[1]['paperId']}/references",
        Reply(200, whole.body[:cut], whole.headers),
        params={"offset": "0"},
    )
    with pytest.raises(
        SourceAnswerError,
        match=r"not JSON .* for GET http://127\.0\.0\.1:\d+/graph/v1/paper/\w+/references\?",
    ):
        list(source(server).links(IDS, max_citations=10))


def test_an_html_page_or_a_wrong_shape_is_an_answer_error(server: ReplayServer, fixtures_dir: Path) -> None:
    server.add(BATCH, Reply(200, b"<html>maintenance</html>", {"Content-Type": "text/html"}))
    with pytest.raises(SourceAnswerError, match=r"not JSON \(text/html.*POST .*/paper/batch"):
        list(source(server).links(IDS, max_citations=10))
    server.add(BATCH, Reply(200, b"[null]", {"Content-Type": "application/json"}))
    with pytest.raises(SourceAnswerError, match=r"a list of 1 for a batch of 4 ids"):
        list(source(server).links(IDS, max_citations=10))
