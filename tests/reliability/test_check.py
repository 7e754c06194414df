"""``paperfeed check [--repair]`` on real data folders (and a PostgreSQL database) damaged on purpose,
and the corrupt/missing vector index: detected, search falls back to keyword through the web app, and
``paperfeed index --rebuild`` restores it."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

import orjson
import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from paperfeed.bootstrap import build_app
from paperfeed.cli import cli_app as cli
from paperfeed.settings import Settings
from paperfeed.web import create_app
from paperfeed.web.rendering import PARTIAL_SEARCH_SECONDS

from .corpus import write_jsonl

ENV = {"PAPERFEED_EMBEDDING_BACKEND": "fake"}


def run(data: Path, *args: str, url: str | None = None) -> tuple[int, str]:
    base = ["--data-dir", str(data)] + (["--database-url", url] if url else [])
    result = CliRunner().invoke(cli, [*base, *args], env=ENV)
    return result.exit_code, " ".join((result.stdout + result.stderr).split())


def report(data: Path, url: str | None = None) -> dict[str, object]:
    code, _ = run(data, "check", url=url)
    result = CliRunner().invoke(
        cli, ["--data-dir", str(data), *(["--database-url", url] if url else []), "check", "--json"], env=ENV
    )
    found: dict[str, object] = orjson.loads(result.stdout)
    assert (code == 0) == found["ok"]
    return found


def problems(found: dict[str, object]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for probe in found["probes"]:  # type: ignore[attr-defined]
        out[probe["area"]] = [f["said"] for f in probe["findings"]]  # "1 paper …", "2 papers …"
    return {k: v for k, v in out.items() if v}


@pytest.fixture
def data(tmp_path: Path) -> Path:
    """A data folder with 30 imported and embedded papers (tantivy keyword index, exact vector index)."""
    folder = tmp_path / "data"
    assert run(folder, "import", str(write_jsonl(tmp_path / "a.jsonl", range(1, 31))))[0] == 0
    assert run(folder, "index")[0] == 0
    return folder


def latest_generation(data: Path) -> Path:
    return sorted((data / "vectors").glob("gen-*"))[-1]


def test_a_fresh_folder_is_consistent(data: Path) -> None:
    code, out = run(data, "check")
    assert code == 0, out
    assert "store ok 30 papers" in out
    assert "keyword ok 30 documents (tantivy)" in out
    assert "embeddings ok 30 vectors of fake-hash64" in out
    assert "consistent" in out


def test_damage_everywhere_is_reported_then_repaired(data: Path, tmp_path: Path) -> None:
    # A paper deleted behind paperfeed's back (no cascade: foreign keys are off in a plain connection),
    # a vector of old text, a change the keyword index never saw, and a vector index of other content.
    with sqlite3.connect(data / "paperfeed.db") as conn:
        conn.execute("DELETE FROM papers WHERE id = '2501.00003'")
        conn.execute("UPDATE embeddings SET content_hash = 'x' WHERE paper_id = '2501.00004'")
        conn.execute("UPDATE papers SET modified_at = '2099-01-01 00:00:00.000000' WHERE id = '2501.00005'")
    found = problems(report(data))
    assert found == {
        "keyword": [
            "1 keyword document of papers that are not in the store",
            "1 paper changed since it was indexed",
        ],
        "embeddings": [
            "1 vector made from an older version of the paper's text",
            "1 vector of papers that are not in the store",
        ],
        "vector index": ["1 vector index entry with no stored vector"],
        # the deleted paper's sentences are still in evidence search's sentence indexes
        "sentence keyword index (tantivy)": ["2 sentences indexed (60) differ from those stored (58)"],
        "sentence vector index": ["2 sentences indexed (60) differ from those stored (58)"],
    }
    code, out = run(data, "check", "--repair")
    assert code == 1  # problems were found ...
    assert "7 problems found and repaired; the re-check is clean" in out  # ... and all repaired
    assert "repair: deleted 1 vector of deleted papers" in out
    assert "repair: embedded 1 paper that had no current vector" in out
    code, out = run(data, "check")
    assert code == 0, out
    assert "store ok 29 papers" in out
    assert "keyword ok 29 documents" in out


def test_missing_and_stale_vectors_in_the_index(data: Path, tmp_path: Path) -> None:
    # New text for five papers: the embeddings go stale; index them but keep the old vector index.
    assert run(data, "import", str(write_jsonl(tmp_path / "b.jsonl", range(1, 6), revision=1)))[0] == 0
    assert problems(report(data)) == {
        "embeddings": ["5 vectors made from an older version of the paper's text"]
    }
    old = latest_generation(data)
    saved = {p.name: p.read_bytes() for p in old.iterdir()}
    manifest = (data / "vectors" / "manifest.json").read_bytes()
    assert run(data, "index")[0] == 0
    assert report(data)["ok"]
    # Put the old generation back as the current one: its five vectors are of the old text.
    for name, blob in saved.items():
        (old / name).write_bytes(blob)
    (data / "vectors" / "manifest.json").write_bytes(manifest)
    assert problems(report(data)) == {"vector index": ["5 vectors in the index differ from the stored ones"]}
    _code, out = run(data, "check", "--repair")
    assert "vector index rebuilt from the stored vectors (30 vectors)" in out
    assert run(data, "check")[0] == 0


def test_keyword_index_deleted_or_damaged_is_rebuilt(data: Path) -> None:
    for item in (data / "keyword").iterdir():
        if item.suffix in (".idx", ".term", ".store", ".pos", ".fieldnorm", ".fast"):
            item.write_bytes(b"garbage")
    found = problems(report(data))
    assert list(found) == ["keyword"]
    assert found["keyword"][0].startswith("30 keyword index files are damaged")
    _code, out = run(data, "check", "--repair")
    assert "keyword index rebuilt from the store (30 papers)" in out
    assert run(data, "check")[0] == 0
    (data / "keyword" / "state.json").unlink()
    assert problems(report(data)) == {
        "keyword": [f"30 keyword index is of another version or never completed ({data / 'keyword'})"]
    }
    run(data, "check", "--repair")
    assert run(data, "check")[0] == 0


def test_a_corrupt_vector_index_falls_back_to_keyword_search_until_rebuilt(data: Path) -> None:
    settings = Settings(data_dir=data, database_url=None, embedding_backend="fake")
    with TestClient(create_app(lambda: build_app(settings))) as client:
        reply = client.get("/api/papers/search", params={"q": "dark matter halo"})
        assert reply.status_code == 200
        assert "X-Search-Notes" not in reply.headers
        healthy = [item["paper"]["id"] for item in reply.json()]
    vectors = latest_generation(data) / "vectors.npy"
    vectors.write_bytes(vectors.read_bytes()[:200])  # truncated, as by a full disk
    code, out = run(data, "check")
    assert code == 1
    assert "vector index is unreadable" in out
    assert "truncated or corrupt" in out
    with TestClient(create_app(lambda: build_app(settings))) as client:  # a server started now
        reply = client.get("/api/papers/search", params={"q": "dark matter halo"})
        assert reply.status_code == 200
        assert "semantic search is unavailable" in reply.headers["X-Search-Notes"]
        keyword_only = [item["paper"]["id"] for item in reply.json()]
        assert keyword_only
        assert set(keyword_only) <= set(healthy)
        page = client.get("/search", params={"q": "dark matter halo"}, headers={"accept": "text/html"})
        assert page.status_code == 200
        code, out = run(data, "index", "--rebuild")
        assert code == 0, out
        assert "vector index: 30 vectors (full update, 30 written)" in out
        # same server: an anonymous copy of the degraded answer is shared for PARTIAL_SEARCH_SECONDS at most
        reply = client.get("/api/papers/search", params={"q": "dark matter halo"})
        if "X-Search-Notes" in reply.headers:
            assert reply.headers["x-paperfeed-cache"] == "hit", "only a kept copy may still be degraded"
            time.sleep(PARTIAL_SEARCH_SECONDS + 0.1)
            reply = client.get("/api/papers/search", params={"q": "dark matter halo"})
        assert reply.status_code == 200
        assert "X-Search-Notes" not in reply.headers
    assert run(data, "check")[0] == 0


def test_a_missing_vector_index_is_reported_and_rebuilt(data: Path) -> None:
    import shutil

    shutil.rmtree(data / "vectors")
    assert problems(report(data)) == {"vector index": [f"30 vector index is missing ({data / 'vectors'})"]}
    _code, out = run(data, "index")  # the plain run notices the missing index too
    assert "vector index: 30 vectors (full update, 30 written)" in out
    assert run(data, "check")[0] == 0


def test_keyword_rebuild_command(data: Path) -> None:
    code, out = run(data, "index", "--keyword")
    assert code == 0, out
    assert "keyword index rebuilt: 30 papers (tantivy)" in out


@pytest.mark.postgres
def test_check_and_repair_on_postgresql(pg_url: str, tmp_path: Path) -> None:
    data = tmp_path / "data"
    assert run(data, "import", str(write_jsonl(tmp_path / "a.jsonl", range(1, 21))), url=pg_url)[0] == 0
    assert run(data, "index", url=pg_url)[0] == 0
    code, out = run(data, "check", url=pg_url)
    assert code == 0, out
    assert "keyword ok 20 documents (postgres)" in out
    assert "(pgvector)" in out
    from sqlalchemy import create_engine, text

    engine = create_engine(pg_url.replace("postgresql://", "postgresql+psycopg://", 1))
    try:
        with engine.begin() as conn:
            conn.execute(text("SET LOCAL session_replication_role = replica"))  # the trigger would refill it
            conn.execute(text("UPDATE papers SET search_tsv = NULL WHERE id = '2501.00001'"))
            conn.execute(text("DELETE FROM vector_index WHERE paper_id = '2501.00002'"))
            conn.execute(text("UPDATE embeddings SET content_hash = 'x' WHERE paper_id = '2501.00003'"))
    finally:
        engine.dispose()
    found = problems(report(data, pg_url))
    assert found["keyword"] == ["1 paper without a search document"]
    assert found["embeddings"] == ["1 vector made from an older version of the paper's text"]
    assert "1 vector missing from the vector index" in found["vector index"]
    code, out = run(data, "check", "--repair", url=pg_url)
    assert "the re-check is clean" in out, out
    assert run(data, "check", url=pg_url)[0] == 0


def test_fts5_engine_queue_and_content_checks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(ENV, "PAPERFEED_KEYWORD_ENGINE", "fts5")
    data = tmp_path / "data"
    assert run(data, "import", str(write_jsonl(tmp_path / "a.jsonl", range(1, 21))))[0] == 0
    code, out = run(data, "check")
    assert code == 0, out
    assert "keyword ok 20 documents (fts5)" in out
    with sqlite3.connect(data / "paperfeed.db") as conn:  # a change queued, never applied
        conn.execute("UPDATE papers SET title = 'Changed behind its back' WHERE id = '2501.00002'")
    assert problems(report(data)) == {"keyword": ["1 change queued but not yet in the keyword index"]}
    with sqlite3.connect(data / "paperfeed.db") as conn:  # the queue lost: content differs
        conn.execute("DELETE FROM papers_fts_queue")
    found = problems(report(data))
    assert found["keyword"][0].startswith("1 keyword index content differs from the papers")
    _code, out = run(data, "check", "--repair")
    assert "keyword index (FTS5) rebuilt from the store" in out
    assert run(data, "check")[0] == 0
