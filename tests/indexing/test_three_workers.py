"""Three ``paperfeed index`` processes on one store, one killed with SIGKILL in the middle of a batch.

The exact claim (``domain/embedding_claims.py``): every paper ends with one vector of the current model;
every vector was committed once (the store's ledger of committed papers adds up to the number of papers);
the only papers embedded twice are the batch the killed worker had begun and not committed, each exactly
twice; the keyword and vector indexes agree with the store (``paperfeed check``); ``paperfeed jobs
status`` shows each worker. On PostgreSQL each worker has its own data folder, as on three machines; on
SQLite the three share the machine's one folder.

The fake embedder is counted by ``counting_cli.py``: a ledger line per text when a batch's embedding
starts. The victim blocks inside its third batch (so the kill lands mid-batch by construction, not by
timing); the other two finish everything else and wait for its claim, which they take over once its
process is gone.
"""

from __future__ import annotations

import collections
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from sqlalchemy import create_engine, func, select

from paperfeed.adapters.store import open_store
from paperfeed.adapters.store.schema import embeddings, papers
from paperfeed.adapters.store.schema_claims import embedding_claims, embedding_workers
from paperfeed.domain.embedding import embedding_text

from .conftest import add_papers, paper

ROOT = Path(__file__).resolve().parents[2]
N, BATCH = 240, 10
MODEL = "fake-hash64"


def _url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        (tmp_path / "shared").mkdir()
        return f"sqlite+pysqlite:///{tmp_path / 'shared' / 'paperfeed.db'}"
    return str(request.getfixturevalue("pg_url"))


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    found = _url(request, tmp_path)
    store = open_store(found)
    try:
        add_papers(store, [paper(i) for i in range(N)])
    finally:
        store.close()
    if request.param == "sqlite":  # papers written behind the import's back: its keyword index, once
        cmd = [
            sys.executable,
            "-m",
            "paperfeed",
            "--data-dir",
            str(tmp_path / "shared"),
            "index",
            "--keyword",
        ]
        subprocess.run(cmd, cwd=ROOT, env=_env(found), check=True, capture_output=True, timeout=120)
    return found


def _env(url: str) -> dict[str, str]:
    env = {
        k: v for k, v in os.environ.items() if not k.startswith("PAPERFEED_") or k == "PAPERFEED_MODEL_CACHE"
    }
    return {
        **env,
        "PAPERFEED_DATABASE_URL": url,
        "PAPERFEED_EMBEDDING_BACKEND": "fake",
        "PYTHONUNBUFFERED": "1",
    }


def _data_dir(url: str, tmp_path: Path, n: int) -> Path:
    if url.startswith("sqlite"):
        return tmp_path / "shared"  # one machine: the folder of the database and its folder indexes
    folder = tmp_path / f"machine-{n}"
    folder.mkdir(exist_ok=True)
    return folder


def _worker(url: str, data: Path, ledger: Path, *, delay: float, block_at: int) -> subprocess.Popen[str]:
    cmd = [
        sys.executable,
        "-m",
        "tests.indexing.counting_cli",
        str(ledger),
        str(delay),
        str(block_at),
        "--",
        "--data-dir",
        str(data),
        "index",
        "--no-sentences",
        "--batch-size",
        str(BATCH),
    ]
    return subprocess.Popen(
        cmd, cwd=ROOT, env=_env(url), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )


def _ledger(path: Path) -> list[tuple[int, int, str]]:
    if not path.exists():
        return []
    out = []
    for line in path.read_text().splitlines():
        pid, call, text = line.split("\t", 2)
        out.append((int(pid), int(call), text))
    return out


def _wait(what: str, done: object, timeout: float = 90.0) -> None:
    deadline = time.monotonic() + timeout
    while not done():  # type: ignore[operator]
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


def test_three_workers_kill_9_mid_batch_embed_each_paper_once(url: str, tmp_path: Path) -> None:
    ledger = tmp_path / "embedded.tsv"
    engine = create_engine(url)
    victim = _worker(url, _data_dir(url, tmp_path, 0), ledger, delay=0.05, block_at=3)
    others: list[subprocess.Popen[str]] = []
    try:
        # the victim first, so it holds batches from the start; then two more, as on other machines
        _wait("the victim's first batch", lambda: any(pid == victim.pid for pid, _, _ in _ledger(ledger)))
        others = [_worker(url, _data_dir(url, tmp_path, n), ledger, delay=0.05, block_at=0) for n in (1, 2)]

        def victim_claim() -> int:
            with engine.connect() as conn:
                return int(
                    conn.execute(
                        select(func.count())
                        .select_from(embedding_claims)
                        .where(embedding_claims.c.holder.like(f"%:{victim.pid}:%"))
                    ).scalar_one()
                )

        def stored() -> int:
            with engine.connect() as conn:
                return int(conn.execute(select(func.count()).select_from(embeddings)).scalar_one())

        blocked = lambda: any(pid == victim.pid and call == 3 for pid, call, _ in _ledger(ledger))  # noqa: E731
        _wait("the victim stuck in its third batch", blocked)
        held = victim_claim()
        assert held == BATCH  # its third batch, claimed and not committed
        _wait("the others to finish everything but the victim's batch", lambda: stored() == N - held)
        time.sleep(1.0)  # they wait for a claim that is alive (renewed), rather than give up on it
        assert all(p.poll() is None for p in others), "a worker left while a live claim was outstanding"
        assert stored() == N - held

        victim.send_signal(signal.SIGKILL)
        victim.wait(timeout=30)
        outputs = []
        for p in others:
            out, _ = p.communicate(timeout=120)
            outputs.append(out)
            assert p.returncode == 0, out
    finally:
        for p in (victim, *others):
            if p.poll() is None:
                p.kill()
                p.wait()
            if p.stdout is not None:
                p.stdout.close()

    try:
        with engine.connect() as conn:
            rows = conn.execute(
                select(embeddings.c.paper_id, embeddings.c.model_id, embeddings.c.content_hash).join(
                    papers, papers.c.id == embeddings.c.paper_id
                )
            ).all()
            hashes = dict(conn.execute(select(papers.c.id, papers.c.content_hash)).all())
            workers = {r.holder: r for r in conn.execute(select(embedding_workers)).all()}
            left = conn.execute(select(func.count()).select_from(embedding_claims)).scalar_one()
    finally:
        engine.dispose()

    # the victim ran on this host, so its batch was freed as soon as its pid was gone, not at its expiry
    freed = f"pid {victim.pid} on {socket.gethostname()} is no longer running: its {BATCH} claimed papers"
    assert any(freed in out for out in outputs), outputs
    assert not any("expired" in out for out in outputs), outputs

    # every paper: one vector, of the current model, for its current text
    assert len(rows) == N
    assert {r.paper_id for r in rows} == set(hashes)
    assert {r.model_id for r in rows} == {MODEL}
    assert all(r.content_hash == hashes[r.paper_id] for r in rows)
    assert left == 0  # no claim outlives the run

    # the ledger of commits: N papers committed in all, so none twice; the victim's two batches are its own
    assert sum(w.papers for w in workers.values()) == N
    (victim_row,) = [w for h, w in workers.items() if f":{victim.pid}:" in h]
    assert (victim_row.state, victim_row.papers, victim_row.batches) == ("embedding", 2 * BATCH, 2)
    assert sorted(w.state for w in workers.values() if w is not victim_row) == ["finished", "finished"]

    # what was embedded: the victim's uncommitted third batch twice (once by it, once by its taker),
    # everything else once
    by_text = {embedding_text(p.title, p.abstract): p.id for p in map(paper, range(N))}
    calls = _ledger(ledger)
    counts = collections.Counter(text for _, _, text in calls)
    assert set(counts) == set(by_text)
    blocked_batch = {text for pid, call, text in calls if pid == victim.pid and call == 3}
    assert len(blocked_batch) == BATCH
    assert {text for text, n in counts.items() if n > 1} == blocked_batch
    assert max(counts.values()) == 2
    redone_by = {pid for pid, _, text in calls if text in blocked_batch and pid != victim.pid}
    assert len(redone_by) == 1
    assert redone_by <= {p.pid for p in others}

    env = _env(url)
    data = _data_dir(url, tmp_path, 1)
    check = subprocess.run(
        [sys.executable, "-m", "paperfeed", "--data-dir", str(data), "check"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert check.returncode == 0, check.stdout + check.stderr
    status = subprocess.run(
        [sys.executable, "-m", "paperfeed", "--data-dir", str(data), "jobs", "status"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert status.returncode == 0, status.stderr
    text = " ".join(status.stdout.split())
    assert "embedding workers seen in the last 24 h: 3 (0 embedding now)" in text
    assert f"pid {victim.pid} on " in text
    assert "gone without finishing (its process ended), 20 papers in 2 batches" in text
    for p in others:
        assert f"pid {p.pid} on " in text
    assert text.count(": finished ") == 2
