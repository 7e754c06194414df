"""Compare HNSW libraries (usearch, faiss-cpu, hnswlib) on this machine: the vector adapter's choice.

Each library gets the same graph settings (M=16, efConstruction=128) and compact storage where it has one,
then the same re-scoring step the adapter uses: ``candidates`` approximate hits re-scored exactly against an
f16 copy of the vectors. Reported: build time (all cores), serialized size, p50/p99 single-query latency at
k=10 (one thread), recall@10 against exact search (raw and re-scored), and a 10 % filter (each library's
native filter mechanism, or growing oversampling when it has none).

    .venv/bin/python bench/vector_libs.py --sizes 200000 1000000

faiss-cpu and hnswlib are not runtime dependencies: install them to rerun this comparison.
"""

from __future__ import annotations

import argparse
import importlib
import math
import os
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from bench.vector_data import F32, exact_topk, queries_like, recall_at, synthetic

K = 10
M = 16
EF_ADD = 128


@dataclass
class Row:
    lib: str
    n: int
    ef: int
    build_s: float
    size_mb: float
    p50_ms: float
    p99_ms: float
    recall_raw: float
    recall_rescored: float
    filt_p50_ms: float
    filt_recall: float
    filter_kind: str


Search = Callable[[F32, int, int], npt.NDArray[np.int64]]
FilteredSearch = Callable[[F32, int, npt.NDArray[np.bool_], int], npt.NDArray[np.int64]]


def rescore(f16: npt.NDArray[np.float16], q: F32, rows: npt.NDArray[np.int64], k: int) -> list[int]:
    rows = rows[rows >= 0]
    scores = f16[rows].astype(np.float32) @ q
    order = np.argsort(-scores)[:k]
    return [int(r) for r in rows[order]]


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


def build_usearch(base: F32, dtype: str) -> tuple[Search, FilteredSearch, int]:
    Index = importlib.import_module("usearch.index").Index

    index = Index(ndim=base.shape[1], metric="ip", dtype=dtype, connectivity=M, expansion_add=EF_ADD)
    index.add(np.arange(len(base), dtype=np.uint64), base, threads=os.cpu_count() or 1)
    with tempfile.TemporaryDirectory() as tmp:
        index.save(os.path.join(tmp, "u.usearch"))
        size = os.path.getsize(os.path.join(tmp, "u.usearch"))

    def search(q: F32, count: int, ef: int) -> npt.NDArray[np.int64]:
        index.expansion_search = ef
        return np.asarray(index.search(q, count, threads=1).keys, dtype=np.int64)

    def filtered(q: F32, count: int, mask: npt.NDArray[np.bool_], ef: int) -> npt.NDArray[np.int64]:
        # No filter predicate in the Python API: oversample, growing until enough hits pass.
        want = count / max(mask.mean(), 1e-6) * 1.5
        while True:
            fetch = min(len(base), math.ceil(want))
            index.expansion_search = max(ef, fetch)
            keys = np.asarray(index.search(q, fetch, threads=1).keys, dtype=np.int64)
            keep = keys[mask[keys]]
            if len(keep) >= count or fetch >= len(base):
                return keep[:count]
            want *= 2

    return search, filtered, size


def build_faiss(base: F32) -> tuple[Search, FilteredSearch, int]:
    faiss = importlib.import_module("faiss")  # its bundled stubs lack SearchParametersHNSW

    faiss.omp_set_num_threads(os.cpu_count() or 1)
    index = faiss.IndexHNSWSQ(base.shape[1], faiss.ScalarQuantizer.QT_8bit, M, faiss.METRIC_INNER_PRODUCT)
    index.hnsw.efConstruction = EF_ADD
    index.train(base[:: max(1, len(base) // 100_000)])
    index.add(base)
    size = len(faiss.serialize_index(index))
    faiss.omp_set_num_threads(1)

    def search(q: F32, count: int, ef: int) -> npt.NDArray[np.int64]:
        params = faiss.SearchParametersHNSW()
        params.efSearch = ef
        _, labels = index.search(q[None, :], count, params=params)
        return np.asarray(labels[0], dtype=np.int64)

    def filtered(q: F32, count: int, mask: npt.NDArray[np.bool_], ef: int) -> npt.NDArray[np.int64]:
        bits = np.packbits(mask, bitorder="little")
        fp = faiss.SearchParametersHNSW()
        fp.efSearch = ef
        fp.sel = faiss.IDSelectorBitmap(len(bits), faiss.swig_ptr(bits))
        _, labels = index.search(q[None, :], count, params=fp)
        return np.asarray(labels[0], dtype=np.int64)

    return search, filtered, size


def build_hnswlib(base: F32) -> tuple[Search, FilteredSearch, int]:
    hnswlib = importlib.import_module("hnswlib")

    index = hnswlib.Index(space="ip", dim=base.shape[1])
    index.init_index(max_elements=len(base), ef_construction=EF_ADD, M=M)
    index.add_items(base, np.arange(len(base)), num_threads=os.cpu_count() or 1)
    with tempfile.TemporaryDirectory() as tmp:
        index.save_index(os.path.join(tmp, "h.bin"))
        size = os.path.getsize(os.path.join(tmp, "h.bin"))

    def search(q: F32, count: int, ef: int) -> npt.NDArray[np.int64]:
        index.set_ef(ef)
        labels, _ = index.knn_query(q, k=count, num_threads=1)
        return np.asarray(labels[0], dtype=np.int64)

    def filtered(q: F32, count: int, mask: npt.NDArray[np.bool_], ef: int) -> npt.NDArray[np.int64]:
        index.set_ef(ef)
        labels, _ = index.knn_query(q, k=count, num_threads=1, filter=lambda label: bool(mask[label]))
        return np.asarray(labels[0], dtype=np.int64)

    return search, filtered, size


@dataclass
class Workload:
    base: F32
    f16: npt.NDArray[np.float16]
    queries: F32
    truth: npt.NDArray[np.int64]
    mask: npt.NDArray[np.bool_]
    ftruth: npt.NDArray[np.int64]


def evaluate(
    lib: str,
    built: tuple[Search, FilteredSearch, int],
    build_s: float,
    w: Workload,
    ef: int,
    candidates: int,
    filter_kind: str,
) -> Row:
    search, filtered, size = built
    raw: list[list[int]] = []
    rescored: list[list[int]] = []
    lat: list[float] = []
    for q in w.queries:
        t0 = time.perf_counter()
        cand = search(q, candidates, ef)
        best = rescore(w.f16, q, cand, K)
        lat.append(time.perf_counter() - t0)
        raw.append([int(c) for c in cand[:K]])
        rescored.append(best)
    flat: list[float] = []
    fres: list[list[int]] = []
    for q in w.queries:
        t0 = time.perf_counter()
        cand = filtered(q, candidates, w.mask, ef)
        fres.append(rescore(w.f16, q, cand, K))
        flat.append(time.perf_counter() - t0)
    return Row(
        lib=lib,
        n=len(w.base),
        ef=ef,
        build_s=build_s,
        size_mb=size / 2**20,
        p50_ms=float(np.percentile(lat, 50) * 1e3),
        p99_ms=float(np.percentile(lat, 99) * 1e3),
        recall_raw=recall_at(raw, w.truth, K),
        recall_rescored=recall_at(rescored, w.truth, K),
        filt_p50_ms=float(np.percentile(flat, 50) * 1e3),
        filt_recall=recall_at(fres, w.ftruth, K),
        filter_kind=filter_kind,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[200_000, 1_000_000])
    parser.add_argument(
        "--libs", nargs="+", default=["usearch-i8", "usearch-f16", "faiss-sq8", "hnswlib-f32"]
    )
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--ef", type=int, nargs="+", default=[64, 128])
    parser.add_argument("--candidates", type=int, default=50, help="approximate hits re-scored exactly")
    args = parser.parse_args()
    print(
        f"{'library':<12} {'n':>8} {'ef':>4} {'build s':>8} {'size MB':>8} {'p50 ms':>7} {'p99 ms':>7} "
        f"{'R@10 raw':>8} {'R@10 re':>8} {'f10% p50':>8} {'f10% R':>7}  filter"
    )
    for n in args.sizes:
        base = synthetic(n)
        queries = queries_like(base, args.queries)
        mask = np.random.default_rng(7).random(n) < 0.10
        w = Workload(
            base,
            base.astype(np.float16),
            queries,
            exact_topk(base, queries, K),
            mask,
            exact_topk(base, queries, K, mask),
        )
        builders: dict[str, tuple[Callable[[F32], tuple[Search, FilteredSearch, int]], str]] = {
            "usearch-i8": (lambda b: build_usearch(b, "i8"), "oversample"),
            "usearch-f16": (lambda b: build_usearch(b, "f16"), "oversample"),
            "faiss-sq8": (build_faiss, "IDSelector"),
            "hnswlib-f32": (build_hnswlib, "py callback"),
        }
        for lib in args.libs:
            builder, kind = builders[lib]
            build_s, built = timed(lambda: builder(base))  # noqa: B023
            for ef in args.ef:
                r = evaluate(lib, built, build_s, w, max(ef, args.candidates), args.candidates, kind)
                print(
                    f"{r.lib:<12} {r.n:>8} {r.ef:>4} {r.build_s:>8.1f} {r.size_mb:>8.0f} {r.p50_ms:>7.2f} "
                    f"{r.p99_ms:>7.2f} {r.recall_raw:>8.3f} {r.recall_rescored:>8.3f} {r.filt_p50_ms:>8.2f} "
                    f"{r.filt_recall:>7.3f}  {r.filter_kind}",
                    flush=True,
                )
            del built


if __name__ == "__main__":
    main()
