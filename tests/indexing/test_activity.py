"""What readers are told about the indexer (issue #30, item 12): at work (rate, time left), idle, or none.

A reader's composition and an indexing run in a thread of this process share a data folder, as the web
server and `paperfeed index` share one; the indexer's entry lives in `<data_dir>/run/indexer-<pid>.json`.
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

from paperfeed.adapters.indexer_activity import JsonIndexerActivity
from paperfeed.bootstrap import build_app
from paperfeed.services.indexer_activity import ActivityReporter
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
        add_papers(reader.store, [paper(i) for i in range(1, 21)])
        said = reader.coverage.note()
        assert said is not None
        assert "20 have no vector and no indexer is running" in said
        assert "`paperfeed index`" in said

        activity = ActivityReporter(
            JsonIndexerActivity(settings.data_dir / "run"), process_identity(), every=0
        )
        indexer = IndexingService(
            reader.embeddings, SlowEmbedder(0.15), reader._open_vector_index, batch_size=2, activity=activity
        )
        seen: list[str | None] = []
        worker = threading.Thread(target=indexer.run)
        worker.start()
        while worker.is_alive():
            seen.append(reader.coverage.note())
            time.sleep(0.05)
        worker.join()
        during = [s for s in seen if s and "the indexer is embedding at" in s]
        assert during, seen
        assert "papers/s, about" in during[-1]
        assert "left; until then, results for the" in during[-1]
        assert reader.indexer_activity() is None  # a finished run takes its entry away
        assert not list((settings.data_dir / "run").glob("indexer-*.json"))
    finally:
        reader.close()


def test_an_entry_left_by_a_process_that_is_gone_does_not_count(tmp_path: Path) -> None:
    data = tmp_path / "data"
    app = build_app(Settings(data_dir=data, embedding_backend="fake", keyword_engine="fts5"))
    try:
        add_papers(app.store, [paper(1), paper(2)])
        folder = data / "run"
        folder.mkdir(parents=True)
        host = process_identity().split(":")[0]
        entry = {
            "holder": f"{host}:4194303:1",  # above any pid this machine hands out
            "state": "embedding",
            "started_at": "2026-11-28T10:00:00+00:00",
            "updated_at": "2026-11-28T10:00:00+00:00",
            "embedded": 5,
            "backlog": 100,
            "rate": 3.0,
        }
        (folder / "indexer-4194303.json").write_text(json.dumps(entry))
        (folder / "indexer-7.json").write_text("{half a file")
        assert app.indexer_activity() is None
        said = app.coverage.note()
        assert said is not None
        assert "no indexer is running" in said
    finally:
        app.close()
