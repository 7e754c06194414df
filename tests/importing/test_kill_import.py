"""kill -9 in the middle of an import, then run it again: every paper present exactly once."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

from paperfeed.adapters.keyword.tantivy_index import TantivyKeywordIndex
from paperfeed.adapters.store import open_store
from paperfeed.domain.query import parse_query

from .conftest import rec, write_jsonl

N = 25_000


def _count(db: Path) -> int:
    if not db.exists():
        return 0
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5) as conn:
            return int(conn.execute("SELECT count(*) FROM papers").fetchone()[0])
    except sqlite3.OperationalError:
        return 0  # schema not created yet


def test_kill_9_mid_import_then_rerun(tmp_path: Path) -> None:
    records = [
        rec(f"2503.{i:05d}", abstract=f"Abstract number {i}. " * 20, upvotes=i % 7) for i in range(1, N + 1)
    ]
    f = write_jsonl(tmp_path / "big.jsonl.gz", records, gz=True)
    data = tmp_path / "data"
    db = data / "paperfeed.db"
    cmd = [
        sys.executable,
        "-m",
        "paperfeed",
        "--data-dir",
        str(data),
        "import",
        "--batch-size",
        "500",
        str(f),
    ]
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while _count(db) < 2_000 and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    partial = _count(db)
    assert 0 < partial < N, f"kill landed outside the import ({partial} papers)"

    rerun = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    assert rerun.returncode == 0, rerun.stderr
    with sqlite3.connect(db) as conn:
        ids = [row[0] for row in conn.execute("SELECT id FROM papers")]
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        ledger = conn.execute("SELECT count(*) FROM source_records").fetchone()[0]
    assert len(ids) == len(set(ids)) == N
    assert set(ids) == {r["id"] for r in records}
    assert ledger == N
    # The keyword index, committed batch by batch after the store, agrees: each paper once.
    store = open_store(f"sqlite+pysqlite:///{db}")
    try:
        index = TantivyKeywordIndex(data / "keyword", store.engine)
        searcher = index._index.searcher()
        assert searcher.num_docs == N
        hits = index.search(parse_query('"Abstract number 24999"'), 5)
        assert [h.paper_id for h in hits] == ["2503.24999"]
        index.close()
    finally:
        store.close()
