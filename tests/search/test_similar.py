"""Similar papers: the embedding neighbours and the paper's more-like-this keyword list, fused.

Every test runs the real composition (``build_app``: store, keyword engine, vector index) with the fake
embedder, on each keyword engine (PostgreSQL ones marked ``postgres``).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from fastapi.testclient import TestClient

from paperfeed.bootstrap import App, build_app
from paperfeed.bootstrap.search import similar_settings
from paperfeed.domain.fusion import WeightedList, fuse_weighted
from paperfeed.domain.ingest import Batch
from paperfeed.domain.models import Paper
from paperfeed.domain.neighbourhood import rerank_by_neighbourhood
from paperfeed.domain.search import ScoredId, SearchFilters, VectorRecord
from paperfeed.services.search import SimilarSettings
from paperfeed.settings import Settings
from paperfeed.web import create_app
from tests.keyword.test_damaged_index import garble
from tests.search.test_hybrid_search import CORPUS, _paper
from tests.search.test_neighbourhood import CANDIDATES, QUERY
from tests.support.defaults import DEFAULTS

# A few more papers than the search tests', so the two lists disagree and the fusion shows
EXTRA = [
    (
        "2402.00001",
        "Video diffusion transformers",
        "Scaling transformers for video diffusion generation.",
        ("Ada Lovelace",),
        ("cs.CV",),
        "2024-02-02",
        None,
    ),
    (
        "2402.00002",
        "Clip retrieval for video generation",
        "Retrieval of clips helps generation.",
        ("Alan Turing",),
        ("cs.CV",),
        "2024-02-03",
        None,
    ),
    (
        "2402.00003",
        "Protein diffusion models",
        "Diffusion models generate protein structure.",
        ("Grace Hopper",),
        ("q-bio.BM",),
        "2024-02-04",
        None,
    ),
]
PAPERS = [_paper(r) for r in CORPUS + EXTRA]
ME = "2401.00001"  # "Diffusion models for video generation"; 2401.00005 is its exact duplicate


def _open(tmp_path: Path, engine: str, url: str | None, *, embed: bool = True, **similar: float) -> App:
    settings = Settings(
        data_dir=tmp_path / "data",
        database_url=url,
        embedding_backend="fake",
        keyword_engine=engine,  # type: ignore[arg-type]
        **similar,  # type: ignore[arg-type]
    )
    app = build_app(settings)
    result = app.core.store.apply_batch(Batch(papers=PAPERS))
    app.indexes.keyword.on_papers_changed(result)
    app.indexes.keyword.flush()
    if embed:
        app.indexes.indexer.current().run()
    return app


@pytest.fixture(params=["fts5", "tantivy", pytest.param("postgres", marks=pytest.mark.postgres)])
def engine(request: pytest.FixtureRequest) -> tuple[str, str | None]:
    url = request.getfixturevalue("pg_url") if request.param == "postgres" else None
    return request.param, url


@pytest.fixture
def app(engine: tuple[str, str | None], tmp_path: Path) -> Iterator[App]:
    """Both lists on (the default keyword weight is 0: see the test of the default below)."""
    app = _open(tmp_path, *engine, similar_keyword_weight=0.25)
    try:
        yield app
    finally:
        app.close()


def ids(hits: object) -> list[str]:
    return [h.paper.id for h in hits]  # type: ignore[attr-defined]


def legs(app: App, paper_id: str, s: SimilarSettings) -> tuple[list[ScoredId], list[ScoredId]]:
    """The two lists the service fuses, asked of the adapters directly: the dense list re-ranked by
    neighbourhoods (duplicates left out) unless ``s.neighbourhood`` is 0."""
    paper = app.core.store.get_paper(paper_id)
    index = app.indexes.vectors.current()
    assert paper is not None
    assert index is not None
    vector = index.vector(paper_id)
    assert vector is not None
    dense = index.search(vector, s.candidates, exclude=[paper_id])
    if s.neighbourhood:
        dense = [x for x in dense if x.score < 0.9999]
        found = index.vectors([x.paper_id for x in dense])
        dense = rerank_by_neighbourhood(
            vector,
            dense,
            found,
            centre=index.centroid(),
            k=s.neighbourhood,
            power=s.neighbourhood_power,
            blend=s.neighbourhood_blend,
        )
    keyword = app.indexes.keyword.more_like_this(
        paper.title, paper.abstract, s.candidates + 1, max_terms=s.keyword_terms
    )
    return dense, keyword


def test_similar_is_the_weighted_fusion_of_both_lists(app: App) -> None:
    s = app.search.hybrid.similar_settings
    dense, keyword = legs(app, ME, s)
    assert dense
    assert keyword
    assert {x.paper_id for x in keyword} & {"2401.00002", "2402.00001", "2402.00002"}
    fused = fuse_weighted(
        [WeightedList("dense", s.dense_weight, dense), WeightedList("keyword", s.keyword_weight, keyword)],
        k=s.rrf_k,
    )
    expected = [f.paper_id for f in fused if f.paper_id not in {ME, "2401.00005"}]
    hits = app.search.hybrid.similar(ME, limit=5)
    assert ids(hits) == expected[:5]
    dense_rank = {x.paper_id: i for i, x in enumerate(dense, start=1)}
    keyword_rank = {x.paper_id: i for i, x in enumerate(keyword, start=1)}
    for hit in hits:
        assert hit.dense_rank == dense_rank.get(hit.paper.id)
        assert hit.keyword_rank == keyword_rank.get(hit.paper.id)
        assert hit.similarity is not None
        assert -1.0 <= hit.similarity <= 1.0001
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)


def test_weights_are_settings_and_zero_switches_a_list_off(
    engine: tuple[str, str | None], tmp_path: Path
) -> None:
    dense_only = _open(tmp_path / "d", *engine, similar_keyword_weight=0.0)
    keyword_only = _open(tmp_path / "k", *engine, similar_dense_weight=0.0, similar_keyword_weight=1.0)
    try:
        s = dense_only.search.hybrid.similar_settings
        assert s.keyword_weight == 0.0
        dense, _ = legs(dense_only, ME, s)
        want = [x.paper_id for x in dense if x.paper_id != "2401.00005"]
        assert ids(dense_only.search.hybrid.similar(ME, limit=4)) == want[:4]
        assert all(h.keyword_rank is None for h in dense_only.search.hybrid.similar(ME, limit=4))

        _, keyword = legs(keyword_only, ME, keyword_only.search.hybrid.similar_settings)
        want = [x.paper_id for x in keyword if x.paper_id not in {ME, "2401.00005"}]
        assert ids(keyword_only.search.hybrid.similar(ME, limit=4)) == want[:4]
        # a heavier keyword list tilts the fusion towards its own order
        tilted = replace(similar_settings(DEFAULTS), keyword_weight=50.0)
        dense_only.search.hybrid.similar_settings = tilted
        assert ids(dense_only.search.hybrid.similar(ME, limit=4)) == want[:4]
    finally:
        dense_only.close()
        keyword_only.close()


def test_the_default_is_the_dense_list_re_ranked_by_small_blended_neighbourhoods(
    engine: tuple[str, str | None], tmp_path: Path
) -> None:
    default = _open(tmp_path, *engine)
    try:
        s = default.search.hybrid.similar_settings
        assert (s.keyword_weight, s.neighbourhood, s.neighbourhood_blend) == (0.0, 5, 0.5)
        dense, _ = legs(default, ME, s)
        hits = default.search.hybrid.similar(ME, limit=6)
        assert ids(hits) == [x.paper_id for x in dense][:6]
        assert all(h.keyword_rank is None and h.dense_rank is not None for h in hits)
        plain = replace(s, neighbourhood=0)
        raw, _ = legs(default, ME, plain)
        want = [x.paper_id for x in raw if x.paper_id != "2401.00005"][:6]
        assert ids(hits) != want  # the (centred) neighbourhoods reorder this store's plain list
        default.search.hybrid.similar_settings = plain
        assert ids(default.search.hybrid.similar(ME, limit=6)) == want
    finally:
        default.close()


def test_similar_never_shows_itself_its_duplicates_or_hidden_papers(app: App) -> None:
    before = ids(app.search.hybrid.similar(ME, limit=8))
    assert ME not in before
    assert "2401.00005" not in before
    assert "2401.00002" in before
    assert app.readers.accounts.hide_paper("2401.00002")
    after = ids(app.search.hybrid.similar(ME, limit=8))
    assert "2401.00002" not in after
    assert after == [p for p in before if p != "2401.00002"] + after[len(before) - 1 :]
    assert app.search.hybrid.similar("2401.00002") == []  # a hidden paper has no similar papers either
    assert app.search.hybrid.similar("9999.99999") == []
    assert app.search.hybrid.similar(ME, limit=0) == []


def test_filters_reach_both_lists(app: App) -> None:
    hits = app.search.hybrid.similar(ME, limit=8, filters=SearchFilters(categories=("q-bio.BM",)))
    assert hits
    assert set(ids(hits)) <= {"2401.00003", "2402.00003"}


def test_without_embeddings_similar_is_the_keyword_list_alone(
    engine: tuple[str, str | None], tmp_path: Path
) -> None:
    app = _open(tmp_path, *engine, embed=False)
    try:
        assert app.indexes.vectors.current() is None  # nothing embedded yet
        hits = app.search.hybrid.similar(ME, limit=5)
        assert hits, "the keyword list still answers"
        assert ME not in ids(hits)
        assert "2401.00005" not in ids(hits)
        assert all(h.dense_rank is None and h.keyword_rank is not None and h.similarity is None for h in hits)
        with TestClient(create_app(lambda: app)) as client:
            answer = client.get(f"/api/papers/{ME}/similar", params={"limit": 5})
            assert answer.status_code == 200
            assert [item["paper"]["id"] for item in answer.json()] == ids(hits)
            assert all(item["similarity"] is None for item in answer.json())
            page = client.get(f"/papers/{ME}")
            assert page.status_code == 200
            assert hits[0].paper.title in page.text
    finally:
        app.close()


@pytest.mark.sqlite_only  # damages tantivy's files
def test_a_damaged_keyword_index_leaves_the_embedding_neighbours(tmp_path: Path) -> None:
    app = _open(tmp_path, "tantivy", None, similar_keyword_weight=0.25)
    try:
        intact = app.search.hybrid.similar(ME, limit=5)
        assert any(h.keyword_rank is not None for h in intact)
        garble(app.settings.data_dir / "keyword", "idx", in_place=True)
        hits = app.search.hybrid.similar(ME, limit=5)
        assert hits
        assert all(h.keyword_rank is None and h.dense_rank is not None for h in hits)
        with TestClient(create_app(lambda: app), raise_server_exceptions=False) as client:
            answer = client.get(f"/api/papers/{ME}/similar")
            assert answer.status_code == 200
            assert [item["paper"]["id"] for item in answer.json()] == ids(
                app.search.hybrid.similar(ME, limit=10)
            )
    finally:
        app.close()


class CitedTogether:
    """A :class:`~paperfeed.domain.search.SimilarSource` over a fixed table, as a co-citation list
    will be once citations are stored."""

    name = "co-citation"

    def __init__(self, table: dict[str, list[str]]) -> None:
        self.table = table

    def related(self, paper_id: str, k: int, filters: SearchFilters | None = None) -> list[ScoredId]:
        return [ScoredId(p, 1.0) for p in self.table.get(paper_id, [])[:k]]


def test_a_further_named_list_is_fused_with_its_weight(app: App) -> None:
    plain = ids(app.search.hybrid.similar(ME, limit=5))
    outsider = "2401.00006"  # the language-model paper: neither list puts it near the top
    assert outsider not in plain[:1]
    app.search.hybrid.similar_sources = ((CitedTogether({ME: [outsider, ME]}), 10.0),)
    boosted = ids(app.search.hybrid.similar(ME, limit=5))
    assert boosted[0] == outsider
    assert ME not in boosted
    app.search.hybrid.similar_sources = ((CitedTogether({ME: [outsider]}), 0.0),)
    assert ids(app.search.hybrid.similar(ME, limit=5)) == plain


@pytest.mark.parametrize(("blend", "expected"), [(1.0, ["kin", "lone"]), (0.5, ["lone", "kin"])])
def test_the_service_ranks_by_the_blend_it_is_given(
    engine: tuple[str, str | None], tmp_path: Path, blend: float, expected: list[str]
) -> None:
    """The hand-worked vectors of test_neighbourhood.py, stored: the whole neighbourhood lifts KIN over
    LONE, half of it keeps LONE (the closer paper) first. Each vector's opposite is stored too, so the
    index's mean (the centre) is zero and the geometry is the one worked out by hand."""
    dimension = 64  # the fake embedder's, whose model the index is opened for
    names = ["query", "lone", "pair-a", "pair-b", "kin"]
    vectors = np.zeros((len(names), dimension), dtype=np.float32)
    vectors[:, :4] = np.vstack([QUERY, CANDIDATES])
    papers = [
        Paper(id=f"{sign}{name}", title=f"{sign}{name} paper", abstract=f"About {sign}{name}.")
        for sign in ("", "mirror-")
        for name in names
    ]
    url = engine[1]
    settings = Settings(
        data_dir=tmp_path / "data",
        database_url=url,
        embedding_backend="fake",
        keyword_engine=engine[0],  # type: ignore[arg-type]
        similar_neighbourhood=2,
        similar_neighbourhood_power=1.0,
        similar_neighbourhood_blend=blend,
    )
    app = build_app(settings)
    try:
        app.indexes.keyword.on_papers_changed(app.core.store.apply_batch(Batch(papers=papers)))
        app.indexes.keyword.flush()
        model = app.indexes.embedders.current()
        assert model is not None
        index = app.indexes.vector_index(model_id=model.model_id, dimension=dimension, fresh=True)
        index.upsert(
            VectorRecord(p.id, v, None, (), False)
            for p, v in zip(papers, np.vstack([vectors, -vectors]), strict=True)
        )
        index.save()
        assert app.search.hybrid.similar_settings.neighbourhood_blend == blend
        hits = [h.paper.id for h in app.search.hybrid.similar("query", limit=4)]
        assert hits == ["pair-a", "pair-b", *expected]
    finally:
        app.close()
