"""``paperfeed citations import`` killed with SIGKILL mid-file, as a user's machine would kill it: the real
CLI in a subprocess, on SQLite and PostgreSQL. The same command then resumes after the last saved batch and
ends in exactly the graph the file describes, every edge once, every count right."""

from __future__ import annotations

import gzip
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text

from paperfeed.adapters.store import open_store
from paperfeed.adapters.store.sql_store import normalise_url
from paperfeed.domain.paper_graph import arxiv_month_day

from .conftest import cited_edges_agree, graph

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]
N = 160_000
BATCH = "2000"


def _edges() -> list[tuple[str, str]]:
    """Papers of 2023-24 citing papers of the year before: a few repeats, as real reference lists have."""
    out = []
    for i in range(N):
        citing = f"24{1 + i % 12:02d}.{10000 + i // 12 % 40000:05d}"
        cited = f"23{1 + i * 7 % 12:02d}.{10000 + i * 31 % 20000:05d}"
        out.append((citing, cited))
    return out


def _cli(path: Path, data: Path, url: str) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "PYTHONUNBUFFERED": "1"}
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "paperfeed",
            "--data-dir",
            str(data),
            "--database-url",
            url,
            "citations",
            "import",
            "--batch-size",
            BATCH,
            str(path),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )


def _saved_line(url: str) -> int:
    engine = create_engine(normalise_url(url))
    try:
        with engine.connect() as conn:
            return int(conn.execute(text("SELECT coalesce(max(line), 0) FROM citation_imports")).scalar_one())
    except Exception:  # the schema not made yet
        return 0
    finally:
        engine.dispose()


def test_a_killed_import_resumes_to_the_graph_of_the_file(db_url: str, tmp_path: Path) -> None:
    edges = _edges()
    path = tmp_path / "big.tsv.gz"
    path.write_bytes(gzip.compress("".join(f"{a}\t{b}\n" for a, b in edges).encode()))
    open_store(db_url).close()  # migrated before the clock starts
    data = tmp_path / "data"

    proc = _cli(path, data, db_url)
    deadline = time.monotonic() + 120
    while _saved_line(db_url) < 20_000:
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "the import never got going"
        time.sleep(0.02)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=10)
    saved = _saved_line(db_url)
    assert 0 < saved < N, f"the kill landed outside the import (line {saved})"
    store = open_store(db_url)
    try:
        stored = len(graph(store)["edges"])
    finally:
        store.close()
    assert 0 < stored < len(set(edges))

    rerun = _cli(path, data, db_url)
    out, err = rerun.communicate(timeout=300)
    assert rerun.returncode == 0, err
    assert "Traceback" not in err
    assert f"big.tsv.gz: resumed an interrupted import after line {saved:,}" in " ".join(err.split())
    added = int(out.split("; +")[1].split(" ")[0].replace(",", ""))
    assert added == len(set(edges)) - stored  # the batch in flight left nothing: no edge counted twice
    assert "0 already stored from it" in out

    distinct = sorted(set(edges))
    indegree: dict[str, int] = {}
    for _, cited in distinct:
        indegree[cited] = indegree.get(cited, 0) + 1
    keys = sorted({k for pair in distinct for k in pair})
    store = open_store(db_url)
    try:
        state = graph(store)
        assert state["edges"] == [
            (a, b, arxiv_month_day(a), None, (), (), ("file:big.tsv.gz",)) for a, b in distinct
        ]
        assert [(w[0], w[-2], w[-1]) for w in state["works"]] == [
            (k, indegree.get(k, 0), arxiv_month_day(k)) for k in keys
        ]
        cited_edges_agree(store)
        with store.engine.connect() as conn:
            row = conn.execute(text("SELECT line, done, edges_added, rejected FROM citation_imports")).one()
        assert (row[0], bool(row[1]), row[2], row[3]) == (N, True, len(distinct), 0)
    finally:
        store.close()
