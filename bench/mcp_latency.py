"""MCP tool latency over streamable HTTP: ``search_papers`` and ``get_paper`` against the web app's ``/mcp``.

The real Hugging Face Daily Papers (../shared/data/hf_daily.jsonl.gz, ~10.6k papers) are imported once into
a cached data folder and keyword-indexed; the app is served by uvicorn on loopback (one worker) and the
MCP SDK's own client calls each tool ``--calls`` times (after a warm-up), one call at a time, as an agent
would. The figure is the round trip a client sees: JSON-RPC over HTTP, token-free, tool body, answer.
Dense search uses ``--backend`` (default ``fake``: the MCP path without model time; ``torch`` adds the
query embedding).

    nice -n 10 .venv/bin/python bench/mcp_latency.py [--calls 200] [--backend fake]
        [--data-dir /work/bench-cache/mcp-data]
"""

from __future__ import annotations

import argparse
import random
import socket
import statistics
import sys
import threading
import time
from pathlib import Path

import anyio
import uvicorn
from mcp import Client

from bench.vector_cache import CACHE_ROOT, SHARED
from paperfeed.adapters.embed.cpu import cpu_info
from paperfeed.adapters.sources.jsonl_file import JsonlFileSource
from paperfeed.bootstrap import build_app
from paperfeed.settings import Settings
from paperfeed.web import create_app

QUERIES = [
    "diffusion models for video generation",
    "large language model reasoning",
    'author:"Yann LeCun"',
    "cat:cs.CV segmentation",
    "reinforcement learning from human feedback",
    "mixture of experts year:2024",
    '"chain of thought" -survey',
    "graph neural networks",
    "speech recognition low resource",
    "retrieval augmented generation after:2023",
    "protein structure prediction",
    "vision transformer efficient attention",
    "quantization of LLMs",
    "text to 3D",
    "robot manipulation policy",
    "benchmark for code generation",
]


def prepare(data_dir: Path, backend: str) -> tuple[Settings, list[str]]:
    settings = Settings(data_dir=data_dir, database_url=None, embedding_backend=backend)  # type: ignore[arg-type]
    app = build_app(settings)
    try:
        if not app.catalogue.feeds.papers_page(None, 1).items:
            started = time.perf_counter()
            app.sources.ingest.run(
                JsonlFileSource(SHARED / "data" / "hf_daily.jsonl.gz", batch_size=app.settings.batch_size)
            )
            print(f"imported the HF daily papers in {time.perf_counter() - started:.0f} s", flush=True)
        app.indexes.keyword  # noqa: B018 - opening it brings it up to date
        ids = [p.id for p in app.catalogue.feeds.papers_page(None, 100).items]
        ids += [i.paper.id for i in app.catalogue.feeds.recent(limit=100)]
    finally:
        app.close()
    return settings, ids


def percentiles(samples: list[float]) -> str:
    cuts = statistics.quantiles(samples, n=10)
    return (
        f"p50 {statistics.median(samples) * 1000:6.1f} ms   p90 {cuts[8] * 1000:6.1f} ms   (n={len(samples)})"
    )


async def measure(url: str, ids: list[str], calls: int) -> dict[str, list[float]]:
    rng = random.Random(7)
    out: dict[str, list[float]] = {"search_papers": [], "get_paper": []}
    async with Client(url, cache=None) as client:
        for i in range(calls + 10):  # the first 10 warm up caches and the connection
            for tool, arguments in (
                ("search_papers", {"query": QUERIES[i % len(QUERIES)], "limit": 10}),
                ("get_paper", {"paper_id": rng.choice(ids)}),
            ):
                started = time.perf_counter()
                result = await client.call_tool(tool, arguments)
                took = time.perf_counter() - started
                if result.is_error:
                    raise SystemExit(f"{tool}{arguments} failed: {result.content}")
                if i >= 10:
                    out[tool].append(took)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--backend", default="fake")
    parser.add_argument("--data-dir", type=Path, default=CACHE_ROOT / "mcp-data")
    args = parser.parse_args()
    settings, ids = prepare(args.data_dir, args.backend)
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    settings = settings.model_copy(update={"base_url": f"http://127.0.0.1:{port}"})
    server = uvicorn.Server(
        uvicorn.Config(create_app(lambda: build_app(settings)), log_level="warning", lifespan="on")
    )
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.05)
    try:
        results = anyio.run(measure, f"http://127.0.0.1:{port}/mcp", ids, args.calls)
    finally:
        server.should_exit = True
        thread.join(timeout=10)
    print(f"CPU: {cpu_info().describe()}")
    print(f"python {sys.version.split()[0]}, backend {args.backend}, 1 uvicorn worker, client on this host")
    for tool, samples in results.items():
        print(f"{tool:14} {percentiles(samples)}")


if __name__ == "__main__":
    main()
