"""One forward pass a paper (issue #39): the indexer embeds each batch with its sentences, commits the
vectors first, leaves the sentences to the second pass only when no role model is at hand, takes papers
that arrived during a run before the rest of the backlog, and the follower's sentence slice gives way as
soon as a paper waits for its vector."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt

from paperfeed.adapters.embed.fake import FakeEmbedder
from paperfeed.bootstrap import App, build_app
from paperfeed.cli.context import Context
from paperfeed.cli.index import _sentences_slice
from paperfeed.domain.ingest import Batch
from paperfeed.domain.models import Paper
from paperfeed.domain.sentences import sentence_model_id
from paperfeed.settings import Settings
from tests.facets.support import PAPERS, PositionalRoles

Vectors = npt.NDArray[np.float32]


class CountingEmbedder(FakeEmbedder):
    """The fake embedder, counting what each call embeds (and able to add papers while it works)."""

    def __init__(self) -> None:
        super().__init__()
        self.plain: list[list[str]] = []  # texts embedded on their own
        self.pooled: list[list[str]] = []  # texts embedded with their spans
        self.during: list[object] = []  # callbacks run at the first call (a paper arriving mid-run)

    def embed(self, texts: Sequence[str]) -> Vectors:
        self._arrive()
        self.plain.append(list(texts))
        return super().embed(texts)

    def embed_spans(
        self, texts: Sequence[str], spans: Sequence[Sequence[tuple[int, int]]], heads: Sequence[int]
    ) -> tuple[Vectors, list[Vectors]]:
        self._arrive()
        self.pooled.append(list(texts))
        return FakeEmbedder.embed(self, texts), [
            FakeEmbedder.embed(self, [t[a:b] for a, b in s]) for t, s in zip(texts, spans, strict=True)
        ]

    def _arrive(self) -> None:
        while self.during:
            self.during.pop()()  # type: ignore[operator]


def _app(tmp_path: Path, embedder: FakeEmbedder, roles: PositionalRoles, batch: int = 2) -> App:
    app = build_app(
        Settings(data_dir=tmp_path / "data", embedding_backend="fake", embedding_batch_size=batch)
    )
    app.indexes.__dict__["role_models"] = roles
    app.indexes.embedders._embedder = embedder  # the counting double stands for the configured fake
    result = app.core.store.apply_batch(Batch(papers=PAPERS))
    app.indexes.keyword.on_papers_changed(result)
    return app


def test_each_batch_is_embedded_once_with_its_sentences(tmp_path: Path) -> None:
    embedder, roles = CountingEmbedder(), PositionalRoles()
    roles.trained = 1  # a role model is at hand (the shipped one, for the bundled model)
    app = _app(tmp_path, embedder, roles)
    try:
        summary = app.indexes.indexer.current().run()
        assert (summary.embedded, summary.sentences) == (len(PAPERS), len(PAPERS))
        assert embedder.plain == []  # no text embedded a second time, on its own
        assert sum(len(t) for t in embedder.pooled) == len(PAPERS)
        sentences = app.indexes.sentence_indexer.current()
        assert sentences.plan().backlog == 0  # nothing left for the second pass
        rows = app.indexes.sentences.sentences([PAPERS[0].id], sentence_model_id(embedder.model_id))
        assert [s.role for s in rows[PAPERS[0].id].sentences] == ["background", "method", "result"]
        assert app.indexes.vectors.count() == len(PAPERS)
    finally:
        app.close()


def test_without_a_role_model_the_vectors_come_first_and_the_sentences_after(tmp_path: Path) -> None:
    """A model no role model ships for: the batches are vectors only (search must not wait for a
    training), and the second pass trains, then does the sentences."""
    embedder, roles = CountingEmbedder(), PositionalRoles()
    app = _app(tmp_path, embedder, roles)
    try:
        summary = app.indexes.indexer.current().run()
        assert (summary.embedded, summary.sentences) == (len(PAPERS), 0)
        assert embedder.pooled == []
        sentences = app.indexes.sentence_indexer.current()
        assert sentences.plan().backlog == len(PAPERS)
        done = sentences.run()
        assert done.trained
        assert done.papers == len(PAPERS)
    finally:
        app.close()


def test_index_no_sentences_embeds_the_papers_alone(tmp_path: Path) -> None:
    embedder, roles = CountingEmbedder(), PositionalRoles()
    roles.trained = 1
    app = _app(tmp_path, embedder, roles)
    try:
        assert app.indexes.indexer.current().run(sentences=False).sentences == 0
        assert embedder.pooled == []
        assert sum(len(t) for t in embedder.plain) == len(PAPERS)
        assert app.indexes.sentence_indexer.current().plan().backlog == len(PAPERS)
    finally:
        app.close()


def test_a_paper_that_arrives_during_a_run_goes_before_the_rest_of_the_backlog(tmp_path: Path) -> None:
    embedder, roles = CountingEmbedder(), PositionalRoles()
    roles.trained = 1
    app = _app(tmp_path, embedder, roles, batch=2)
    # its id sorts after every other: in id order alone it would wait for the whole backlog
    late = Paper(id="2599.99999", title="A late paper", abstract="It came during the run. It is short.")
    embedder.during.append(lambda: app.core.store.apply_batch(Batch(papers=[late])))
    try:
        service = app.indexes.indexer.current()
        summary = service.run(limit=len(PAPERS))  # the backlog as the run began
        order = [text for texts in embedder.pooled for text in texts]
        assert order[2].startswith("A late paper")  # the second batch: the first after it arrived
        assert summary.embedded == len(PAPERS)
        assert service.plan().backlog == 1  # one of the first backlog is left for the next slice
    finally:
        app.close()


def test_the_followers_sentence_slice_gives_way_to_a_new_paper(tmp_path: Path) -> None:
    embedder, roles = CountingEmbedder(), PositionalRoles()
    app = _app(tmp_path, embedder, roles)
    try:
        service = app.indexes.indexer.current()
        service.run()  # no role model yet: vectors only, the sentences are a backlog
        said: list[str] = []
        app.core.store.apply_batch(
            Batch(papers=[Paper(id="2599.00001", title="New", abstract="A new paper. It needs a vector.")])
        )
        context = Context(_app=app)
        assert not _sentences_slice(context, said.append, 2000, service)  # a paper waits: nothing done
        assert "new papers first" in said[-1]
        assert roles.trained == 0  # not even the role model's training (minutes) went first
        service.run()
        assert _sentences_slice(context, said.append, 2000, service)  # none waits: the slice runs
        assert app.indexes.sentence_indexer.current().plan().backlog == 0
    finally:
        app.close()
