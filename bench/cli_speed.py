"""How long the ``paperfeed`` command takes to answer, compared with starting Python itself.

Each command runs in a fresh process (as a person typing it would), ``--runs`` times, against a bare
``python -c pass`` measured in the same run; the figure that counts is the median wall time *above* the
interpreter's own start (and the ratio of the two). One untimed run of each command comes first, so a
one-time cost (e.g. exporting the ONNX model into an empty cache) is not counted as start-up. That run
also writes the bytecode cache (``PYTHONDONTWRITEBYTECODE`` is dropped from the commands' environment), as
``pip install`` does for an installed package: otherwise every timed run would recompile paperfeed's
sources, which no installed command does.

The store: the 100,005 real papers of ``arxiv_oai_2007_2017_sample100k.jsonl.gz`` imported through
paperfeed's own import (keyword index included), and a vector index with an embedding-like synthetic
vector for every paper (``bench.vector_data``) under the onnx-int8 model's ``model_id``, so a hybrid
search really embeds the query with the real model and searches 100k vectors. Built once into
``$PAPERFEED_BENCH_CACHE/cli-100k`` and reused.

Searches: ``keyword`` runs with ``PAPERFEED_EMBEDDING_BACKEND=fake``, whose vector space has no index in
this store, so the search is keyword-only (the path a store without embeddings takes); ``hybrid (real
model)`` runs with ``onnx-int8``: ONNX Runtime session, query embedding, ANN search, fusion.

    .venv/bin/python -m bench.cli_speed [--runs 7] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from datetime import date
from pathlib import Path
from typing import Any

import paperfeed
from bench.vector_cache import CACHE_ROOT, SHARED
from paperfeed.adapters.embed.cpu import cpu_info

STORE = CACHE_ROOT / "cli-100k"
PAPERS = SHARED / "data" / "arxiv_oai_2007_2017_sample100k.jsonl.gz"
QUERY = "graph neural networks for molecules"


def build(root: Path) -> dict[str, Any]:
    """The 100k store (see the module docstring); returns its build figures, cached in built.json."""
    import numpy as np
    from sqlalchemy import text

    from bench.vector_data import synthetic
    from paperfeed.adapters.sources.jsonl_file import JsonlFileSource
    from paperfeed.bootstrap import build_app
    from paperfeed.domain.search import VectorRecord
    from paperfeed.settings import Settings

    done = root / "built.json"
    if done.exists():
        return dict(json.loads(done.read_text()))
    root.mkdir(parents=True, exist_ok=True)
    app = build_app(Settings(data_dir=root, embedding_backend="onnx-int8"))
    figures: dict[str, Any] = {}
    t0 = time.perf_counter()
    app.sources.ingest.run(JsonlFileSource(PAPERS, batch_size=app.settings.batch_size), workers=1)
    app.indexes.keyword.flush()
    figures["import_s"] = round(time.perf_counter() - t0, 1)
    with app.core.store.engine.connect() as conn:
        rows = conn.execute(
            text("SELECT id, published, categories, github_repo FROM papers ORDER BY rowid")
        ).all()
    figures["papers"] = len(rows)
    vectors = synthetic(len(rows), seed=3)
    t0 = time.perf_counter()
    index = app.indexes.vector_index(
        model_id=app.indexes.embedders.current().model_id, dimension=int(vectors.shape[1]), fresh=True
    )
    batch: list[VectorRecord] = []
    for i, (pid, published, cats, repo) in enumerate(rows):
        day = date.fromisoformat(str(published)[:10]) if published else None
        cats_list = json.loads(cats) if isinstance(cats, str) else cats
        batch.append(VectorRecord(pid, np.asarray(vectors[i]), day, tuple(cats_list), bool(repo)))
        if len(batch) == 20_000:
            index.upsert(batch)
            batch = []
    index.upsert(batch)
    index.save()
    figures["vector_build_s"] = round(time.perf_counter() - t0, 1)
    figures["model_id"] = app.indexes.embedders.current().model_id
    app.close()
    done.write_text(json.dumps(figures))
    return figures


def _paperfeed() -> list[str]:
    """The installed console script when there is one (what a person runs), else ``python -m``."""
    script = Path(sys.executable).with_name("paperfeed")
    return [str(script)] if script.exists() else [sys.executable, "-m", "paperfeed"]


def _cpu_of_children() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _time(argv: list[str], env: dict[str, str], runs: int) -> tuple[list[float], list[float]]:
    """Wall seconds and CPU seconds (user + system of the child) of each run. CPU time hardly moves
    when other processes share the cores; wall time does, so both are printed."""
    subprocess.run(argv, env=env, capture_output=True, check=True)  # untimed: one-time costs
    wall, cpu = [], []
    for _ in range(runs):
        c0, t0 = _cpu_of_children(), time.perf_counter()
        done = subprocess.run(argv, env=env, capture_output=True)
        wall.append(time.perf_counter() - t0)
        cpu.append(_cpu_of_children() - c0)
        if done.returncode != 0:
            raise SystemExit(f"{argv} failed ({done.returncode}): {done.stderr.decode()[-2000:]}")
    return wall, cpu


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--store", type=Path, default=STORE)
    parser.add_argument("--json", type=Path, help="also write the figures here")
    parser.add_argument("--skip-hybrid", action="store_true", help="no real-model search")
    args = parser.parse_args()

    print(f"CPU: {cpu_info().describe()}; cores usable: {len(os.sched_getaffinity(0))}")
    print("load average at start: {:.2f} {:.2f} {:.2f}".format(*os.getloadavg()))
    print(f"python: {sys.executable} {sys.version.split()[0]}")
    print(f"paperfeed: {Path(paperfeed.__file__).parent}")
    figures = build(args.store)
    print(f"store: {args.store} {figures}")

    # no PYTHONDONTWRITEBYTECODE: the untimed run caches bytecode, as an installed package has it
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("PAPERFEED_") and k != "PYTHONDONTWRITEBYTECODE"
    }
    env["PAPERFEED_DATA_DIR"] = str(args.store)
    env["PAPERFEED_EMBEDDING_THREADS"] = "1"
    keyword = {**env, "PAPERFEED_EMBEDDING_BACKEND": "fake"}
    hybrid = {**env, "PAPERFEED_EMBEDDING_BACKEND": "onnx-int8"}
    pf = _paperfeed()
    cases: list[tuple[str, list[str], dict[str, str], float | None]] = [
        ("python -c pass", [sys.executable, "-c", "pass"], env, None),
        ("paperfeed --help", [*pf, "--help"], env, 0.3),
        ("paperfeed stats", [*pf, "stats"], env, 0.5),
        ("paperfeed search (keyword)", [*pf, "search", QUERY], keyword, 1.0),
    ]
    if not args.skip_hybrid:
        cases.append(("paperfeed search (hybrid, real model)", [*pf, "search", QUERY], hybrid, None))
    results: dict[str, dict[str, Any]] = {}
    base = base_cpu = 0.0
    print(
        f"\n{'command':38s} {'wall s':>7s} {'above py':>9s} {'ratio':>6s} {'target':>7s}     "
        f"{'cpu s':>6s} {'above py':>9s}"
    )
    for name, argv, case_env, target in cases:
        wall, cpu = _time(argv, case_env, args.runs)
        median, median_cpu = statistics.median(wall), statistics.median(cpu)
        if name == "python -c pass":
            base, base_cpu = median, median_cpu
        above = median - base
        ok = "" if target is None else ("ok" if above <= target else "MISSED")
        results[name] = {
            "median_s": round(median, 3),
            "above_interpreter_s": round(above, 3),
            "ratio": round(median / base, 1) if base else None,
            "runs_s": [round(t, 3) for t in wall],
            "target_above_s": target,
            "median_cpu_s": round(median_cpu, 3),
            "cpu_above_interpreter_s": round(median_cpu - base_cpu, 3),
        }
        shown_target = "" if target is None else f"≤{target:.1f}"
        print(
            f"{name:38s} {median:7.3f} {above:9.3f} {median / base:6.1f} {shown_target:>7s} {ok:6s} "
            f"{median_cpu:6.3f} {median_cpu - base_cpu:9.3f}",
            flush=True,
        )
    print("load average at end: {:.2f} {:.2f} {:.2f}".format(*os.getloadavg()))
    if args.json:
        payload = {"cpu": cpu_info().describe(), "store": figures, "results": results}
        args.json.write_text(json.dumps(payload, indent=2))


if __name__ == "__main__":
    main()
