"""The overall similar list's sentence stage (issue #43): the first candidates re-ranked by the late
interaction of the two papers' sentences, through the real composition (store, vector index, sentence
indexer) with the fake embedder (words hashed: sentences sharing words are alike)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from paperfeed.bootstrap import App, build_app
from paperfeed.domain.ingest import Batch
from paperfeed.domain.models import Paper
from paperfeed.settings import Settings
from tests.facets.support import PositionalRoles

QUERY, ONE_PART, EVERY_PART = "2502.00001", "2502.00002", "2502.00003"
PAPERS = [
    Paper(
        id=QUERY,
        title="Sparse attention kernels",
        abstract="Sparse attention cuts the memory of transformers. We tile the kernel into blocks. "
        "Throughput doubles on long inputs.",
    ),
    # the same title and one sentence said over and over: close as a whole, one part of it met
    Paper(
        id=ONE_PART,
        title="Sparse attention kernels",
        abstract="Sparse attention cuts the memory of transformers. Sparse attention cuts the memory of "
        "transformers for sparse attention kernels. Sparse memory of transformers.",
    ),
    # another title, but each of the query's three sentences has its counterpart here
    Paper(
        id=EVERY_PART,
        title="Blocked kernels for long inputs",
        abstract="The memory of transformers is cut by sparse attention. We tile the kernel into blocks. "
        "Throughput doubles on long inputs.",
    ),
    *(
        Paper(id=f"2502.0001{n}", title=f"On {word}", abstract=f"Attention to {word} matters. We study it.")
        for n, word in enumerate(["rivers", "birds", "granite", "tides"])
    ),
]


def stage_app(tmp_path: Path, *, sentences: bool = True, **settings: object) -> App:
    app = build_app(
        Settings(data_dir=tmp_path / "data", embedding_backend="fake", **settings)  # type: ignore[arg-type]
    )
    app.indexes.__dict__["role_models"] = PositionalRoles()
    result = app.core.store.apply_batch(Batch(papers=PAPERS))
    app.indexes.keyword.on_papers_changed(result)
    app.indexes.keyword.flush()
    app.indexes.indexer.current().run()
    if sentences:
        app.indexes.sentence_indexer.current().run()
    return app


@pytest.fixture
def app(tmp_path: Path) -> Iterator[App]:
    found = stage_app(tmp_path, similar_sentence_weight=2.0, similar_sentence_rrf_k=30.0)
    try:
        yield found
    finally:
        found.close()


def ids(hits: object) -> list[str]:
    return [h.paper.id for h in hits]  # type: ignore[attr-defined]


def first_stage(app: App, limit: int = 6) -> list[str]:
    paper = app.catalogue.visible.paper(QUERY)
    assert paper is not None
    return ids(app.search.hybrid.similar_to(paper, limit))


def test_a_paper_that_meets_every_sentence_overtakes_one_close_only_as_a_whole(app: App) -> None:
    before = first_stage(app)
    assert before.index(ONE_PART) < before.index(EVERY_PART)  # by the whole text, the one-part paper leads
    after = app.search.similar.of_id(QUERY, 6)
    assert after is not None
    assert ids(after).index(EVERY_PART) < ids(after).index(ONE_PART)
    assert sorted(ids(after)) == sorted(before)  # re-ranked, nothing drawn from elsewhere
    assert QUERY not in ids(after)


def test_weight_zero_is_the_first_stage_and_the_depth_bounds_what_moves(tmp_path: Path) -> None:
    off = stage_app(tmp_path / "off", similar_sentence_weight=0.0)
    try:
        found = off.search.similar.of_id(QUERY, 6)
        assert found is not None
        assert ids(found) == first_stage(off)
    finally:
        off.close()
    shallow = stage_app(tmp_path / "shallow", similar_sentence_weight=2.0, similar_sentence_depth=2)
    try:
        before = first_stage(shallow)
        found = shallow.search.similar.of_id(QUERY, 6)
        assert found is not None
        assert sorted(ids(found)[:2]) == sorted(before[:2])  # only the first two are re-ranked
        assert ids(found)[2:] == before[2:6]
    finally:
        shallow.close()


def test_without_its_sentences_indexed_the_paper_keeps_the_first_stage(tmp_path: Path) -> None:
    app = stage_app(tmp_path, sentences=False, similar_sentence_weight=2.0)
    try:
        found = app.search.similar.of_id(QUERY, 6)
        assert found is not None
        assert ids(found) == first_stage(app)
    finally:
        app.close()


def test_the_keyword_list_joins_the_fusion_when_weighted(tmp_path: Path) -> None:
    app = stage_app(
        tmp_path, similar_sentence_weight=0.0, similar_sentence_keyword_weight=5.0, similar_sentence_rrf_k=1.0
    )
    try:
        paper = app.catalogue.visible.paper(QUERY)
        assert paper is not None
        words = [x.paper_id for x in app.search.hybrid.similar_keyword(paper, 6)]
        assert QUERY not in words
        assert words[0] != first_stage(app)[0]  # the two lists disagree on what leads
        found = app.search.similar.of(paper, 6)
        assert ids(found)[0] == words[0]  # the keyword list's first leads when it weighs five times more
    finally:
        app.close()
