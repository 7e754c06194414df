"""The canonical work key: two sources naming one work by the same id must meet on one key."""

from __future__ import annotations

import pytest

from paperfeed.domain.paper_graph import work_key


@pytest.mark.parametrize(
    ("ids", "key"),
    [
        ({"arxiv_id": "arXiv:1706.03762v5", "doi": "10.1/x"}, "1706.03762"),
        ({"doi": "10.48550/arXiv.2312.07559"}, "2312.07559"),
        ({"doi": "https://doi.org/10.1093/MIND/LIX.236.433"}, "doi:10.1093/mind/lix.236.433"),
        ({"arxiv_id": "not an id", "doi": "10.1093/mind/lix.236.433"}, "doi:10.1093/mind/lix.236.433"),
        (
            {"s2_id": "598b65b8f514304abd34b7e14296559388b20f25"},
            "s2:598b65b8f514304abd34b7e14296559388b20f25",
        ),
        ({"openalex_id": "https://openalex.org/W2741809807"}, "openalex:W2741809807"),
        ({"doi": "not-a-doi", "s2_id": "xyz", "openalex_id": "https://openalex.org/A1"}, None),
        ({}, None),
    ],
)
def test_work_key_prefers_the_arxiv_id_then_doi_then_source_ids(ids: dict[str, str], key: str | None) -> None:
    assert work_key(**ids) == key
