"""Exact nearest neighbours by one matrix product: the whole index for small corpora, and the engine behind
the HNSW index's re-scoring and its selective-filter path.

At a few tens of thousands of rows a float32 matrix-vector product takes well under a millisecond to a few
milliseconds on this hardware, is always right, and needs no build step; it is the reference every ANN
result is measured against.
"""

from __future__ import annotations

import threading
from typing import Any

import numpy as np
import numpy.typing as npt

__all__ = ["best_k", "top_k"]

Rows = npt.NDArray[np.int64]
Scores = npt.NDArray[np.float32]

_CHUNK = 2_048  # rows gathered/converted per step: small enough to stay in cache, big enough for BLAS
_buffers = threading.local()  # per-thread scratch, reused so scoring never page-faults fresh memory


def top_k(
    matrix: npt.NDArray[Any],
    query: npt.NDArray[np.float32],
    k: int,
    rows: Rows | None = None,
    *,
    valid: npt.NDArray[np.bool_] | None = None,
) -> tuple[Rows, Scores]:
    """Best ``k`` rows of ``matrix`` by inner product with ``query``, best first (ties: lower row first).

    ``rows`` restricts the search to those row numbers; otherwise every row is scored and ``valid`` (a mask
    over all rows) can rule some out. float16 matrices are scored in float32 chunks.
    """
    if k <= 0:
        return np.zeros(0, np.int64), np.zeros(0, np.float32)
    if rows is not None:
        scores = _scores(matrix, query, rows)
        candidates = rows
    else:
        scores = _scores(matrix, query, None)
        candidates = np.arange(len(matrix), dtype=np.int64)
        if valid is not None:
            scores, candidates = scores[valid], candidates[valid]
    return best_k(candidates, scores, k)


def best_k(candidates: Rows, scores: Scores, k: int) -> tuple[Rows, Scores]:
    """The ``k`` best-scored candidates, best first (ties: lower row first)."""
    if len(scores) > k:
        part = np.argpartition(-scores, k - 1)[:k]
        scores, candidates = scores[part], candidates[part]
    order = np.lexsort((candidates, -scores))
    return candidates[order], scores[order]


def _scores(matrix: npt.NDArray[Any], query: npt.NDArray[np.float32], rows: Rows | None) -> Scores:
    """Inner products of ``query`` with ``matrix`` rows (all, or ``rows``), in float32.

    A float32 matrix scanned whole is one BLAS call. Otherwise rows are gathered (and float16 widened) chunk
    by chunk into reused buffers: a naive ``matrix[rows].astype(float32)`` allocates two fresh arrays per
    query, and page-faulting them in costs more than the arithmetic.
    """
    if rows is None and matrix.dtype == np.float32:
        return np.asarray(matrix @ query, dtype=np.float32)
    count = len(matrix) if rows is None else len(rows)
    out = np.empty(count, dtype=np.float32)
    gathered, widened = _scratch(matrix.dtype, matrix.shape[1])
    for start in range(0, count, _CHUNK):
        stop = min(count, start + _CHUNK)
        size = stop - start
        block = widened[:size]
        if rows is None:
            np.copyto(block, matrix[start:stop])
        elif matrix.dtype == np.float32:
            np.take(matrix, rows[start:stop], axis=0, out=block)
        else:
            np.take(matrix, rows[start:stop], axis=0, out=gathered[:size])
            np.copyto(block, gathered[:size])
        np.dot(block, query, out=out[start:stop])
    return out


def _scratch(dtype: np.dtype[Any], dimension: int) -> tuple[npt.NDArray[Any], npt.NDArray[np.float32]]:
    key = (dtype, dimension)
    if getattr(_buffers, "key", None) != key:
        _buffers.key = key
        _buffers.gathered = np.empty((_CHUNK, dimension), dtype=dtype)
        _buffers.widened = np.empty((_CHUNK, dimension), dtype=np.float32)
    return _buffers.gathered, _buffers.widened
