"""Does a background ``paperfeed index`` slow the web server? p50 of the day page with and without one.

Imports ``../shared/data/hf_daily.jsonl.gz`` (~10k real papers) once into a data folder, starts the real
server (``paperfeed serve``, uvicorn, one worker) and times the HTML day page (server-side time from the
``Server-Timing`` header, and the client's) over three phases:

1. idle: no indexer;
2. background: ``paperfeed index --rebuild`` started as ``paperfeed run`` starts it (``nice -n 10``): its
   thread budget is every core (half of them before issue #39), ONNX Runtime threads do not spin;
3. foreground (the old behaviour, for comparison): an indexer at normal priority with every core and
   spinning threads.

Each phase gets the same number of requests after a few seconds for the indexer to load its model; the
indexer's papers embedded per CPU-second are printed too.

    nice -n 10 .venv/bin/python -m bench.web_under_indexing [--requests 300] [--backend onnx]
"""

from __future__ import annotations

import argparse
import os
import random
import secrets
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx

from bench.digest import cpu_seconds
from bench.vector_cache import CACHE_ROOT, SHARED
from bench.web_speed import Result, free_port, pct, sample_inputs, start_server
from paperfeed.adapters.embed.cpu import available_cores, cpu_info
from paperfeed.adapters.sources.jsonl_file import JsonlFileSource
from paperfeed.bootstrap import build_app
from paperfeed.settings import Settings

DEFAULT_DIR = CACHE_ROOT / "web-indexing-data"
READY = ".ready"


def ensure_data(data_dir: Path) -> None:
    if (data_dir / READY).exists():
        return
    app = build_app(Settings(data_dir=data_dir, embedding_backend="fake"))
    try:
        summary = app.sources.ingest.run(
            JsonlFileSource(SHARED / "data" / "hf_daily.jsonl.gz", batch_size=app.settings.batch_size)
        )
        print(f"imported {summary.added:,} papers into {data_dir}", flush=True)
        app.indexes.keyword  # noqa: B018 - build the keyword index now, not in the server
    finally:
        app.close()
    from bench.vector_cache import CACHE_ROOT, bench_embedder_config
    from paperfeed.adapters.embed import open_embedder

    models = CACHE_ROOT / "models"  # the benches' ONNX exports, shared
    for backend in ("onnx", "onnx-int8"):  # the one-off ONNX export, outside every timed phase
        open_embedder(bench_embedder_config(backend)).embed(["export"])
    if not (data_dir / "models").exists():
        (data_dir / "models").symlink_to(models, target_is_directory=True)
    (data_dir / READY).write_text("ok\n")


def start_indexer(data_dir: Path, backend: str, background: bool) -> subprocess.Popen[bytes]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PAPERFEED_")}
    env["PAPERFEED_EMBEDDING_BACKEND"] = backend
    cmd = [sys.executable, "-m", "paperfeed", "--data-dir", str(data_dir), "index", "--rebuild"]
    return subprocess.Popen(
        cmd,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        preexec_fn=(lambda: os.nice(10)) if background else None,
    )


def phase(base: str, days: list[str], n: int, rng: random.Random) -> Result:
    result = Result("day · HTML")
    with httpx.Client(base_url=base, timeout=60) as client:
        for i in range(n + 10):
            started = time.perf_counter()
            response = client.get(f"/papers/date/{rng.choice(days)}")
            if i >= 10:
                result.add(response, time.perf_counter() - started)
            time.sleep(0.02)  # a reader, not a load test: leave the server idle between requests
    return result


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--data-dir", type=Path, default=DEFAULT_DIR)
    parser.add_argument("--requests", type=int, default=300)
    parser.add_argument("--backend", default="onnx", help="the indexer's embedding backend")
    parser.add_argument("--warmup", type=float, default=20.0, help="seconds for the indexer to get going")
    parser.add_argument("--phases", nargs="*", default=["idle", "background", "foreground"])
    args = parser.parse_args()
    ensure_data(args.data_dir)
    rng = random.Random(15)
    inputs = sample_inputs(args.data_dir, rng)
    os.environ.setdefault("PAPERFEED_SECRET_KEY", secrets.token_urlsafe(32))  # serve refuses to run without
    port = free_port()
    server = start_server(args.data_dir, port, 1)
    base = f"http://127.0.0.1:{port}"
    rows = []
    try:
        for name in args.phases:
            indexer = (
                None if name == "idle" else start_indexer(args.data_dir, args.backend, name == "background")
            )
            try:
                if indexer is not None:
                    time.sleep(args.warmup)
                    cpu0, wall0 = cpu_seconds(indexer.pid), time.perf_counter()
                load = os.getloadavg()[0]
                result = phase(base, inputs.days, args.requests, rng)
                note = ""
                if indexer is not None:
                    used = cpu_seconds(indexer.pid) - cpu0
                    note = f"indexer used {used / (time.perf_counter() - wall0):.2f} cores"
                    if indexer.poll() is not None:
                        note += " (it finished during the phase: rerun with more papers)"
            finally:
                if indexer is not None and indexer.poll() is None:
                    indexer.send_signal(signal.SIGTERM)
                    indexer.wait(timeout=30)
            rows.append((name, result, load, note))
            print(f"  {name}: done", flush=True)
    finally:
        server.terminate()
        server.wait(timeout=20)
    print(
        f"\nday page under indexing: {inputs.papers:,} papers, CPU {cpu_info().describe()}, "
        f"{available_cores()} cores, indexer backend {args.backend}\n"
    )
    print("phase       server p50 / p90 / p99 ms   client p50 ms   errors   load   indexer")
    idle = None
    for name, result, load, note in rows:
        p50 = pct(result.server_ms, 0.5)
        idle = p50 if name == "idle" else idle
        ratio = f" ({p50 / idle:.2f}x idle)" if idle and name != "idle" else ""
        print(
            f"{name:<11} {p50:6.1f} / {pct(result.server_ms, 0.9):6.1f} / {pct(result.server_ms, 0.99):6.1f}"
            f"{ratio:<14} {pct(result.client_ms, 0.5):8.1f}   {result.errors:6d}   {load:4.1f}   {note}"
        )


if __name__ == "__main__":
    main()
