"""The citation graph in "similar papers" on SQLite and PostgreSQL: the GraphSimilar list ranked from
the real store (direct links + shared neighbours weighted by 1 / ln(1 + degree)) with its reasons,
honouring filters, and fused by the real HybridSearch only where a paper has edges
(``PAPERFEED_SIMILAR_GRAPH_WEIGHT``), the reasons reaching the hits."""

from __future__ import annotations

import math
from datetime import UTC, datetime
from pathlib import Path

import pytest

from paperfeed.adapters.store import SqlPaperStore
from paperfeed.adapters.store.citations import SqlCitationRecords
from paperfeed.bootstrap import App, build_app
from paperfeed.domain.ingest import Batch
from paperfeed.domain.models import Paper
from paperfeed.domain.paper_graph import PaperLinks
from paperfeed.domain.search import ExplainedId, Reason, SearchFilters
from paperfeed.services.similar_graph import GraphSimilar
from paperfeed.settings import Settings

from .conftest import HARVESTED, cite, links

Q, S1, S2, S3, S5 = "2401.00001", "2402.00002", "2403.00003", "2404.00004", "2405.00005"
OUTSIDE = "doi:10.1/outside"
TEXTS = {
    Q: (
        "Sparse attention for long documents",
        "We make attention sparse so transformers read long documents.",
    ),
    S1: ("Protein folding with lattice models", "Lattice models of protein folding, revisited."),
    S2: ("Weather forecasting from radar", "Nowcasting rain from radar images."),
    S3: ("Galaxy rotation curves", "Dark matter and the rotation of spiral galaxies."),
    S5: (
        "Sparse attention for long documents, again",
        "Attention made sparse so transformers read documents.",
    ),
}


def store_papers() -> list[Paper]:
    at = datetime(2024, 1, 2, tzinfo=UTC)
    return [
        Paper(
            id=pid,
            title=title,
            abstract=abstract,
            categories=("cs.CV",) if pid == S3 else ("cs.LG",),
            published=at,
            updated=at,
        )
        for pid, (title, abstract) in TEXTS.items()
    ]


def graph_links() -> list[PaperLinks]:
    """Q cites R1..R3. S1 cites exactly those (R1 has 4 citers, R2 and R3 have 3: 1/ln 5 + 2/ln 4
    ≈ 2.06; S1 is uncited, popularity 1); S2 cites R1 and nine others (1/ln 5 ≈ 0.62); X1 and X2 cite Q
    and S3 (degree 2 each: co-cited twice, 2/ln 3 ≈ 1.82), X3 and X4 cite S3 only (4 citations: times
    1 + ln 5 ≈ 2.61, so 4.75); a work outside the store couples as strongly as S1 but is never shown."""
    refs = ["doi:10.1/r1", "doi:10.1/r2", "doi:10.1/r3"]
    edges = [cite(Q, r) for r in refs] + [cite(S1, r) for r in refs] + [cite(OUTSIDE, r) for r in refs]
    edges += [cite(S2, "doi:10.1/r1")] + [cite(S2, f"doi:10.1/other{i}") for i in range(9)]
    edges += [cite(x, t) for x in ("doi:10.1/x1", "doi:10.1/x2") for t in (Q, S3)]
    edges += [cite(x, S3) for x in ("doi:10.1/x3", "doi:10.1/x4")]
    return [links(Q, edges)]


@pytest.fixture
def graph(store: SqlPaperStore) -> GraphSimilar:
    store.apply_batch(Batch(papers=store_papers()))
    records = SqlCitationRecords(store.engine)
    records.save_links(graph_links(), harvested_at=HARVESTED)
    return GraphSimilar(records, store)


def test_graph_list_is_ranked_within_the_store_with_its_reasons(graph: GraphSimilar) -> None:
    ranked = graph.related(Q, 10)
    assert [s.paper_id for s in ranked] == [S3, S1, S2]
    scores = {s.paper_id: s.score for s in ranked}
    assert scores[S1] == pytest.approx(1 / math.log(5) + 2 / math.log(4))
    assert scores[S3] == pytest.approx(2 / math.log(3) * (1 + math.log(5)))
    assert scores[S2] == pytest.approx(1 / math.log(5))
    assert [s.paper_id for s in graph.related(Q, 1)] == [S3]
    why = {s.paper_id: [r.text for r in s.reasons] for s in ranked if isinstance(s, ExplainedId)}
    assert why == {
        S1: ["shares 3 references"],
        S3: ["cited together with it by 2 papers"],
        S2: ["shares 1 reference"],
    }


def test_graph_list_honours_filters_and_is_empty_without_edges(graph: GraphSimilar) -> None:
    assert [s.paper_id for s in graph.related(Q, 10, SearchFilters(categories=("cs.LG",)))] == [S1, S2]
    assert graph.related(S5, 10) == []  # no edges: no list
    assert graph.related("scifact:12", 10) == []  # not an arXiv id: the graph cannot key it
    assert graph.related(Q, 0) == []


def _app(tmp_path: Path, db_url: str, weight: float, name: str) -> App:
    folder = tmp_path / name
    settings = Settings(
        data_dir=folder, database_url=db_url, embedding_backend="fake", similar_graph_weight=weight
    )
    return build_app(settings)


def test_hybrid_similar_fuses_the_graph_only_where_a_paper_has_edges(db_url: str, tmp_path: Path) -> None:
    setup = _app(tmp_path, db_url, 0.0, "off")
    try:
        result = setup.core.store.apply_batch(Batch(papers=store_papers()))
        setup.indexes.keyword.on_papers_changed(result)
        setup.indexes.keyword.flush()
        setup.catalogue.citations.save_links(graph_links(), harvested_at=HARVESTED)
        without_q = [h.paper.id for h in setup.search.hybrid.similar(Q, limit=10)]
        without_s5 = [h.paper.id for h in setup.search.hybrid.similar(S5, limit=10)]
    finally:
        setup.close()
    assert S1 not in without_q  # nothing in its text leads there
    with_graph = _app(tmp_path, db_url, 1.0, "off")  # same data folder and database, graph on
    try:
        assert with_graph.search.hybrid.similar_evidence  # wired from the setting
        hits = with_graph.search.hybrid.similar(Q, limit=10)
        ids = [h.paper.id for h in hits]
        assert {S1, S2, S3} <= set(ids)
        assert ids.index(S3) < ids.index(S1) < ids.index(S2)
        assert set(without_q) <= set(ids)  # the text neighbours are still there
        why = {h.paper.id: h.reasons for h in hits}
        assert why[S3] == (Reason("co_cited", 2, "cited together with it by 2 papers"),)
        assert why[S1] == (Reason("shared_references", 3, "shares 3 references"),)
        s5 = with_graph.search.hybrid.similar(S5, limit=10)
        assert [h.paper.id for h in s5] == without_s5
        assert all(h.reasons == () for h in s5)  # no edges: the text's list, and nothing to explain
    finally:
        with_graph.close()
