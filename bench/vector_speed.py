"""Measure paperfeed's vector index adapters (exact and HNSW) at serving scale.

For each size and kind: build time (upsert in batches + save), index size on disk, then in a fresh child
process (so the figure is what a server would hold): load time, RSS after load, p50/p99 latency of one
query at k=10 unfiltered and under three filters, and recall@10 against exact float32 search.

    .venv/bin/python -m bench.vector_speed                       # synthetic 200k and 1M, exact and hnsw
    .venv/bin/python -m bench.vector_speed --sizes 200000 --kinds hnsw
    .venv/bin/python -m bench.vector_speed --real                # real MiniLM vectors from bench/vector_cache

Synthetic vectors come from :mod:`bench.vector_data` (embedding-like structure). ``--real`` uses whatever
vectors the bench cache already holds (it never embeds); real runs get synthetic facets, since filters
exercise the mechanism, not the data. Indexes are built under ``--workdir`` and deleted afterwards, unless
``--keep`` (then a later ``--keep`` run re-probes them without rebuilding).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from datetime import date, timedelta
from pathlib import Path

import numpy as np
import numpy.typing as npt

from bench.vector_data import F32, exact_topk, queries_like, recall_at, synthetic
from paperfeed.adapters.vector import StoredVectorIndex, open_vector_index
from paperfeed.domain.search import SearchFilters, VectorRecord

K = 10
MODEL = "bench-model"
FIRST_DAY = date(2015, 1, 1)
DAYS = 11 * 365
CATEGORIES = [f"cat.{i:03d}" for i in range(150)]

# name -> filter; the comments give the share of the corpus each allows (synthetic facets below).
FILTERS = {
    "selective": SearchFilters(
        categories=(CATEGORIES[40],), date_from=FIRST_DAY + timedelta(days=DAYS - 730)
    ),
    "medium": SearchFilters(date_from=FIRST_DAY + timedelta(days=DAYS - 365)),  # ~9 %: last year
    "broad": SearchFilters(has_code=True),  # ~25 %
}


class Facets:
    """Synthetic facets: days uniform over 11 years, 1-3 Zipf-distributed categories, 25 % with code."""

    def __init__(self, n: int, seed: int = 11) -> None:
        rng = np.random.default_rng(seed)
        self.days = rng.integers(0, DAYS, n).astype(np.int32)
        weights = 1.0 / np.arange(1, len(CATEGORIES) + 1)
        self.cats = rng.choice(len(CATEGORIES), size=(n, 3), p=weights / weights.sum())
        self.ncats = rng.integers(1, 4, n)
        self.has_code = rng.random(n) < 0.25

    def record(self, i: int, vector: F32) -> VectorRecord:
        cats = tuple(dict.fromkeys(CATEGORIES[c] for c in self.cats[i, : self.ncats[i]]))
        published = FIRST_DAY + timedelta(days=int(self.days[i]))
        return VectorRecord(f"p{i}", vector, published, cats, bool(self.has_code[i]))

    def mask(self, f: SearchFilters) -> npt.NDArray[np.bool_]:
        n = len(self.days)
        keep = np.ones(n, dtype=np.bool_)
        if f.date_from:
            keep &= self.days >= (f.date_from - FIRST_DAY).days
        if f.date_to:
            keep &= self.days <= (f.date_to - FIRST_DAY).days
        if f.categories:
            wanted = [CATEGORIES.index(c) for c in f.categories]
            in_slot = np.isin(self.cats, wanted) & (np.arange(3)[None, :] < self.ncats[:, None])
            keep &= in_slot.any(axis=1)
        if f.has_code is not None:
            keep &= self.has_code == f.has_code
        return keep


def batches(base: F32, facets: Facets, size: int = 50_000) -> Iterator[list[VectorRecord]]:
    for start in range(0, len(base), size):
        yield [facets.record(i, base[i]) for i in range(start, min(len(base), start + size))]


def folder_size(path: Path) -> int:
    manifest = json.loads((path / "manifest.json").read_text())
    return sum(int(v) for v in manifest["files"].values())


def rss_mb() -> tuple[float, float]:
    """Current and peak resident set size of this process (Linux /proc)."""
    fields = dict(
        line.split(":", 1) for line in Path("/proc/self/status").read_text().splitlines() if ":" in line
    )
    return int(fields["VmRSS"].split()[0]) / 1024, int(fields["VmHWM"].split()[0]) / 1024


def probe(args: argparse.Namespace) -> None:
    """Child process: open the saved index as a server would and time queries; print one JSON line."""
    work = Path(args.probe)
    queries = np.load(work / "queries.npy")
    truth = dict(np.load(work / "truth.npz"))
    t0 = time.perf_counter()
    path = work / f"index-{args.probe_kind}"
    if not (path / "manifest.json").exists():
        raise SystemExit(f"{path}: no saved index to probe")
    dimension = queries.shape[1]
    index = (
        StoredVectorIndex(
            path, model_id=MODEL, dimension=dimension, policy=args.probe_kind, ef_search=args.ef
        )
        if args.ef
        else open_vector_index(path, kind=args.probe_kind, model_id=MODEL, dimension=dimension)
    )
    load_s = time.perf_counter() - t0
    rss, _ = rss_mb()
    out: dict[str, object] = {"load_s": load_s, "rss_mb": rss, "count": len(index)}
    for name, filters in [("none", None), *FILTERS.items()]:
        lat, found = [], []
        for q in queries:
            t0 = time.perf_counter()
            hits = index.search(q, K, filters)
            lat.append(time.perf_counter() - t0)
            found.append([int(h.paper_id[1:]) for h in hits])
        out[name] = {
            "p50_ms": float(np.percentile(lat, 50) * 1e3),
            "p99_ms": float(np.percentile(lat, 99) * 1e3),
            "recall": recall_at(found, truth[name], K),
        }
    out["peak_rss_mb"] = rss_mb()[1]
    print(json.dumps(out))


def run(
    base: F32,
    label: str,
    kinds: list[str],
    queries_n: int,
    workdir: Path,
    *,
    blas_threads: int,
    keep: bool,
    ef: int,
) -> None:
    n = len(base)
    facets = Facets(n)
    queries = queries_like(base, queries_n)
    kept = workdir / f"vector-speed-{label.split()[0]}-{n}"
    with contextlib.nullcontext(str(kept)) if keep else tempfile.TemporaryDirectory(dir=workdir) as tmp:
        work = Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        np.save(work / "queries.npy", queries)
        truth = {"none": exact_topk(base, queries, K)}
        shares = {}
        for name, filters in FILTERS.items():
            mask = facets.mask(filters)
            shares[name] = mask.mean()
            truth[name] = exact_topk(base, queries, K, mask)
        np.savez(work / "truth.npz", **truth)  # type: ignore[arg-type]
        print(
            f"\n{label}: n={n:,} dim={base.shape[1]} queries={queries_n} k={K} ef={ef or 'default'} "
            f"blas_threads={blas_threads}; "
            "filters allow " + ", ".join(f"{name} {share:.2%}" for name, share in shares.items()),
            flush=True,
        )
        print(
            f"{'kind':<6} {'build s':>8} {'disk MB':>8} {'load s':>7} {'RSS MB':>7} | "
            + " | ".join(f"{name:^25}" for name in ["unfiltered", *FILTERS]),
            flush=True,
        )
        print(f"{'':<6} {'':>8} {'':>8} {'':>7} {'':>7} | " + " | ".join(["p50 ms  p99 ms  recall@10"] * 4))
        for kind in kinds:
            path = work / f"index-{kind}"
            build = "reused"
            if not (path / "manifest.json").exists():
                t0 = time.perf_counter()
                index = open_vector_index(path, kind=kind, model_id=MODEL, dimension=base.shape[1])
                for batch in batches(base, facets):
                    index.upsert(batch)
                index.save()
                build = f"{time.perf_counter() - t0:.1f}"
                del index
            size_mb = folder_size(path) / 2**20
            child = subprocess.run(
                [
                    *(sys.executable, "-m", "bench.vector_speed", "--probe", str(work)),
                    *("--probe-kind", kind, "--ef", str(ef)),
                ],
                capture_output=True,
                text=True,
                check=False,
                env={**os.environ, "OPENBLAS_NUM_THREADS": str(blas_threads)},
            )
            if child.returncode != 0:
                print(f"{kind}: probe failed\n{child.stderr[-2000:]}", flush=True)
                continue
            r = json.loads(child.stdout.strip().splitlines()[-1])
            cells = [
                f"{r[name]['p50_ms']:>6.2f}  {r[name]['p99_ms']:>6.2f}  {r[name]['recall']:>9.3f}"
                for name in ["none", *FILTERS]
            ]
            print(
                f"{kind:<6} {build:>8} {size_mb:>8.0f} {r['load_s']:>7.2f} {r['rss_mb']:>7.0f} | "
                + " | ".join(cells),
                flush=True,
            )
            if not keep:
                shutil.rmtree(path)


def real_vectors() -> F32 | None:
    """Every real vector the bench cache holds for any corpus (never embeds anything)."""
    try:
        from bench.vector_cache import CORPORA, VectorCache
    except ImportError:
        return None
    cache = VectorCache.default()
    parts = [np.stack(list(found.values())) for name in CORPORA if (found := cache.cached(name))]
    return np.concatenate(parts).astype(np.float32) if parts else None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[200_000, 1_000_000])
    parser.add_argument("--kinds", nargs="+", default=["exact", "hnsw"], choices=["exact", "hnsw"])
    parser.add_argument("--queries", type=int, default=500)
    parser.add_argument("--real", action="store_true", help="use cached real vectors instead of synthetic")
    parser.add_argument("--workdir", type=Path, default=Path(tempfile.gettempdir()))
    parser.add_argument(
        "--blas-threads",
        type=int,
        default=1,
        help="OpenBLAS threads in the serving process (1: one query per request thread; see the report)",
    )
    parser.add_argument(
        "--keep",
        action="store_true",
        help="keep built indexes under --workdir and reuse them on the next run",
    )
    parser.add_argument("--ef", type=int, default=0, help="HNSW efSearch to probe with (0: the adapter's)")
    parser.add_argument("--probe", help=argparse.SUPPRESS)
    parser.add_argument("--probe-kind", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.probe:
        probe(args)
        return
    options = {"blas_threads": args.blas_threads, "keep": args.keep, "ef": args.ef}
    if args.real:
        base = real_vectors()
        if base is None:
            print("no real vectors cached yet (fill them with: .venv/bin/python -m bench.vector_cache)")
            return
        base /= np.linalg.norm(base, axis=1, keepdims=True)
        run(base, "real cached vectors", args.kinds, args.queries, args.workdir, **options)
        return
    for n in args.sizes:
        run(synthetic(n), "synthetic", args.kinds, args.queries, args.workdir, **options)


if __name__ == "__main__":
    main()
