"""A real SQLite store with a few papers, listings on the daily feed, vectors (the ``fake`` embedder) and a
reader with a personal API token; the MCP client of the SDK driving it over stdio and streamable HTTP."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import date
from pathlib import Path

import anyio
import httpx2
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from paperfeed.bootstrap import build_app
from paperfeed.domain.ingest import Batch
from paperfeed.domain.models import Listing, Paper
from paperfeed.settings import Settings
from tests.citations.conftest import HARVESTED, cite, links
from tests.library.conftest import add_user
from tests.support.fresh_python import checkout_env
from tests.support.live_server import live_server
from tests.support.papers import paper as make_paper

ROOT = Path(__file__).resolve().parents[2]


def _paper(pid: str, title: str, day: str, authors: tuple[str, ...], **extra: object) -> Paper:
    return make_paper(
        pid,
        title,
        day=day,
        updated=True,
        source=day,
        abstract=f"{title}. We study this with graph neural networks and diffusion; results improve.",
        authors=authors,
        categories=("cs.LG",),
        **extra,
    )


PAPERS = [
    _paper(
        "2503.00001",
        "Diffusion transformers for graphs",
        "2025-03-10",
        ("Ada Lovelace", "Alan Turing"),
        upvotes=12,
        github_repo="https://github.com/example/dtg",
    ),
    _paper("2503.00002", "Sparse attention for long documents", "2025-03-10", ("Grace Hopper",), upvotes=30),
    _paper(
        "2503.00003",
        "Graph diffusion as message passing",
        "2025-03-11",
        ("Ada Lovelace", "B", "C", "D", "E"),
        upvotes=3,
    ),
    _paper("2503.00004", "A survey of protein language models", "2025-03-12", ("Rosalind Franklin",)),
    _paper("hep-th/9901001", "An old-style string theory paper", "1999-01-04", ("Edward Witten",)),
]
LISTINGS = [
    Listing(date(2025, 3, 10), "2503.00002", "hf-daily", 30, rank=0),
    Listing(date(2025, 3, 10), "2503.00001", "hf-daily", 12, rank=1),
    Listing(date(2025, 3, 11), "2503.00003", "hf-daily", 3, rank=0),
]


@dataclass(frozen=True)
class Instance:
    settings: Settings
    token: str  # Ada's personal API token
    other_token: str  # Bob's


def settings_for(data_dir: Path, **extra: object) -> Settings:
    return Settings(data_dir=data_dir, database_url=None, embedding_backend="fake", **extra)  # type: ignore[arg-type]


@pytest.fixture(scope="session")
def instance(tmp_path_factory: pytest.TempPathFactory) -> Instance:
    """The store, built once: papers, listings, keyword index, vectors, a few citations, two readers
    with tokens."""
    settings = settings_for(tmp_path_factory.mktemp("mcp-data"))
    app = build_app(settings)
    try:
        app.indexes.keyword.on_papers_changed(
            app.core.store.apply_batch(Batch(papers=PAPERS, listings=LISTINGS))
        )
        app.indexes.keyword.flush()
        app.indexes.indexer.current().run()
        # two works cite 2503.00002 and 2503.00004 together: the similar tool says so
        edges = [cite(x, t) for x in ("doi:10.1/x1", "doi:10.1/x2") for t in ("2503.00002", "2503.00004")]
        app.catalogue.citations.save_links([links("2503.00002", edges)], harvested_at=HARVESTED)
        tokens = []
        for email, name in (("ada@example.org", "Ada"), ("bob@example.org", "Bob")):
            user = app.readers.accounts.user_by_id(add_user(app, email, name))
            assert user is not None
            tokens.append(app.readers.accounts.create_api_token(user, "mcp tests")[1])
    finally:
        app.close()
    return Instance(settings, tokens[0], tokens[1])


@pytest.fixture(scope="session")
def http_url(instance: Instance) -> Iterator[str]:
    """The web app under a real uvicorn on loopback; its MCP endpoint."""
    with live_server(instance.settings) as url:
        yield f"{url}/mcp"


@pytest.fixture(scope="session")
def private_url(instance: Instance) -> Iterator[str]:
    """The same store served with PAPERFEED_MCP_REQUIRE_TOKEN (a private instance)."""
    with live_server(instance.settings.model_copy(update={"mcp_require_token": True})) as url:
        yield f"{url}/mcp"


@asynccontextmanager
async def http_client(url: str, token: str | None = None) -> AsyncIterator[Client]:
    """The SDK's client over streamable HTTP, with ``Authorization: Bearer token`` when given."""
    headers = {"Authorization": f"Bearer {token}"} if token is not None else {}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=60) as http,
        Client(streamable_http_client(url, http_client=http), cache=None) as client,
    ):
        yield client


def stdio_params(instance: Instance, *args: str, token: str | None = None) -> StdioServerParameters:
    """``python -m paperfeed mcp ARGS`` on the test store, this worktree's code first."""
    env = checkout_env()
    env["PAPERFEED_DATA_DIR"] = str(instance.settings.data_dir)
    env["PAPERFEED_EMBEDDING_BACKEND"] = "fake"
    if token is not None:
        env["PAPERFEED_MCP_TOKEN"] = token
    return StdioServerParameters(
        command=sys.executable, args=["-m", "paperfeed", "mcp", *args], env=env, cwd=str(ROOT)
    )


@asynccontextmanager
async def stdio_client(instance: Instance, *args: str, token: str | None = None) -> AsyncIterator[Client]:
    async with Client(stdio_params(instance, *args, token=token), cache=None) as client:
        yield client


def run_async(main: Callable[[], Awaitable[None]]) -> None:
    """Run ``main`` in its own event loop on a fresh thread.

    Playwright's sync API (the session-scoped browser of the page tests) keeps an asyncio loop running in
    the main thread for the rest of the session, and ``anyio.run`` refuses to start inside it, so an MCP
    test collected after a browser test would fail for a reason that has nothing to do with MCP.
    """
    with ThreadPoolExecutor(max_workers=1) as pool:
        pool.submit(anyio.run, main).result()
