"""``paperfeed index --workers N`` with the real model (torch, offline), on SQLite and PostgreSQL: the same
vectors as one process, a kill -9 mid-run then a rerun embeds every paper once, Ctrl-C stops cleanly."""

from __future__ import annotations

import gzip
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import orjson
import pytest
from sqlalchemy import create_engine, select
from typer.testing import CliRunner

from paperfeed.adapters.store import open_store
from paperfeed.adapters.store.schema import embeddings
from paperfeed.cli import cli_app as app

from .conftest import add_papers, paper

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow  # every test loads the model in two worker processes


def _env(url: str) -> dict[str, str]:
    return {
        "PAPERFEED_EMBEDDING_BACKEND": "torch",
        "PAPERFEED_DATABASE_URL": url,
        "PAPERFEED_EMBEDDING_THREADS": "2",
        "HF_HUB_OFFLINE": "1",
    }


@pytest.fixture
def corpus(shared_dir: Path) -> list[str]:
    """Real SciFact abstracts (varied lengths, some past the 256-token window)."""
    abstracts: list[str] = []
    with gzip.open(shared_dir / "data" / "scifact_corpus.jsonl.gz", "rb") as f:
        for line in f:
            abstracts.append(orjson.loads(line)["abstract"])
            if len(abstracts) == 48:
                break
    return abstracts


def _fill(url: str, abstracts: list[str]) -> None:
    store = open_store(url)
    try:
        add_papers(store, [paper(i, abstract=text) for i, text in enumerate(abstracts)])
    finally:
        store.close()


def _stored(url: str) -> dict[str, tuple[object, bytes]]:
    """paper id -> (created_at, vector bytes), read through an engine of its own."""
    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            rows = conn.execute(
                select(embeddings.c.paper_id, embeddings.c.created_at, embeddings.c.vector)
            ).all()
        return {str(pid): (created, bytes(vector)) for pid, created, vector in rows}
    finally:
        engine.dispose()


def _index(data: Path, url: str, *args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, ["--data-dir", str(data), "index", *args], env=_env(url))
    return result.exit_code, " ".join(result.stdout.split()), " ".join(result.stderr.split())


def _vectors(rows: dict[str, tuple[object, bytes]]) -> dict[str, np.ndarray]:
    return {pid: np.frombuffer(vector, dtype="<f4") for pid, (_, vector) in rows.items()}


def test_two_workers_give_the_vectors_one_process_gives(
    db_url: str, corpus: list[str], tmp_path: Path
) -> None:
    _fill(db_url, corpus[:24])
    code, out, err = _index(tmp_path / "data", db_url, "--workers", "2", "--batch-size", "4")
    assert code == 0, err
    assert "embedding in 2 worker processes (torch), 1 thread each" in out
    assert "embedded 24 papers (24 new, 0 re-embedded" in out
    shares = [int(n) for n in re.findall(r"worker \d \(pid \d+\): (\d+) papers", out)]
    assert sum(shares) == 24
    assert 1 <= len(shares) <= 2
    two = _vectors(_stored(db_url))
    code, out, err = _index(tmp_path / "data", db_url, "--rebuild")  # one process, 2 threads
    assert code == 0, err
    assert "embedded 24 papers (24 new, 0 re-embedded" in out  # --rebuild forgot them first
    assert "worker 1" not in out
    one = _vectors(_stored(db_url))
    assert one.keys() == two.keys()
    assert len(one) == 24
    for pid, vector in one.items():
        assert vector.shape == (384,)
        np.testing.assert_allclose(two[pid], vector, atol=2e-5)
    # and not vacuously: different papers have different vectors
    assert not np.allclose(one["2501.00000"], one["2501.00001"], atol=1e-2)


def _start(data: Path, url: str, batch: int) -> subprocess.Popen[str]:
    cmd = [sys.executable, "-m", "paperfeed", "--data-dir", str(data), "index", "--workers", "2"]
    return subprocess.Popen(
        [*cmd, "--batch-size", str(batch)],
        cwd=ROOT,
        env={**os.environ, **_env(url)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # its own process group: the workers can be found (and must be gone)
    )


def _wait_for_rows(url: str, proc: subprocess.Popen[str], at_least: int) -> int:
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline:
        n = len(_stored(url))
        if n >= at_least:
            return n
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.05)
    raise AssertionError("the workers never committed a batch")


def _group_gone(pgid: int, within: float = 20.0) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.1)
    os.killpg(pgid, signal.SIGKILL)  # do not leave them running past the test
    return False


def test_kill_9_mid_run_then_rerun_embeds_every_paper_once(
    db_url: str, corpus: list[str], tmp_path: Path
) -> None:
    n, batch = 48, 4
    _fill(db_url, corpus[:n])
    proc = _start(tmp_path / "data", db_url, batch)
    _wait_for_rows(db_url, proc, 1)
    proc.send_signal(signal.SIGKILL)  # the parent, the one writer; the workers are computing
    proc.communicate()
    assert _group_gone(proc.pid), "worker processes outlived the killed index command"
    before = _stored(db_url)
    assert 0 < len(before) < n, "the kill landed after the run finished"
    assert len(before) % batch == 0  # whole batches only: nothing half-written

    code, out, err = _index(tmp_path / "data", db_url, "--workers", "2", "--batch-size", str(batch))
    assert code == 0, err
    assert f"embedded {n - len(before)} papers ({n - len(before)} new, 0 re-embedded" in out
    after = _stored(db_url)
    assert len(after) == n
    assert {pid: after[pid] for pid in before} == before  # finished vectors untouched, none re-embedded
    code, out, _ = _index(tmp_path / "data", db_url, "--workers", "2")
    assert code == 0
    assert f"all {n} papers are embedded" in out


def test_ctrl_c_stops_cleanly_and_keeps_what_is_committed(corpus: list[str], tmp_path: Path) -> None:
    url = f"sqlite+pysqlite:///{tmp_path / 'paperfeed.db'}"
    n, batch = 48, 4
    _fill(url, corpus[:n])
    proc = _start(tmp_path / "data", url, batch)
    _wait_for_rows(url, proc, 1)
    os.kill(proc.pid, signal.SIGINT)  # the parent only, as a terminal's Ctrl-C reaches it first
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert "stopping: committing the batches that are done" in err
    assert "Traceback" not in err
    assert "stopped: every committed batch is kept, the next run continues" in out
    done = len(_stored(url))
    assert 0 < done < n
    assert f"embedded {done} papers" in " ".join(out.split())
    assert _group_gone(proc.pid), "worker processes outlived the stopped index command"


@pytest.mark.parametrize(
    ("bad", "why"),
    [
        ("0", "greater than or equal to 1"),
        ("-1", "greater than or equal to 1"),
        ("65", "less than or equal to 64"),
        ("two", "a valid integer"),
    ],
)
def test_a_bad_worker_count_is_a_clear_error(bad: str, why: str, tmp_path: Path) -> None:
    url = f"sqlite+pysqlite:///{tmp_path / 'paperfeed.db'}"
    code, _, err = _index(tmp_path / "data", url, "--workers", bad)
    assert code == 2
    assert f"Invalid value for '--workers': Input should be {why}" in err
    assert not (tmp_path / "paperfeed.db").exists()  # refused before anything was opened


def test_workers_do_not_combine_with_follow(tmp_path: Path) -> None:
    url = f"sqlite+pysqlite:///{tmp_path / 'paperfeed.db'}"
    code, _, err = _index(tmp_path / "data", url, "--workers", "2", "--follow")
    assert code == 2
    assert "--workers applies to embedding a backlog once: not with --follow or --keyword" in err
