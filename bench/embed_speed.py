"""Embedding speed and agreement per backend, on real abstracts.

For each backend (torch fp32, torch bf16 when the CPU has native bfloat16, ONNX fp32, ONNX int8) and each
thread count (1 and all the process's cores by default) prints abstracts/s and abstracts per CPU-second of
the process (model load and ONNX export excluded; texts embedded in the indexer's batches), the cosine of
each vector to torch fp32's (min and mean), and how many of each abstract's 10 nearest neighbours among
the sample are the same as torch fp32's (what a search result list would notice).

The header names the CPU model and its vector flags (int8 and bf16 speed depend on AVX512/VNNI/AMX).

    .venv/bin/python -m bench.embed_speed [--n 500] [--threads 1 2] [--backends torch onnx ...]
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Sequence
from dataclasses import replace

import numpy as np
import numpy.typing as npt

from bench.vector_cache import SHARED, bench_embedder_config, read_jsonl
from paperfeed.adapters.embed import open_embedder
from paperfeed.adapters.embed.cpu import available_cores, cpu_info
from paperfeed.adapters.embed.sentence_transformers import cpu_supports_bf16
from paperfeed.domain.search import Embedder

F32 = npt.NDArray[np.float32]

BACKENDS = {  # label -> (backend, bf16)
    "torch fp32": ("torch", False),
    "torch bf16": ("torch", True),
    "onnx fp32": ("onnx", False),
    "onnx int8": ("onnx-int8", False),
}
BATCH = 128  # the indexer's default committed batch


def sample_abstracts(n: int) -> list[str]:
    """``n`` abstracts spread over the arXiv listings file (recent CS papers, realistic lengths)."""
    docs = [d for d in read_jsonl(SHARED / "data" / "arxiv_cats.jsonl.gz", limit=n * 20) if d.abstract]
    step = max(1, len(docs) // n)
    return [d.text for d in docs[::step][:n]]


def embed_timed(embedder: Embedder, texts: Sequence[str], passes: int) -> tuple[F32, float, float]:
    """Vectors, abstracts per wall-clock second, and per CPU second (steadier on a shared machine).

    The best of ``passes`` passes counts: the first one also pays for one-off work per input shape
    (oneDNN builds its bf16 kernels per shape), which a long indexing job pays only once.
    """
    embedder.embed(list(texts[:16]))  # load the model (and build the ONNX files) outside the timing
    best_rate = best_cpu_rate = 0.0
    vectors = np.zeros((0, 0), dtype=np.float32)
    for _ in range(passes):
        started, cpu = time.perf_counter(), time.process_time()
        parts = [embedder.embed(list(texts[i : i + BATCH])) for i in range(0, len(texts), BATCH)]
        seconds, cpu_seconds = time.perf_counter() - started, time.process_time() - cpu
        vectors = np.vstack(parts)
        best_rate = max(best_rate, len(texts) / seconds)
        best_cpu_rate = max(best_cpu_rate, len(texts) / cpu_seconds)
    return vectors, best_rate, best_cpu_rate


def neighbours(vectors: F32, k: int = 10) -> npt.NDArray[np.int64]:
    sims = vectors @ vectors.T
    np.fill_diagonal(sims, -np.inf)
    return np.argsort(-sims, axis=1)[:, :k]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--n", type=int, default=500, help="abstracts to embed")
    parser.add_argument(
        "--threads", type=int, nargs="*", default=None, help="thread counts (default: 1 and all cores)"
    )
    parser.add_argument("--passes", type=int, default=2, help="timed passes per backend (best counts)")
    parser.add_argument("--backends", nargs="*", default=list(BACKENDS), choices=list(BACKENDS))
    parser.add_argument("--no-spin", action="store_true", help="ONNX Runtime threads sleep when idle")
    args = parser.parse_args()
    cores = available_cores()
    thread_counts = args.threads or sorted({1, cores})
    texts = sample_abstracts(args.n)
    print(
        f"CPU: {cpu_info().describe()}; {cores} cores for this process; {len(texts)} abstracts; "
        f"load average {os.getloadavg()[0]:.2f}"
    )
    reference: F32 | None = None
    ref_nn: npt.NDArray[np.int64] | None = None
    rows: list[tuple[str, ...]] = []
    for label in args.backends:
        backend, bf16 = BACKENDS[label]
        if bf16 and not cpu_supports_bf16():
            rows.append((label, "-", "unsupported", "-", "-", "-", "-"))
            continue
        for threads in thread_counts:
            config = replace(
                bench_embedder_config(backend, threads, torch_bf16=bf16), spinning=not args.no_spin
            )
            embedder = open_embedder(config)  # torch threads are process-wide: set again per run
            vectors, rate, cpu_rate = embed_timed(embedder, texts, args.passes)
            if reference is None and label == "torch fp32":
                reference, ref_nn = vectors, neighbours(vectors)
            if reference is not None and ref_nn is not None:
                cos = (vectors * reference).sum(axis=1)
                nn = neighbours(vectors)
                overlap = np.mean([len(set(a) & set(b)) / 10 for a, b in zip(nn, ref_nn, strict=True)])
                agreement = (f"{cos.min():.4f}", f"{cos.mean():.4f}", f"{overlap:.3f}")
            else:
                agreement = ("-", "-", "-")
            rows.append((label, str(threads), f"{rate:,.1f}", f"{cpu_rate:,.1f}", *agreement))
            print(f"  {label}, {threads} threads: done ({embedder.model_id})", flush=True)
    header = ("backend", "threads", "abstracts/s", "per CPU-s", "cos min", "cos mean", "top-10 overlap")
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    for row in [header, *rows]:
        cells = [
            cell.rjust(w) if i else cell.ljust(w) for i, (cell, w) in enumerate(zip(row, widths, strict=True))
        ]
        print("  ".join(cells))
    print(f"(agreement is to torch fp32; load average now {os.getloadavg()[0]:.2f})")


if __name__ == "__main__":
    main()
