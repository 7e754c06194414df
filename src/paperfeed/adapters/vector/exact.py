"""Exact nearest neighbours by one matrix product: the whole index for small corpora, and the engine behind
the HNSW index's re-scoring and its selective-filter path.

At a few tens of thousands of rows a float32 matrix-vector product takes well under a millisecond to a few
milliseconds on this hardware, is always right, and needs no build step; it is the reference every ANN
result is measured against.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

__all__ = ["top_k"]

Rows = npt.NDArray[np.int64]
Scores = npt.NDArray[np.float32]

_CHUNK = 65_536  # rows converted to float32 at a time when the matrix is stored as float16


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
        scores = _scores(matrix[rows], query)
        candidates = rows
    else:
        scores = _scores(matrix, query)
        candidates = np.arange(len(matrix), dtype=np.int64)
        if valid is not None:
            scores, candidates = scores[valid], candidates[valid]
    if len(scores) > k:
        part = np.argpartition(-scores, k - 1)[:k]
        scores, candidates = scores[part], candidates[part]
    order = np.lexsort((candidates, -scores))
    return candidates[order], scores[order]


def _scores(matrix: npt.NDArray[Any], query: npt.NDArray[np.float32]) -> Scores:
    if matrix.dtype == np.float32:
        return np.asarray(matrix @ query, dtype=np.float32)
    out = np.empty(len(matrix), dtype=np.float32)
    for start in range(0, len(matrix), _CHUNK):
        out[start : start + _CHUNK] = matrix[start : start + _CHUNK].astype(np.float32) @ query
    return out
