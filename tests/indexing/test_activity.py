"""What the search's coverage notice says of the indexer (issue #30, item 12): at work, or none running.

A reader's composition and an indexing run in a thread of this process share a store, as the web server
and `paperfeed index` share one; the indexer's newest report is kept in the store (IndexerReports), which
/admin/jobs reads too (tests/jobs/test_admin_jobs.py).
"""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime
from pathlib import Path

from paperfeed.bootstrap import build_app
from paperfeed.domain.indexing_status import IndexerReport
from paperfeed.services.indexing import IndexingService
from paperfeed.services.jobs import process_identity
from paperfeed.settings import Settings
from tests.indexing.conftest import add_papers, paper
from tests.indexing.slow_indexer import SlowEmbedder


def test_the_notice_follows_an_indexer_at_work_and_says_when_none_runs(tmp_path: Path) -> None:
    settings = Settings(
        data_dir=tmp_path / "data", embedding_backend="fake", keyword_engine="fts5", vector_reload_seconds=0
    )
    reader = build_app(settings)
    try:
        add_papers(reader.core.store, [paper(i) for i in range(1, 21)])
        said = reader.indexes.coverage.note()
        assert said is not None
        assert "20 have no vector and no indexer is running" in said
        assert "`paperfeed index`" in said

        indexer = IndexingService(
            reader.indexes.embeddings,
            SlowEmbedder(0.15),
            reader.indexes.vector_index,
            batch_size=2,
            reports=reader.indexes.embeddings,
            report_every=0,
        )
        seen: list[str | None] = []
        worker = threading.Thread(target=indexer.run)
        worker.start()
        while worker.is_alive():
            seen.append(reader.indexes.coverage.note())
            time.sleep(0.05)
        worker.join()
        during = [s for s in seen if s and "the indexer is embedding at" in s]
        assert during, seen
        # the time left is the indexer's own backlog at the rate of its recent batches (the last report,
        # with nothing left to embed and the index not saved yet, gives its rate alone)
        assert any("papers/s, about" in s and "left; until then, results for the" in s for s in during)
        assert reader.indexes.activity.activity() is None  # a finished one-off run says it stopped
        assert reader.indexes.coverage.note() is None
    finally:
        reader.close()


def test_a_report_left_by_a_process_that_is_gone_does_not_count(tmp_path: Path) -> None:
    app = build_app(Settings(data_dir=tmp_path / "data", embedding_backend="fake", keyword_engine="fts5"))
    try:
        add_papers(app.core.store, [paper(1), paper(2)])
        host = process_identity().split(":")[0]
        gone = IndexerReport(f"{host}:4194303:1", "embedding", 5, 100, 3.0, datetime.now(UTC))  # no such pid
        app.indexes.embeddings.report_indexer(gone)
        assert app.indexes.activity.activity() is None
        said = app.indexes.coverage.note()
        assert said is not None
        assert "no indexer is running" in said
        alive = IndexerReport(process_identity(), "embedding", 5, 2, 3.0, datetime.now(UTC))
        app.indexes.embeddings.report_indexer(alive)
        assert app.indexes.activity.activity() == alive
    finally:
        app.close()
