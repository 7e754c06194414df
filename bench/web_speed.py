"""Web speed on ~185k papers: server-side latency per page and requests/s under 16 concurrent clients.

The three real files of ../shared/data are imported once (by the real import code) into a cached data
folder outside the repo; then ``paperfeed serve`` runs in a subprocess on a loopback port and this script
is its client:

1. latency: one client, requests spread over many days / papers / queries; the server-side time of
   each is its ``Server-Timing: app;dur=`` header (so client and network overhead are excluded);
   p50 and p99 per endpoint, API and HTML pages;
2. throughput: ``--concurrency`` clients (httpx, asyncio, keep-alive) hammer the day page and search for
   ``--seconds`` each; requests/s and errors.

Goals: p50 ≤ 15 ms for day and paper pages, ≤ 30 ms for search; no errors.

    .venv/bin/python bench/web_speed.py [--data-dir /work/bench-cache/web-data] [--requests 200]
        [--concurrency 16] [--seconds 10] [--workers 1]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import re
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote

import httpx
from sqlalchemy import func, select

from paperfeed.adapters.sources.jsonl_file import JsonlFileSource
from paperfeed.adapters.store.schema import listings, papers
from paperfeed.bootstrap import build_app
from paperfeed.settings import Settings

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data"
FILES = ["hf_daily.jsonl.gz", "arxiv_cats.jsonl.gz", "arxiv_oai_2007_2017_sample100k.jsonl.gz"]
DEFAULT_DIR = Path("/work/bench-cache/web-data")
READY = ".web-speed-ready"
QUERIES = [
    "diffusion transformer",
    "large language model reasoning",
    "vision language model",
    "reinforcement learning from human feedback",
    "graph neural network",
    "quantum error correction",
    "dark matter halo",
    "image segmentation",
    "speech recognition",
    "protein structure prediction",
    "mixture of experts",
    "retrieval augmented generation",
    "black hole entropy",
    "video generation",
    "code generation benchmark",
    '"attention is all you need"',
    "neutrino oscillation",
    "federated learning privacy",
    "3d gaussian splatting",
    "topological insulator",
]
_TIMING = re.compile(r"app;dur=([0-9.]+)")


def ensure_data(data_dir: Path) -> None:
    """Import the three files once; a marker file says the folder is complete."""
    if (data_dir / READY).exists():
        return
    print(f"importing {', '.join(FILES)} into {data_dir} (once) ...", flush=True)
    app = build_app(Settings(data_dir=data_dir))
    started = time.perf_counter()
    try:
        for name in FILES:
            summary = app.sources.ingest.run(
                JsonlFileSource(SHARED / name, batch_size=app.settings.batch_size)
            )
            print(f"  {name}: {summary.added:,} added, {summary.rejected:,} rejected", flush=True)
        app.indexes.keyword  # noqa: B018 - open (and so bring up to date) the keyword index now
    finally:
        app.close()
    (data_dir / READY).write_text("ok\n")
    print(f"  done in {time.perf_counter() - started:.0f} s", flush=True)


@dataclass
class Inputs:
    days: list[str]
    ids: list[str]
    queries: list[str]
    papers: int


def sample_inputs(data_dir: Path, rng: random.Random) -> Inputs:
    app = build_app(Settings(data_dir=data_dir))
    try:
        with app.core.store.engine.connect() as conn:
            days = [str(d)[:10] for d in conn.execute(select(listings.c.day).distinct()).scalars()]
            count = conn.execute(select(func.count()).select_from(papers)).scalar_one()
            # ids spread over the whole table: every paper equally likely
            offsets = sorted(rng.sample(range(count), min(400, count)))
            ids = [
                conn.execute(select(papers.c.id).order_by(papers.c.id).offset(o).limit(1)).scalar_one()
                for o in offsets
            ]
    finally:
        app.close()
    rng.shuffle(ids)
    return Inputs(days=days, ids=ids, queries=QUERIES, papers=count)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def start_server(data_dir: Path, port: int, workers: int) -> subprocess.Popen[bytes]:
    cmd = [sys.executable, "-m", "paperfeed", "--data-dir", str(data_dir), "serve", "--host", "127.0.0.1"]
    cmd += ["--port", str(port), "--workers", str(workers), "--log-level", "warning"]
    cmd += ["--base-url", f"http://127.0.0.1:{port}"]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"server exited: {proc.stderr.read().decode()[-2000:] if proc.stderr else ''}")
        try:
            if httpx.get(f"http://127.0.0.1:{port}/api/daily_papers?limit=1", timeout=2).status_code == 200:
                return proc
        except httpx.HTTPError:
            pass
        time.sleep(0.3)
    proc.kill()
    raise SystemExit("server did not start within 180 s")


@dataclass
class Result:
    name: str
    server_ms: list[float] = field(default_factory=list)
    client_ms: list[float] = field(default_factory=list)
    statuses: dict[int, int] = field(default_factory=dict)

    def add(self, response: httpx.Response, took: float) -> None:
        self.statuses[response.status_code] = self.statuses.get(response.status_code, 0) + 1
        match = _TIMING.search(response.headers.get("server-timing", ""))
        if match:
            self.server_ms.append(float(match[1]))
        self.client_ms.append(took * 1000)

    @property
    def errors(self) -> int:
        return sum(n for status, n in self.statuses.items() if status >= 400)


def pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


Endpoint = tuple[str, Callable[[random.Random], str]]


def endpoints(inputs: Inputs) -> list[Endpoint]:
    def day(r: random.Random) -> str:
        return r.choice(inputs.days)

    def pid(r: random.Random) -> str:
        return quote(r.choice(inputs.ids), safe="/:")

    def q(r: random.Random) -> str:
        return quote(r.choice(inputs.queries))

    return [
        ("day · API", lambda r: f"/api/daily_papers?date={day(r)}&limit=50"),
        ("day · HTML", lambda r: f"/papers/date/{day(r)}"),
        ("latest day · HTML (/)", lambda r: "/"),
        ("trending · API", lambda r: f"/api/daily_papers?sort=trending&limit=50&p={r.randrange(3)}"),
        ("trending · HTML", lambda r: "/trending"),
        ("paper · API", lambda r: f"/api/papers/{pid(r)}"),
        ("paper · HTML", lambda r: f"/papers/{pid(r)}"),
        ("paper · Markdown", lambda r: f"/papers/{pid(r)}.md"),
        ("search · API", lambda r: f"/api/papers/search?q={q(r)}&limit=20"),
        ("search · HTML", lambda r: f"/search?q={q(r)}"),
        ("RSS daily", lambda r: f"/rss/daily?date={day(r)}"),
    ]


def latency(base: str, eps: list[Endpoint], n: int, rng: random.Random) -> list[Result]:
    results = []
    with httpx.Client(base_url=base, timeout=60) as client:
        for name, make in eps:
            result = Result(name)
            for i in range(n + 10):
                url = make(rng)
                started = time.perf_counter()
                response = client.get(url)
                took = time.perf_counter() - started
                if i >= 10:  # the first few warm caches and connections
                    result.add(response, took)
            results.append(result)
    return results


async def _hammer(base: str, make: Callable[[random.Random], str], clients: int, seconds: float) -> Result:
    result = Result("throughput")
    deadline = time.perf_counter() + seconds
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)

    async def worker(seed: int, client: httpx.AsyncClient) -> None:
        rng = random.Random(seed)
        while time.perf_counter() < deadline:
            started = time.perf_counter()
            try:
                response = await client.get(make(rng))
            except httpx.HTTPError:
                result.statuses[-1] = result.statuses.get(-1, 0) + 1
                continue
            result.add(response, time.perf_counter() - started)

    async with httpx.AsyncClient(base_url=base, timeout=60, limits=limits) as client:
        await asyncio.gather(*(worker(i, client) for i in range(clients)))
    return result


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--data-dir", type=Path, default=DEFAULT_DIR)
    parser.add_argument("--requests", type=int, default=200, help="timed requests per endpoint")
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--seconds", type=float, default=10.0, help="duration of each throughput run")
    parser.add_argument("--workers", type=int, default=1, help="server worker processes")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    ensure_data(args.data_dir)
    inputs = sample_inputs(args.data_dir, rng)
    port = free_port()
    server = start_server(args.data_dir, port, args.workers)
    base = f"http://127.0.0.1:{port}"
    try:
        eps = endpoints(inputs)
        results = latency(base, eps, args.requests, rng)
        by_name = dict(eps)
        day_page = "day · HTML" if _ok(results, "day · HTML") else "day · API"
        search = "search · API"
        runs: list[tuple[str, Result | None]] = []
        for name in (day_page, search):
            if not _ok(results, name):
                runs.append((name, None))
                continue
            runs.append((name, asyncio.run(_hammer(base, by_name[name], args.concurrency, args.seconds))))
    finally:
        server.terminate()
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            server.kill()
    print(
        f"\npaperfeed web speed: {inputs.papers:,} papers, {len(inputs.days)} listed days, "
        f"server workers={args.workers}, {os.cpu_count()} CPUs\n"
    )
    print(f"{'endpoint':<24}{'n':>6}{'p50 ms':>9}{'p99 ms':>9}{'client p50':>12}  statuses")
    for r in results:
        statuses = ", ".join(f"{k}×{v}" for k, v in sorted(r.statuses.items()))
        print(
            f"{r.name:<24}{len(r.server_ms):>6}{pct(r.server_ms, 0.5):>9.2f}{pct(r.server_ms, 0.99):>9.2f}"
            f"{pct(r.client_ms, 0.5):>12.2f}  {statuses}"
        )
    print(f"\nthroughput, {args.concurrency} concurrent clients, {args.seconds:g} s each")
    for name, run in runs:
        if run is None:
            print(f"  {name:<22} skipped (endpoint not available)")
            continue
        count = sum(run.statuses.values())
        print(
            f"  {name:<22} {count / args.seconds:8.1f} req/s   client p50 {pct(run.client_ms, 0.5):.1f} ms "
            f"p99 {pct(run.client_ms, 0.99):.1f} ms   server p50 {pct(run.server_ms, 0.5):.2f} ms   "
            f"errors {run.errors + run.statuses.get(-1, 0)}"
        )
    overall = statistics.fmean(x for r in results for x in r.server_ms)
    print(f"\nmean server ms over all endpoints: {overall:.2f}")


def _ok(results: list[Result], name: str) -> bool:
    found = next((r for r in results if r.name == name), None)
    return found is not None and found.errors == 0 and bool(found.server_ms)


if __name__ == "__main__":
    main()
