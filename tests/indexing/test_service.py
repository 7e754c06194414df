"""IndexingService on a real SQLite store with the fake embedder and a real (test) vector index."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from paperfeed.adapters.embed.fake import FakeEmbedder
from paperfeed.adapters.store import SqlPaperStore
from paperfeed.adapters.store.embeddings import SqlEmbeddingStore
from paperfeed.services.indexing import IndexingService
from tests.support.defaults import DEFAULTS

from .conftest import add_papers, paper
from .npz_index import NpzIndexOpener


class RecordingEmbedder:
    """The fake embedder, remembering every text it was asked to embed."""

    def __init__(self, name: str = "fake") -> None:
        self.inner = FakeEmbedder(64, name=name)
        self.texts: list[str] = []

    @property
    def model_id(self) -> str:
        return self.inner.model_id

    @property
    def dimension(self) -> int:
        return self.inner.dimension

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.texts.extend(texts)
        return self.inner.embed(texts)


class Progress:
    def __init__(self) -> None:
        self.calls: list[tuple[int, int | None, int, int]] = []

    def update(self, position: int, total: int | None, added: int, updated: int, rejected: int) -> None:
        self.calls.append((position, total, added, updated))


@pytest.fixture
def emb(store: SqlPaperStore) -> SqlEmbeddingStore:
    return SqlEmbeddingStore(store.engine)


@pytest.fixture
def opener(tmp_path: Path) -> NpzIndexOpener:
    return NpzIndexOpener(tmp_path / "vectors.npz")


def _service(emb: SqlEmbeddingStore, opener: NpzIndexOpener | None, name: str = "fake") -> IndexingService:
    return IndexingService(emb, RecordingEmbedder(name), opener, batch_size=4)


def _texts(service: IndexingService) -> list[str]:
    embedder = service.embedder
    assert isinstance(embedder, RecordingEmbedder)
    return embedder.texts


def test_embeds_the_backlog_in_batches_and_fills_the_index(
    store: SqlPaperStore, emb: SqlEmbeddingStore, opener: NpzIndexOpener
) -> None:
    add_papers(store, [paper(i) for i in range(10)])
    service = _service(emb, opener)
    plan = service.plan()
    assert (plan.papers, plan.backlog, plan.model_changed) == (10, 10, False)
    assert plan.message() == "embedding 10 papers with fake-hash64 (0 already up to date)"
    progress = Progress()
    summary = service.run(progress)
    assert (summary.embedded, summary.added, summary.replaced, summary.remaining) == (10, 10, 0, 0)
    assert [c[0] for c in progress.calls] == [0, 4, 8, 10]
    assert progress.calls[-1] == (10, 10, 10, 0)
    assert summary.index is not None
    assert (summary.index.mode, summary.index.size, summary.index.upserted) == ("full", 10, 10)
    saved = opener.load()
    assert len(saved) == 10
    hits = saved.search(FakeEmbedder(64).embed(["dark matter halo simulations"])[0], k=2)
    assert all(h.paper_id in {"2501.00002", "2501.00007"} for h in hits)  # the two dark-matter papers


def test_a_second_run_embeds_nothing(
    store: SqlPaperStore, emb: SqlEmbeddingStore, opener: NpzIndexOpener
) -> None:
    add_papers(store, [paper(i) for i in range(6)])
    _service(emb, opener).run()
    again = _service(emb, opener)
    assert again.plan().message() == "all 6 papers are embedded with fake-hash64"
    summary = again.run()
    assert summary.embedded == 0
    assert _texts(again) == []
    assert summary.index is not None
    assert (summary.index.mode, summary.index.size, summary.index.upserted) == ("incremental", 6, 0)
    assert opener.opened[-1].saves == 0  # nothing new: the index files are left alone


def test_only_changed_papers_are_re_embedded(
    store: SqlPaperStore, emb: SqlEmbeddingStore, opener: NpzIndexOpener
) -> None:
    add_papers(store, [paper(i) for i in range(6)])
    _service(emb, opener).run()
    add_papers(store, [paper(3, abstract="Completely new findings about quasars.", version=2), paper(4)])
    service = _service(emb, opener)
    summary = service.run()
    assert (summary.embedded, summary.added, summary.replaced) == (1, 0, 1)
    assert _texts(service) == [
        "Paper 3 on protein folding with diffusion models. Completely new findings about quasars."
    ]
    assert summary.index is not None
    assert (summary.index.mode, summary.index.size) == ("incremental", 6)
    stored = opener.load().vector("2501.00003")
    assert stored is not None
    assert np.allclose(stored, FakeEmbedder(64).embed(_texts(service))[0])


def test_a_model_change_says_so_and_rebuilds_without_mixing(
    store: SqlPaperStore, emb: SqlEmbeddingStore, opener: NpzIndexOpener
) -> None:
    add_papers(store, [paper(i) for i in range(5)])
    _service(emb, opener).run()
    service = _service(emb, opener, name="other")
    plan = service.plan()
    assert plan.model_changed
    assert plan.message() == "model changed from fake-hash64 to other-hash64: re-embedding 5 papers"
    summary = service.run()
    assert (summary.embedded, summary.replaced) == (5, 5)
    assert emb.model_counts() == {"other-hash64": 5}
    assert summary.index is not None
    assert summary.index.mode == "full"
    saved = opener.load()
    assert saved.manifest.model_id == "other-hash64"
    for pid, record in saved.rows.items():
        assert np.array_equal(record.vector, emb.vectors("other-hash64", [pid])[pid])


def test_an_interrupted_model_change_never_mixes_models_in_the_index(
    store: SqlPaperStore, emb: SqlEmbeddingStore, opener: NpzIndexOpener
) -> None:
    add_papers(store, [paper(i) for i in range(6)])
    _service(emb, opener).run()
    partial = _service(emb, opener, name="other").run(limit=2)
    assert (partial.embedded, partial.remaining) == (2, 4)
    assert partial.index is not None
    assert partial.index.size == 2  # only the new model's vectors, not 2 new + 4 old
    assert opener.load().manifest.model_id == "other-hash64"
    rest = _service(emb, opener, name="other")
    assert rest.plan().message() == "model changed from fake-hash64 to other-hash64: re-embedding 4 papers"
    assert rest.run().embedded == 4
    assert len(opener.load()) == 6


def test_limit_and_rebuild(store: SqlPaperStore, emb: SqlEmbeddingStore, opener: NpzIndexOpener) -> None:
    add_papers(store, [paper(i) for i in range(7)])
    first = _service(emb, opener).run(limit=3)
    assert (first.embedded, first.remaining) == (3, 4)
    rebuild = _service(emb, opener)
    assert rebuild.plan(rebuild=True).message() == "rebuilding: re-embedding all 7 papers with fake-hash64"
    summary = rebuild.run(rebuild=True)
    assert (summary.embedded, summary.added) == (7, 7)
    assert summary.index is not None
    assert (summary.index.mode, summary.index.size) == ("full", 7)


def test_index_catches_up_on_vectors_committed_by_a_run_that_died_before_saving_it(
    store: SqlPaperStore, emb: SqlEmbeddingStore, opener: NpzIndexOpener
) -> None:
    add_papers(store, [paper(i) for i in range(4)])
    _service(emb, opener).run()
    add_papers(store, [paper(9), paper(1, abstract="Brand new text.", version=2)])
    IndexingService(
        emb, FakeEmbedder(64), None, batch_size=DEFAULTS.embedding_batch_size
    ).run()  # vectors committed, index never told
    assert len(opener.load()) == 4
    summary = _service(emb, opener).run()
    assert summary.embedded == 0
    assert summary.index is not None
    # the 2 new vectors, plus the 3 untouched ones stored at the mark itself (the window is inclusive, so
    # a vector committed in the same instant as the mark is never skipped); never a full reload of all
    assert (summary.index.mode, summary.index.size, summary.index.upserted) == ("incremental", 5, 5)
    saved = opener.load().vector("2501.00001")
    assert saved is not None
    assert np.allclose(
        saved, FakeEmbedder(64).embed(["Paper 1 on speech recognition with transformers. Brand new text."])[0]
    )


def test_a_lost_index_file_is_rebuilt_from_stored_vectors(
    store: SqlPaperStore, emb: SqlEmbeddingStore, opener: NpzIndexOpener
) -> None:
    add_papers(store, [paper(i) for i in range(5)])
    _service(emb, opener).run()
    opener.path.unlink()
    service = _service(emb, opener)
    summary = service.run()
    assert _texts(service) == []  # nothing re-embedded
    assert summary.index is not None
    assert (summary.index.mode, summary.index.size) == ("full", 5)


def test_an_embedder_returning_garbage_stores_nothing(store: SqlPaperStore, emb: SqlEmbeddingStore) -> None:
    class Broken(RecordingEmbedder):
        def embed(self, texts: Sequence[str]) -> np.ndarray:
            return np.full((len(texts), 64), np.nan, dtype=np.float32)

    add_papers(store, [paper(i) for i in range(3)])
    with pytest.raises(RuntimeError, match="non-finite"):
        IndexingService(emb, Broken(), None, batch_size=DEFAULTS.embedding_batch_size).run()
    assert emb.model_counts() == {}


def test_without_an_index_the_vectors_are_still_stored(store: SqlPaperStore, emb: SqlEmbeddingStore) -> None:
    add_papers(store, [paper(i) for i in range(3)])
    summary = IndexingService(emb, FakeEmbedder(64), None, batch_size=DEFAULTS.embedding_batch_size).run()
    assert summary.index is None
    assert emb.model_counts() == {"fake-hash64": 3}


def test_a_long_run_refreshes_the_index_as_it_goes(
    store: SqlPaperStore, emb: SqlEmbeddingStore, opener: NpzIndexOpener
) -> None:
    add_papers(store, [paper(i) for i in range(10)])
    ticks = iter(range(0, 10_000, 400))  # each clock reading 400 s later than the one before
    service = IndexingService(
        emb, RecordingEmbedder(), opener, batch_size=4, sync_every=600, clock=lambda: float(next(ticks))
    )
    summary = service.run()
    assert summary.embedded == 10
    sizes = [len(index) for index in opener.opened]
    assert sizes[0] < 10  # a sync in the middle already made the first papers searchable
    assert sizes[-1] == 10
    assert len(opener.load()) == 10


def test_a_change_outside_the_text_re_embeds_nothing(
    store: SqlPaperStore, emb: SqlEmbeddingStore, opener: NpzIndexOpener
) -> None:
    add_papers(store, [paper(i) for i in range(4)])
    _service(emb, opener).run()
    # a newer version with a code link and the same title and abstract: same content hash
    add_papers(store, [paper(2, repo="https://github.com/example/code", version=2)])
    stored = store.get_papers(["2501.00002"])["2501.00002"]
    assert stored.github_repo == "https://github.com/example/code"  # the update did land
    service = _service(emb, opener)
    assert service.plan().backlog == 0
    summary = service.run()
    assert (summary.embedded, _texts(service)) == (0, [])
