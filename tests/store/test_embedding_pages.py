"""A model's vectors are read in pages of paper ids that the index hands over in order.

With an index on ``model_id`` alone, SQLite sorted every remaining row of the model for each page, so a
full read (a faiss build, a node's cold start, a topic build) grew with the square of the papers: 33 s at
200k, and a 1M topic build was still reading after 7 minutes (migration 0015).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from sqlalchemy import text

from paperfeed.adapters.store import SqlPaperStore, open_store
from paperfeed.adapters.store.embeddings import SqlEmbeddingStore
from paperfeed.domain.embedding import PendingPaper
from paperfeed.domain.ingest import Batch
from paperfeed.domain.models import Paper, content_hash
from tests.support.statements import recorded_statements

MODEL = "test-model"


def _store(tmp_path: Path) -> SqlPaperStore:
    return open_store(f"sqlite:///{tmp_path / 'pages.db'}")


def _fill(store: SqlPaperStore, n: int, model: str = MODEL, prefix: str = "p") -> list[str]:
    made = [Paper(id=f"{prefix}{i:05d}", title=f"Paper {i}", abstract="words") for i in range(n)]
    store.apply_batch(Batch(papers=made))
    pending = [
        PendingPaper(p.id, p.title, p.abstract, content_hash(p.title, p.abstract), False) for p in made
    ]
    vectors = np.random.default_rng(0).standard_normal((n, 8)).astype(np.float32)
    SqlEmbeddingStore(store.engine).save_vectors(model, pending, vectors)
    return [p.id for p in made]


def test_every_page_comes_from_the_index_in_order_without_a_sort(tmp_path: Path) -> None:
    store = _store(tmp_path)
    wanted = _fill(store, 25)
    _fill(store, 7, model="another-model", prefix="q")
    with recorded_statements(store.engine) as sent:
        got = [r.paper_id for page in SqlEmbeddingStore(store.engine).records(MODEL, page=4) for r in page]
    seen = [
        (statement, parameters)
        for statement, parameters in sent
        if "FROM embeddings" in statement and "ORDER BY embeddings.paper_id" in statement
    ]
    assert got == sorted(wanted)  # all of this model, none of the other, each once, in id order
    assert len(seen) == 8  # 7 pages of 4 and the empty read that ends it
    statement, parameters = seen[-1]
    with store.engine.connect() as conn:
        plan = " ".join(
            str(row[-1]) for row in conn.exec_driver_sql(f"EXPLAIN QUERY PLAN {statement}", parameters)
        )
    assert "TEMP B-TREE" not in plan, plan
    assert "ix_embeddings_model_paper" in plan, plan


def test_the_migration_replaces_the_model_index(tmp_path: Path) -> None:
    store = _store(tmp_path)
    with store.engine.connect() as conn:
        names = {
            r[0] for r in conn.execute(text("SELECT name FROM sqlite_master WHERE tbl_name = 'embeddings'"))
        }
    assert "ix_embeddings_model_paper" in names
    assert "ix_embeddings_model_id" not in names
