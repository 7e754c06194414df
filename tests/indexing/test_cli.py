"""``paperfeed index`` end to end: messages, model change, limits, clean errors; the real model offline."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from paperfeed.adapters.embed.fake import FakeEmbedder
from paperfeed.adapters.store import open_store
from paperfeed.adapters.vector import open_vector_index
from paperfeed.cli import cli_app as app
from paperfeed.domain.search import SearchFilters, VectorIndexMismatch

from .conftest import add_papers, paper


def _data_dir(tmp_path: Path, n: int) -> Path:
    data = tmp_path / "data"
    data.mkdir()
    store = open_store(f"sqlite+pysqlite:///{data / 'paperfeed.db'}")
    try:
        add_papers(store, [paper(i) for i in range(n)])
    finally:
        store.close()
    return data


def _index(data: Path, *args: str, **env: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(
        app, ["--data-dir", str(data), "index", *args], env={"PAPERFEED_EMBEDDING_BACKEND": "fake", **env}
    )
    return result.exit_code, " ".join(result.stdout.split()), " ".join(result.stderr.split())


def test_index_then_model_change(tmp_path: Path) -> None:
    data = _data_dir(tmp_path, 12)
    code, out, _ = _index(data, "--limit", "5", "--batch-size", "2")
    assert code == 0
    assert "embedding 12 papers with fake-hash64 (0 already up to date)" in out
    assert "this run embeds at most 5 of them" in out
    assert "embedded 5 papers (5 new, 0 re-embedded" in out
    assert "7 papers still to embed: run paperfeed index again" in out
    code, out, _ = _index(data)
    assert code == 0
    assert "embedded 7 papers (7 new, 0 re-embedded" in out
    code, out, _ = _index(data)
    assert "all 12 papers are embedded with fake-hash64" in out
    code, out, _ = _index(data, PAPERFEED_EMBEDDING_MODEL="specter")
    assert code == 0
    assert "model changed from fake-hash64 to specter-hash64: re-embedding 12 papers" in out
    assert "embedded 12 papers (0 new, 12 re-embedded" in out
    with sqlite3.connect(data / "paperfeed.db") as conn:
        assert conn.execute("SELECT model_id, count(*) FROM embeddings GROUP BY 1").fetchall() == [
            ("specter-hash64", 12)
        ]


def test_the_real_vector_index_follows_the_embeddings(tmp_path: Path) -> None:
    data = _data_dir(tmp_path, 10)
    code, out, _ = _index(data)
    assert code == 0
    assert "vector index: 10 vectors (full update, 10 written)" in out
    index = open_vector_index(data / "vectors", kind="auto", model_id="fake-hash64", dimension=64)
    query = FakeEmbedder(64).embed(["dark matter halo simulations"])[0]
    assert {h.paper_id for h in index.search(query, 2)} == {"2501.00002", "2501.00007"}
    assert {h.paper_id for h in index.search(query, 3, SearchFilters(categories=("cs.LG",)))} <= {
        f"2501.{i:05d}" for i in range(1, 10, 2)
    }
    code, out, _ = _index(data)
    assert "vector index: 10 vectors (incremental update, 0 written)" in out
    code, out, _ = _index(data, PAPERFEED_EMBEDDING_MODEL="other")
    assert "vector index: 10 vectors (full update, 10 written)" in out
    with pytest.raises(VectorIndexMismatch):
        open_vector_index(data / "vectors", kind="auto", model_id="fake-hash64", dimension=64)
    again = open_vector_index(data / "vectors", kind="auto", model_id="other-hash64", dimension=64)
    assert len(again) == 10


def test_rebuild(tmp_path: Path) -> None:
    data = _data_dir(tmp_path, 3)
    assert _index(data)[0] == 0
    code, out, _ = _index(data, "--rebuild")
    assert code == 0
    assert "rebuilding: re-embedding all 3 papers with fake-hash64" in out
    assert "embedded 3 papers (3 new, 0 re-embedded" in out


def test_bad_configuration_is_one_clean_line(tmp_path: Path) -> None:
    data = _data_dir(tmp_path, 1)
    code, _, err = _index(data, PAPERFEED_EMBEDDING_BACKEND="tensorflow")
    assert code == 2
    assert err.startswith("error: invalid settings: PAPERFEED_EMBEDDING_BACKEND")
    code, _, err = _index(
        data, PAPERFEED_EMBEDDING_BACKEND="torch", PAPERFEED_EMBEDDING_MODEL=str(tmp_path / "missing")
    )
    assert code == 2
    assert err.replace(" ", "") == f"error:{tmp_path / 'missing'}:nosuchmodelfolder"  # rich may wrap the path
    code, _, err = _index(data, "--batch-size", "0")
    assert code == 2


@pytest.mark.slow  # a second process loading torch: ~10 s on an idle machine
def test_real_model_indexes_offline_from_the_package(tmp_path: Path) -> None:
    """The torch backend, as a user runs it: no HF_HUB_OFFLINE set, and any network attempt would fail."""
    data = _data_dir(tmp_path, 3)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "TRANSFORMERS_"))}
    dead = "http://127.0.0.1:9"  # discard port: a download attempt fails at once instead of hanging
    env.update(
        HTTP_PROXY=dead,
        HTTPS_PROXY=dead,
        http_proxy=dead,
        https_proxy=dead,
        HF_HOME=str(tmp_path / "hf"),  # an empty cache: the model can only come from the package
        PAPERFEED_EMBEDDING_BACKEND="torch",
        PAPERFEED_EMBEDDING_THREADS="1",
    )
    cmd = [sys.executable, "-m", "paperfeed", "--data-dir", str(data), "index"]
    result = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    assert "embedded 3 papers" in result.stdout
    with sqlite3.connect(data / "paperfeed.db") as conn:
        rows = conn.execute("SELECT model_id, vector FROM embeddings").fetchall()
    assert {m for m, _ in rows} == {"all-MiniLM-L6-v2"}
    vectors = np.array([np.frombuffer(v, dtype="<f4") for _, v in rows])
    assert vectors.shape == (3, 384)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)


def test_no_vector_index_stores_the_vectors_and_leaves_the_index_alone(tmp_path: Path) -> None:
    """An embedding worker whose nodes keep their own index: vectors in the store, no index built here;
    a later plain run builds it from the stored vectors without embedding anything again."""
    data = _data_dir(tmp_path, 9)
    code, out, _ = _index(data, "--no-vector-index", "--no-sentences")
    assert code == 0
    assert "embedded 9 papers (9 new, 0 re-embedded" in out
    assert "vector index: not updated (--no-vector-index): the vectors are in the database" in out
    assert not (data / "vectors").exists()
    code, out, _ = _index(data, "--no-sentences")
    assert code == 0
    assert "all 9 papers are embedded with fake-hash64" in out
    assert "vector index: 9 vectors (full update, 9 written)" in out
    code, _, err = _index(data, "--no-vector-index", "--follow")
    assert code == 2  # a usage error, as --workers with --follow
    assert "--no-vector-index applies to embedding a backlog once: not with --follow or --keyword" in err
