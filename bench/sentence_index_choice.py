"""Which faiss index should hold the sentence vectors (issue #42)? Build CPU-seconds and recall@10.

Evidence search keeps every sentence vector in a folder index (about 6.5 a paper: 1.3M at 200k papers).
The papers' graph (HNSW, M 16, efConstruction 128, float16 codes) took more than 18 CPU-minutes at that
size and had not finished. Each candidate is built here in one thread over the same vectors, and
measured as it is served: the walk's (or the probed lists') best 100 candidates are re-scored exactly and
the top 10 compared with an exact float32 scan (recall@10), with the query's CPU time.

Two sets of vectors, both already on disk (nothing is embedded but the bench's queries):

* ``--hashed FILE``: the sentence vectors of the ``bench.evidence_cost`` store (``vectors.npy`` of its
  ``sentence-vectors`` generation). **Not MiniLM's**: paperfeed's fake embedder, a signed hashed bag of
  words at 384 dimensions, so sparse and with less cluster structure than a model's; queries are
  Hugging Face one-line summaries embedded the same way.
* ``--real FILE``: real late-pooled MiniLM sentence vectors (``all-MiniLM-L6-v2+late1``) of an instance
  that imported SciFact; queries are SciFact's claims embedded by MiniLM (the bench cache).

    .venv/bin/python -m bench.sentence_index_choice --hashed D/sentence-vectors/gen-*/vectors.npy \
        --real E/sentence-vectors/gen-*/vectors.npy --rows 200000
"""

from __future__ import annotations

import argparse
import glob
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from bench.sentence_roles import cpu_flags

K = 10
CANDIDATES = 100  # re-scored exactly, as StoredVectorIndex does (RESCORE_CANDIDATES)
F32 = npt.NDArray[np.float32]


def _unit(x: npt.NDArray[Any]) -> F32:
    x = np.ascontiguousarray(x, dtype=np.float32)
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    out: F32 = x / norms
    return out


def hashed_queries(n: int) -> F32:
    from bench.evidence_cost import questions
    from paperfeed.adapters.embed.fake import FakeEmbedder

    return _unit(FakeEmbedder(384, name="bench").embed(questions(n)))


def claim_queries(n: int) -> F32:
    cache = os.environ.get("PAPERFEED_BENCH_CACHE", "/work/bench-cache")
    parts = sorted(glob.glob(f"{cache}/all-MiniLM-L6-v2/scifact_claims/*.npz"))
    return _unit(np.concatenate([np.load(p)["vectors"] for p in parts])[:n])


def exact(base: F32, queries: F32) -> npt.NDArray[np.int64]:
    out = np.empty((len(queries), K), dtype=np.int64)
    for i in range(0, len(queries), 50):
        scores = queries[i : i + 50] @ base.T
        top = np.argpartition(-scores, K, axis=1)[:, :K]
        out[i : i + 50] = top
    return out


def measure(
    name: str,
    make: Callable[[], Any],
    base: F32,
    queries: F32,
    truth: npt.NDArray[np.int64],
    settings: list[tuple[str, Callable[[Any], Any]]],
) -> None:
    import faiss

    faiss.omp_set_num_threads(1)
    cpu = time.process_time()
    index = make()
    if not index.is_trained:
        index.train(base[:: max(1, len(base) // 100_000)])
    for start in range(0, len(base), 100_000):
        index.add(base[start : start + 100_000])
    build = time.process_time() - cpu
    for label, params_of in settings:
        params = params_of(index)
        hits, cpu = 0, time.process_time()
        for q, want in zip(queries, truth, strict=True):
            _, labels = index.search(q.reshape(1, -1), CANDIDATES, params=params)
            cand = labels[0][labels[0] >= 0]
            scores = base[cand] @ q  # exact re-scoring of the candidates
            got = cand[np.argsort(-scores)[:K]]
            hits += len(set(got.tolist()) & set(want.tolist()))
        per_query = 1000 * (time.process_time() - cpu) / len(queries)
        print(
            f"{name:34s} {label:12s} build {build:7.1f} CPU-s ({1e6 * build / len(base):6.0f} us/row)  "
            f"recall@10 {hits / (K * len(queries)):.3f}  query {per_query:5.2f} CPU-ms",
            flush=True,
        )


def candidates(n: int) -> list[tuple[str, Callable[[], Any], list[tuple[str, Callable[[Any], Any]]]]]:
    import faiss as _faiss

    faiss: Any = _faiss  # the bundled stubs lack the search parameter classes
    ip = faiss.METRIC_INNER_PRODUCT

    def hnsw(factory: str, ef_construction: int) -> Callable[[], Any]:
        def make() -> Any:
            index = faiss.index_factory(384, factory, ip)
            index.hnsw.efConstruction = ef_construction
            return index

        return make

    def ef(value: int) -> Callable[[Any], Any]:
        def params(_: Any) -> Any:
            p = faiss.SearchParametersHNSW()
            p.efSearch = value
            return p

        return params

    def probe(value: int) -> Callable[[Any], Any]:
        def params(_: Any) -> Any:
            p = faiss.SearchParametersIVF()
            p.nprobe = value
            return p

        return params

    nlist = 1 << max(6, round(np.log2(2 * np.sqrt(n))))
    ivf = f"IVF{nlist},SQfp16"
    out: list[tuple[str, Callable[[], Any], list[tuple[str, Callable[[Any], Any]]]]] = [
        ("HNSW16_SQfp16 efC 128 (shipped)", hnsw("HNSW16_SQfp16", 128), [("ef 512", ef(512))]),
        ("HNSW16_SQfp16 efC 64", hnsw("HNSW16_SQfp16", 64), [("ef 512", ef(512))]),
        ("HNSW16_SQfp16 efC 40", hnsw("HNSW16_SQfp16", 40), [("ef 256", ef(256)), ("ef 512", ef(512))]),
        ("HNSW16_SQ8 efC 40", hnsw("HNSW16_SQ8", 40), [("ef 512", ef(512))]),
        ("HNSW8_SQfp16 efC 40", hnsw("HNSW8_SQfp16", 40), [("ef 512", ef(512))]),
        (
            ivf,
            lambda: faiss.index_factory(384, ivf, ip),
            [(f"nprobe {p}", probe(p)) for p in (16, 32, 64, 128)],
        ),
    ]
    return out


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--hashed", type=Path)
    parser.add_argument("--real", type=Path)
    parser.add_argument("--rows", type=int, default=200_000, help="the first N rows of the file")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--only", default="", help="comma-separated name prefixes to run")
    args = parser.parse_args()
    print(f"CPU flags: {cpu_flags()}; {os.cpu_count()} cores; {time.strftime('%Y-%m-%d %H:%M')}", flush=True)
    print(f"load: {Path('/proc/loadavg').read_text().split()[:3]}", flush=True)
    for label, path, queries_of in (
        ("hashed bag-of-words (bench.evidence_cost)", args.hashed, hashed_queries),
        ("real late-pooled MiniLM (SciFact)", args.real, claim_queries),
    ):
        if path is None:
            continue
        base = _unit(np.load(path, mmap_mode="r")[: args.rows])
        queries = queries_of(args.queries)
        truth = exact(base, queries)
        print(f"\n{label}: {len(base):,} vectors, {len(queries)} queries, one thread", flush=True)
        for name, make, settings in candidates(len(base)):
            if args.only and not any(name.startswith(p) for p in args.only.split(",")):
                continue
            measure(name, make, base, queries, truth, settings)


if __name__ == "__main__":
    main()
