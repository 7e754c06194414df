"""Two web nodes on one PostgreSQL database, each with its own tantivy and faiss indexes in its own data
folder: a paper written through node A is found by keyword search on node B within seconds, because B's
index follower (services/index_follow.py) catches its indexes up with the database. Real ``paperfeed
serve`` processes, a real throwaway PostgreSQL."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient

from paperfeed.adapters.store.embeddings import SqlEmbeddingStore
from paperfeed.adapters.vector.marks import FolderMarks
from paperfeed.bootstrap import App, build_app
from paperfeed.domain.ingest import Batch
from paperfeed.domain.models import Paper
from paperfeed.settings import Settings
from paperfeed.web import create_app
from tests.keyword.sources import ListSource
from tests.support.papers import paper as make_paper

pytestmark = pytest.mark.postgres

CATCH_UP_SECONDS = 15.0  # the follower looks every 0.5 s; a loaded CI machine gets slack, not a pass


def _node_settings(data_dir: Path, url: str) -> dict[str, str]:
    return {
        "PAPERFEED_DATA_DIR": str(data_dir),
        "PAPERFEED_DATABASE_URL": url,
        "PAPERFEED_KEYWORD_ENGINE": "tantivy",
        "PAPERFEED_VECTOR_INDEX": "local",
        "PAPERFEED_EMBEDDING_BACKEND": "fake",
        "PAPERFEED_INDEX_FOLLOW_SECONDS": "0.5",
        # the reader's view of the index, not of the page cache: without this a search B answered before
        # its index caught up may be reused for the import grace (60 s, the documented lag of a new paper)
        "PAPERFEED_PAGE_CACHE_IMPORT_GRACE_SECONDS": "0",
        "PAPERFEED_SECRET_KEY": "two-nodes-test-secret-" + "x" * 40,
    }


def _app(data_dir: Path, url: str) -> App:
    return build_app(
        Settings(
            data_dir=data_dir,
            database_url=url,
            keyword_engine="tantivy",
            vector_index="local",
            embedding_backend="fake",
        )
    )


def _paper(pid: str, title: str) -> Paper:
    return make_paper(
        pid,
        title,
        day="2025-03-01",
        abstract=f"{title}. We study it carefully.",
        authors=("Ada Lovelace",),
        categories=("cs.LG",),
    )


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _serve(data_dir: Path, url: str, log: Path) -> tuple[subprocess.Popen[bytes], str]:
    port = _free_port()
    env = {**os.environ, **_node_settings(data_dir, url), "PAPERFEED_BASE_URL": f"http://127.0.0.1:{port}"}
    with log.open("wb") as out:
        server = subprocess.Popen(
            [sys.executable, "-m", "paperfeed", "serve", "--port", str(port), "--log-level", "warning"],
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    return server, f"http://127.0.0.1:{port}"


def _wait_up(server: subprocess.Popen[bytes], base: str, log: Path) -> None:
    deadline = time.monotonic() + 90
    while True:
        try:
            if httpx.get(f"{base}/api/papers/2503.00001", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        if server.poll() is not None or time.monotonic() > deadline:
            pytest.fail(f"paperfeed serve did not start: {log.read_text()[-3000:]}")
        time.sleep(0.2)


def _found(base: str, query: str) -> list[str]:
    answer = httpx.get(f"{base}/api/papers/search", params={"q": query, "limit": 10}, timeout=10)
    assert answer.status_code == 200, answer.text
    return [item["paper"]["id"] for item in answer.json()]


@pytest.fixture
def two_nodes(tmp_path: Path, pg_url: str) -> Iterator[tuple[str, str, Path, Path, str]]:
    node_a, node_b = tmp_path / "node-a", tmp_path / "node-b"
    seed = _app(node_a, pg_url)
    try:
        seed.sources.ingest.run(
            ListSource([Batch(papers=[_paper("2503.00001", "Seed paper on galaxy clusters")])])
        )
        seed.indexes.indexer.current().run()
    finally:
        seed.close()
    servers = []
    try:
        a, base_a = _serve(node_a, pg_url, tmp_path / "a.log")
        servers.append(a)
        b, base_b = _serve(node_b, pg_url, tmp_path / "b.log")
        servers.append(b)
        _wait_up(a, base_a, tmp_path / "a.log")
        _wait_up(b, base_b, tmp_path / "b.log")
        yield base_a, base_b, node_a, node_b, pg_url
    finally:
        for server in servers:
            server.terminate()
            try:
                server.wait(timeout=20)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait()


def test_a_paper_written_through_node_a_is_found_on_node_b_within_seconds(
    two_nodes: tuple[str, str, Path, Path, str],
) -> None:
    base_a, base_b, node_a, node_b, url = two_nodes
    # node B started with an empty data folder: its cold start built its own indexes from the database
    assert (node_b / "keyword" / "meta.json").exists()
    assert (node_b / "vectors").is_dir()
    assert "2503.00001" in _found(base_b, "galaxy clusters")

    # an import with node A's settings (its data folder, its indexes), as `paperfeed import` on A does
    writer = _app(node_a, url)
    try:
        new = _paper("2503.00002", "Quokkaroo migration tracked by satellites")
        writer.sources.ingest.run(ListSource([Batch(papers=[new])]))
        written = time.monotonic()
        assert "2503.00002" in _found(base_a, "quokkaroo")  # A's own index took it with the import
        while "2503.00002" not in _found(base_b, "quokkaroo"):
            assert time.monotonic() - written < CATCH_UP_SECONDS, "node B's keyword index did not catch up"
            time.sleep(0.2)

        # embedding on A (the indexer runs on one node) reaches B's own faiss index by its watermark
        writer.indexes.indexer.current().run()
        newest = SqlEmbeddingStore(writer.core.store.engine).newest(
            writer.indexes.embedders.current().model_id
        )
        assert newest is not None
        marks = FolderMarks(node_b / "vector-marks.json")
        embedded = time.monotonic()
        while marks.get_mark(f"vector-index:{writer.indexes.embedders.current().model_id}") != newest:
            assert time.monotonic() - embedded < CATCH_UP_SECONDS, "node B's vector index did not catch up"
            time.sleep(0.2)
    finally:
        writer.close()


def _ids(answer: Any) -> list[str]:  # TestClient's response class is not httpx's
    assert answer.status_code == 200, answer.text
    return [item["paper"]["id"] for item in answer.json()]


def test_a_search_answered_before_the_nodes_index_caught_up_is_not_kept_as_current(
    tmp_path: Path, pg_url: str
) -> None:
    """The race the two-process test above met now and then, made certain: another node's write reaches
    the database (so the data version moves), this node answers a search before its follower's next look
    (so without the paper), and that answer must not be reused once the index has the paper. The page
    cache's version includes the node's index state for this (``App.page_version``)."""
    node_a, node_b = tmp_path / "node-a", tmp_path / "node-b"
    seed = _app(node_a, pg_url)
    try:
        seed.sources.ingest.run(
            ListSource([Batch(papers=[_paper("2503.00001", "Seed paper on galaxy clusters")])])
        )
    finally:
        seed.close()
    settings_b = Settings(
        data_dir=node_b,
        database_url=pg_url,
        keyword_engine="tantivy",
        vector_index="local",
        embedding_backend="fake",
        index_follow_seconds=0,  # no follower thread: this test says when node B looks
        page_cache_check_seconds=0,  # the version is read at every request
        page_cache_import_grace_seconds=0,  # the version's change, not a grace, decides
    )
    built: list[App] = []

    def build() -> App:
        built.append(build_app(settings_b))
        return built[-1]

    search = "/api/papers/search"
    with TestClient(create_app(build)) as node_b_site:
        assert _ids(node_b_site.get(search, params={"q": "galaxy clusters"})) == ["2503.00001"]
        writer = _app(node_a, pg_url)
        try:
            writer.sources.ingest.run(
                ListSource([Batch(papers=[_paper("2503.00002", "Quokkaroo tracked at sea")])])
            )
        finally:
            writer.close()
        early = node_b_site.get(search, params={"q": "quokkaroo"})
        assert _ids(early) == [], "node B has not looked since the write: its index lacks the paper"
        assert early.headers["x-paperfeed-cache"] == "miss"
        assert node_b_site.get(search, params={"q": "quokkaroo"}).headers["x-paperfeed-cache"] == "hit"

        keyword = built[0].indexes.keyword.opened()  # the engine's index (the wing holds it lazily)
        assert hasattr(keyword, "follow_store")
        assert keyword.follow_store() >= 1  # the follower's next look takes the paper in

        late = node_b_site.get(search, params={"q": "quokkaroo"})
        assert _ids(late) == ["2503.00002"], late.headers.get("x-paperfeed-cache")
        assert late.headers["x-paperfeed-cache"] == "miss"
