"""kill -9 in the middle of indexing, then run again: at most one batch lost, no finished work redone."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

from sqlalchemy import create_engine, select

from paperfeed.adapters.store import SqlPaperStore
from paperfeed.adapters.store.embeddings import SqlEmbeddingStore
from paperfeed.adapters.store.schema import embeddings
from paperfeed.domain.embedding import embedding_text
from paperfeed.services.indexing import IndexingService

from .conftest import add_papers, paper
from .test_service import RecordingEmbedder, _texts

ROOT = Path(__file__).resolve().parents[2]
N, BATCH = 200, 10


def _stored(url: str) -> dict[str, object]:
    """Read through a separate engine (the store's own may hold cached connections)."""
    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            rows = conn.execute(select(embeddings.c.paper_id, embeddings.c.created_at)).all()
            return {str(pid): created for pid, created in rows}
    finally:
        engine.dispose()


def test_kill_9_mid_batch_then_rerun_resumes(store: SqlPaperStore) -> None:
    add_papers(store, [paper(i) for i in range(N)])
    url = store.engine.url.render_as_string(hide_password=False)
    cmd = [sys.executable, "-m", "tests.indexing.slow_indexer", url, str(BATCH), "0.25"]
    proc = subprocess.Popen(
        cmd, cwd=ROOT, env={**os.environ, "PYTHONUNBUFFERED": "1"}, stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None
    reported = 0
    deadline = time.monotonic() + 120
    while reported < 4 * BATCH and time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        reported = int(line)
    proc.send_signal(signal.SIGKILL)  # during the next batch's (slow) embedding
    proc.wait()
    proc.stdout.close()
    assert reported >= 4 * BATCH, "the indexer never got going"

    before = _stored(url)
    assert len(before) >= reported  # every reported batch was durable
    assert len(before) % BATCH == 0  # whole batches only: nothing half-written
    assert len(before) < N, "the kill landed after the job finished"

    service = IndexingService(SqlEmbeddingStore(store.engine), RecordingEmbedder(), batch_size=BATCH)
    assert service.plan().backlog == N - len(before)
    summary = service.run()
    assert summary.embedded == N - len(before)
    finished = {embedding_text(p.title, p.abstract) for p in map(paper, range(N)) if p.id in before}
    assert len(finished) == len(before)
    assert not set(_texts(service)) & finished  # not one finished paper embedded again
    after = _stored(url)
    assert len(after) == N
    assert {pid: after[pid] for pid in before} == before  # finished vectors untouched
    if store.engine.dialect.name == "sqlite":
        with sqlite3.connect(store.engine.url.database or "") as conn:
            assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
