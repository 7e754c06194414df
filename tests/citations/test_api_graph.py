"""``/api/papers/{id}/references``, ``/citations``, ``/related`` and the graph in ``/papers/{id}.md``, on
SQLite and PostgreSQL, over a graph stored through ``CitationRecords.save_links``
(``tests/support/citation_graph.py``); bad input is a 4xx naming the parameter, never a 500."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from paperfeed.bootstrap import build_app
from paperfeed.settings import Settings
from paperfeed.web import create_app
from tests.conftest import BACKENDS
from tests.support.citation_graph import (
    CITER,
    EARLIER,
    LONELY,
    ME,
    PRIOR,
    STORE_CITERS,
    STORE_REFS,
    THIRD,
    citing_keys,
    graph_settings,
    reference_keys,
)


@pytest.fixture(scope="module", params=BACKENDS)
def settings(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Settings]:
    pg = request.getfixturevalue("pg_server") if request.param != "sqlite" else None
    with graph_settings(request.param, tmp_path_factory.mktemp("graph-api"), pg) as s:
        yield s


@pytest.fixture(scope="module")
def client(settings: Settings) -> Iterator[TestClient]:
    with TestClient(create_app(lambda: build_app(settings))) as c:
        yield c


def _get(client: TestClient, url: str) -> Any:
    response = client.get(url)
    assert response.status_code == 200, response.text
    return response.json()


def test_references_page_with_counts_most_cited_first(client: TestClient) -> None:
    body = _get(client, f"/api/papers/{ME}/references")
    assert (body["total"], body["offset"], body["limit"], body["sort"], body["inInstance"]) == (
        25,
        0,
        20,
        "citations",
        False,
    )
    assert body["counts"]["references"] == 25
    assert body["counts"]["citations"] == 23
    assert body["counts"]["citationsLast12Months"] == 10
    counts = [item["citationCount"] for item in body["items"]]
    assert counts == sorted(counts, reverse=True)
    top = body["items"][0]
    assert top["key"] == "doi:10.1000/ref3"
    assert top["isInfluential"] is True
    assert top["url"] == "https://doi.org/10.1000/ref3"
    assert top["externalIds"] == {"DOI": "10.1000/ref3"}
    assert "paper" not in top
    assert top["inInstance"] is False


def test_offset_and_limit_page_through_every_reference_once(client: TestClient) -> None:
    first = _get(client, f"/api/papers/{ME}/references?limit=20")
    rest = _get(client, f"/api/papers/{ME}/references?limit=20&offset=20")
    keys = [i["key"] for i in first["items"] + rest["items"]]
    assert len(rest["items"]) == 5
    assert sorted(keys) == sorted(reference_keys())
    beyond = _get(client, f"/api/papers/{ME}/references?offset=500")
    assert (beyond["items"], beyond["total"]) == ([], 25)


def test_in_store_works_come_in_the_hf_item_shape(client: TestClient) -> None:
    body = _get(client, f"/api/papers/{ME}/references?in_instance=true")
    assert body["total"] == 2
    assert body["inInstance"] is True
    by_key = {item["key"]: item for item in body["items"]}
    assert set(by_key) == set(STORE_REFS)
    attention = by_key["1706.03762"]
    assert attention["paper"]["id"] == "1706.03762"
    assert attention["paper"]["title"] == attention["title"] == "Attention is all you need"
    assert attention["paper"]["authors"][0] == {"name": "Ada Lovelace", "hidden": False}
    assert {"publishedAt", "summary", "numComments"} <= set(attention)
    assert attention["inInstance"] is True
    assert attention["contexts"] == ["as the transformer [1] showed"]
    assert attention["intents"] == ["background"]
    assert attention["sources"] == ["s2"]


def test_citations_newest_first_with_links_to_their_sources(client: TestClient) -> None:
    body = _get(client, f"/api/papers/{ME}/citations?limit=100")
    assert body["total"] == 23
    assert body["sort"] == "date"
    assert sorted(i["key"] for i in body["items"]) == sorted(citing_keys())
    days = [i["publishedAt"] for i in body["items"]]
    assert days == sorted(days, reverse=True)
    urls = {i["key"]: i["url"] for i in body["items"]}
    assert urls[f"s2:{5:040x}"] == f"https://www.semanticscholar.org/paper/{5:040x}"
    assert urls["openalex:W9015"] == "https://openalex.org/W9015"
    mine = _get(client, f"/api/papers/{ME}/citations?in_instance=1&sort=citations")
    assert sorted(i["paper"]["id"] for i in mine["items"]) == sorted(STORE_CITERS)


def test_any_id_spelling_reads_the_same_graph(client: TestClient) -> None:
    assert _get(client, f"/api/papers/{ME}v3/references")["total"] == 25
    assert _get(client, f"/api/papers/arXiv:{ME}/citations")["total"] == 23


def test_related_work_with_reasons_and_numbers(client: TestClient) -> None:
    body = _get(client, f"/api/papers/{ME}/related")
    assert set(body) == {"prior", "derivative", "coupling"}
    prior = body["prior"][0]
    assert prior["key"] in reference_keys()
    assert prior["key"] != PRIOR
    assert prior["reason"].startswith("co-cited with 11 of this paper's references")
    assert prior["coCitedWithReferences"] == 11
    derivative = {e["key"]: e for e in body["derivative"]}
    assert derivative[CITER]["reason"] == "cites it and 7 of its references"
    assert (derivative[CITER]["sharedReferences"], derivative[CITER]["citesPaper"]) == (7, True)
    assert derivative[CITER]["paper"]["id"] == CITER  # a paper of the store: the HF shape
    coupling = {e["key"]: e for e in body["coupling"]}
    assert coupling[THIRD]["reason"].startswith("shares 12 references")
    assert coupling[EARLIER]["reason"].startswith("shares 9 references")
    assert [e["key"] for e in body["coupling"]][:2] == [THIRD, EARLIER]
    short = _get(client, f"/api/papers/{ME}/related?limit=1")
    assert all(len(v) <= 1 for v in short.values())
    assert _get(client, f"/api/papers/{LONELY}/related") == {"prior": [], "derivative": [], "coupling": []}


def test_a_paper_without_edges_has_empty_lists_and_zero_counts(client: TestClient) -> None:
    body = _get(client, f"/api/papers/{LONELY}/citations")
    assert (body["items"], body["total"]) == ([], 0)
    assert body["counts"] == {
        "references": 0,
        "citations": 0,
        "citationsLast12Months": 0,
        "harvestedAt": None,
    }


@pytest.mark.parametrize("route", ["references", "citations", "related"])
def test_unknown_and_invalid_ids(client: TestClient, route: str) -> None:
    missing = client.get(f"/api/papers/2401.09999/{route}")
    assert missing.status_code == 404
    assert missing.json()["error"] == "paper 2401.09999 is not in this paperfeed instance"
    invalid = client.get(f"/api/papers/not-an-id/{route}")
    assert invalid.status_code == 400


@pytest.mark.parametrize(
    ("query", "param"),
    [
        ("sort=bogus", "sort"),
        ("limit=101", "limit"),
        ("limit=0", "limit"),
        ("offset=-1", "offset"),
        ("offset=99999999999999999999", "offset"),
        ("in_instance=maybe", "in_instance"),
    ],
)
@pytest.mark.parametrize("route", ["references", "citations"])
def test_bad_list_parameters_are_400_naming_them(
    client: TestClient, route: str, query: str, param: str
) -> None:
    response = client.get(f"/api/papers/{ME}/{route}?{query}")
    assert response.status_code == 400
    assert [e["param"] for e in response.json()["errors"]] == [param]


@pytest.mark.parametrize("limit", ["0", "51", "x"])
def test_bad_related_limit_is_400(client: TestClient, limit: str) -> None:
    response = client.get(f"/api/papers/{ME}/related?limit={limit}")
    assert response.status_code == 400
    assert [e["param"] for e in response.json()["errors"]] == ["limit"]


def test_markdown_carries_counts_related_work_and_references(client: TestClient) -> None:
    response = client.get(f"/papers/{ME}.md")
    assert response.status_code == 200
    text = response.text
    assert "## Citations\n\n- **References:** 25\n- **Cited by:** 23 (10 in the last 12 months)" in text
    assert "## Related work" in text
    assert "cites it and 7 of its references" in text
    assert "co-cited with 11 of this paper's references" in text
    assert "[A prior classic]" not in text  # cited with ME's references by THIRD, but not one of them
    references = text.split("## References\n\n", 1)[1]
    assert references.count("\n- ") + 1 == 25  # every reference (fewer than the Markdown's 100)
    assert "[Attention is all you need](http://testserver/papers/1706.03762)" in references
    assert "[Reference number 3](https://doi.org/10.1000/ref3) (1993; cited by 970)" in references
    lonely = client.get(f"/papers/{LONELY}.md").text
    assert "## Citations" not in lonely
    assert "## References" not in lonely
