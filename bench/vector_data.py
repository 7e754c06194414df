"""Synthetic but embedding-like vectors and exact ground truth for the vector benchmarks.

Sentence-embedding vectors are not uniform on the sphere: their variance decays over principal directions
(low intrinsic dimension), they share a common offset (anisotropy) and clump into topics and sub-topics.
Uniform random vectors are the hardest, least realistic case for HNSW and int8 quantisation, so the
generator reproduces those traits instead, tuned so that on 50k vectors the mean cosine of a paper's
nearest neighbour is ~0.80, of its 10th ~0.70, of a random pair ~0.06, with ~40 % of variance in 30
principal components (all-MiniLM-L6-v2 on abstracts looks similar).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import numpy.typing as npt

F32 = npt.NDArray[np.float32]
I64 = npt.NDArray[np.int64]

CACHE = Path("/tmp/paperfeed-bench")


def synthetic(n: int, dim: int = 384, *, topics: int = 300, subtopics: int = 20, seed: int = 0) -> F32:
    """``n`` unit vectors from a hierarchical, anisotropic Gaussian mixture (cached on /tmp by size/seed)."""
    path = CACHE / f"synthetic-v2-{n}-{dim}-{topics}x{subtopics}-{seed}.npy"
    if path.exists():
        return np.load(path)  # type: ignore[no-any-return]
    rng = np.random.default_rng(seed)
    scale = (np.arange(1, dim + 1, dtype=np.float32) ** -0.35).astype(np.float32)  # variance ~ i^-0.7
    unit = scale / np.linalg.norm(scale)
    rotation = np.linalg.qr(rng.standard_normal((dim, dim)))[0].astype(np.float32)
    common = rng.standard_normal(dim).astype(np.float32)
    common *= 0.35 / np.linalg.norm(common)
    topic = rng.standard_normal((topics, dim)).astype(np.float32) * scale
    topic /= np.linalg.norm(topic, axis=1, keepdims=True)
    sub = topic[:, None, :] + 0.7 * rng.standard_normal((topics, subtopics, dim)).astype(np.float32) * unit
    centers = sub.reshape(-1, dim)
    weights = rng.pareto(1.5, len(centers)) + 1.0  # heavy-tailed topic sizes
    labels = rng.choice(len(centers), size=n, p=weights / weights.sum())
    out = np.empty((n, dim), dtype=np.float32)
    step = 100_000
    for start in range(0, n, step):
        stop = min(n, start + step)
        noise = 0.7 * rng.standard_normal((stop - start, dim)).astype(np.float32) * unit
        block = (centers[labels[start:stop]] + noise) @ rotation.T + common
        block /= np.linalg.norm(block, axis=1, keepdims=True)
        out[start:stop] = block
    CACHE.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp.npy")
    np.save(tmp, out)
    tmp.replace(path)
    return out


def queries_like(base: F32, count: int, *, seed: int = 1) -> F32:
    """Held-out queries: perturbed copies of random stored vectors (a query is near, not equal, to papers)."""
    rng = np.random.default_rng(seed)
    picks = base[rng.choice(len(base), size=count, replace=False)]
    q = picks + rng.standard_normal(picks.shape).astype(np.float32) * (0.6 / np.sqrt(base.shape[1]))
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    return np.asarray(q, dtype=np.float32)


def exact_topk(base: F32, queries: F32, k: int, mask: npt.NDArray[np.bool_] | None = None) -> I64:
    """Exact top-``k`` row numbers by inner product (rows outside ``mask`` excluded), chunked for memory."""
    best_scores = np.full((len(queries), k), -np.inf, dtype=np.float32)
    best_rows = np.full((len(queries), k), -1, dtype=np.int64)
    step = 200_000
    for start in range(0, len(base), step):
        chunk = base[start : start + step]
        scores = queries @ chunk.T
        if mask is not None:
            scores[:, ~mask[start : start + step]] = -np.inf
        kk = min(k, scores.shape[1])
        part = np.argpartition(-scores, kk - 1, axis=1)[:, :kk]
        merged_scores = np.concatenate([best_scores, np.take_along_axis(scores, part, 1)], axis=1)
        merged_rows = np.concatenate([best_rows, part + start], axis=1)
        order = np.argsort(-merged_scores, axis=1)[:, :k]
        best_scores = np.take_along_axis(merged_scores, order, 1)
        best_rows = np.take_along_axis(merged_rows, order, 1)
    return best_rows


def recall_at(found: list[list[int]] | I64, truth: I64, k: int) -> float:
    """Mean fraction of the true top-``k`` present in the found top-``k``."""
    hits = 0
    for got, want in zip(found, truth, strict=True):
        hits += len(set(list(got)[:k]) & {int(w) for w in want[:k] if w >= 0})
    total = sum(int((row[:k] >= 0).sum()) for row in truth)
    return hits / max(1, total)
