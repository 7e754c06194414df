"""The first 100 requests of a fresh server, with and without freezing its start-up heap (issue #30, 15).

A fresh `paperfeed serve` held ~218k long-lived objects after start-up; the collector's first full pass
over them (~160 ms) stalled one early request. `PAPERFEED_WEB_GC_FREEZE` (on by default) loads the store
and the templates at start and freezes that heap. This starts a real server for each setting, several
times in turn (machines differ; the ratio of one run is the figure), sends the same 100 requests one at a
time (day page, paper pages, trending, the API, keyword search), and prints the server-side latency
(``Server-Timing``) p50 / p99 / max of each, with the CPU's flags.

The fake embedder stands in for the model so the model's own load on the first semantic query (seconds,
once) does not hide what is measured here.

    .venv/bin/python -m bench.first_requests [--rounds 3] [--papers 10629]
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import random
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

import httpx

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data"
CACHE = Path("/work/bench-cache/first-requests")


def cpu_flags() -> str:
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return "?"
    model = next((line.split(":", 1)[1].strip() for line in text.splitlines() if "model name" in line), "?")
    flags = next(
        (line.split(":", 1)[1].split() for line in text.splitlines() if line.startswith("flags")), []
    )
    wanted = [f for f in flags if f.startswith(("avx", "fma", "sse4"))]
    return f"{model}; {os.cpu_count()} cores; flags {' '.join(wanted)}"


def data_folder(papers: int) -> tuple[Path, list[str]]:
    """A data folder with the first ``papers`` of hf_daily imported by the real CLI (cached)."""
    folder = CACHE / f"data-{papers}"
    source = CACHE / f"papers-{papers}.jsonl.gz"
    with gzip.open(SHARED / "hf_daily.jsonl.gz", "rt") as fh:
        rows = [json.loads(line) for _, line in zip(range(papers), fh, strict=False)]
    ids = [r["id"] for r in rows]
    if not (folder / ".ready").exists():
        CACHE.mkdir(parents=True, exist_ok=True)
        with gzip.open(source, "wt") as out:
            out.writelines(json.dumps(r) + "\n" for r in rows)
        subprocess.run(
            [sys.executable, "-m", "paperfeed", "--data-dir", str(folder), "import", str(source)],
            check=True,
            env={**os.environ, "PAPERFEED_EMBEDDING_BACKEND": "fake"},
        )
        (folder / ".ready").touch()
    return folder, ids


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def requests_for(ids: list[str]) -> list[str]:
    """The same 100 paths every time: what a first visitor and a crawler ask for."""
    pick = random.Random(7)
    paths = ["/", "/trending", "/api/daily_papers", "/papers/week/2025-W10", "/search?q=diffusion+models"]
    words = ["language models", "video generation", "reinforcement learning", "robot", "reasoning", "3d"]
    while len(paths) < 100:
        roll = pick.random()
        if roll < 0.6:
            paths.append(f"/papers/{pick.choice(ids)}")
        elif roll < 0.8:
            paths.append(f"/search?q={pick.choice(words).replace(' ', '+')}")
        else:
            paths.append(f"/api/papers/{pick.choice(ids)}")
    return paths


def one_server(folder: Path, paths: list[str], freeze: bool) -> list[float]:
    """Server-side milliseconds of each request to a freshly started server."""
    port = free_port()
    env = {
        **os.environ,
        "PAPERFEED_EMBEDDING_BACKEND": "fake",
        "PAPERFEED_WEB_GC_FREEZE": "true" if freeze else "false",
    }
    command = [sys.executable, "-m", "paperfeed", "--data-dir", str(folder), "serve", "--port", str(port)]
    command += ["--base-url", f"http://127.0.0.1:{port}", "--log-level", "warning", "--data-folder-secret"]
    server = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=60) as client:
            deadline = time.monotonic() + 120
            while True:  # a connection, not a request: the first request is part of what is measured
                try:
                    socket.create_connection(("127.0.0.1", port), timeout=1).close()
                    break
                except OSError:
                    if time.monotonic() > deadline or server.poll() is not None:
                        raise RuntimeError("the server did not start") from None
                    time.sleep(0.1)
            took = []
            for path in paths:
                reply = client.get(path, headers={"accept": "text/html"})
                reply.raise_for_status()
                took.append(float(reply.headers["server-timing"].split("dur=", 1)[1]))
            return took
    finally:
        server.terminate()
        server.wait(timeout=30)


def summary(samples: list[float]) -> tuple[float, float, float]:
    ordered = sorted(samples)
    return statistics.median(ordered), ordered[int(0.99 * (len(ordered) - 1))], ordered[-1]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--papers", type=int, default=10_629)
    args = parser.parse_args()
    folder, ids = data_folder(args.papers)
    paths = requests_for(ids)
    print(f"CPU: {cpu_flags()}")
    print(f"{args.papers:,} papers; 100 requests, one at a time, to a fresh server; {args.rounds} rounds")
    results: dict[bool, list[tuple[float, float, float]]] = {False: [], True: []}
    for _ in range(args.rounds):
        for freeze in (False, True):  # in turn, so both see the same machine
            results[freeze].append(summary(one_server(folder, paths, freeze)))
    print(f"{'start-up heap':<16} {'p50 ms':>8} {'p99 ms':>8} {'max ms':>8}   (median of the rounds)")
    medians = {}
    for freeze, rows in results.items():
        medians[freeze] = tuple(statistics.median(r[i] for r in rows) for i in range(3))
        p50, p99, worst = medians[freeze]
        print(f"{'frozen' if freeze else 'not frozen':<16} {p50:>8.2f} {p99:>8.2f} {worst:>8.2f}")
    print(f"p99 frozen / not frozen: {medians[True][1] / medians[False][1]:.2f}")


if __name__ == "__main__":
    main()
