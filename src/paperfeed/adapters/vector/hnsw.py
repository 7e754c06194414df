"""The HNSW graph behind the large-corpus vector index: faiss ``IndexHNSWSQ`` (int8 codes, inner product).

Why faiss-cpu: measured on this 2-core machine (``bench/vector_libs.py``, 384-d embedding-like vectors,
M=16, efConstruction=128, 50 candidates re-scored exactly against float16 vectors), usearch (i8), faiss
(SQ8) and hnswlib (f32 only) reach the same re-scored recall@10 (0.99+ at ef=64..128, 200k and 1M) at
sub-millisecond p50. What separates them is filtering and memory:

* faiss applies a row bitmap (``IDSelectorBitmap``) *inside* the graph traversal, so a filter passing 10 %
  of the corpus costs ~0.3 ms; usearch's Python API has no filter, and growing oversampling cost 4-6x more;
  hnswlib calls a Python function per visited node (1-2 ms) and stores float32 only (1M x 384 = 1.5 GB,
  which with the re-scoring copy breaks the 2 GB serving budget).
* faiss's scalar quantiser is trained per dimension, so its int8 codes rank better before re-scoring
  (raw recall@10 0.97-0.98 vs 0.90 for usearch's fixed-scale i8); build is ~1.5x slower than usearch.

faiss HNSW cannot delete nodes: the index keeps dead rows out with the same bitmap and rebuilds the graph
without them on save once they are numerous (see :mod:`.index`). Graph node ``i`` is row ``i`` of the row
store: both are append-only and grow together.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import faiss as _faiss
import numpy as np
import numpy.typing as npt

from paperfeed.domain.search import VectorIndexUnavailable

__all__ = ["EF_SEARCH", "GRAPH_FILE", "HnswGraph"]

faiss: Any = _faiss  # the bundled stubs lack SearchParametersHNSW and mistype several constructors

GRAPH_FILE = "hnsw.faiss"
M = 16
EF_CONSTRUCTION = 128
EF_SEARCH = 96
"""Search breadth for unfiltered queries: recall@10 after re-scoring >= 0.99 at 1M (see module doc)."""
TRAIN_SAMPLE = 100_000
FACTORY = f"HNSW{M}_SQ8"

Rows = npt.NDArray[np.int64]
Mask = npt.NDArray[np.bool_]


class HnswGraph:
    """An int8 HNSW graph over rows ``0..len-1``; search returns candidate rows for exact re-scoring."""

    def __init__(self, index: Any, dimension: int, trained_on: int) -> None:
        self._index = index
        self._dimension = dimension
        self._trained_on = trained_on

    @classmethod
    def empty(cls, dimension: int) -> HnswGraph:
        index = faiss.index_factory(dimension, FACTORY, faiss.METRIC_INNER_PRODUCT)
        index.hnsw.efConstruction = EF_CONSTRUCTION
        return cls(index, dimension, 0)

    @classmethod
    def build(cls, dimension: int, vectors: npt.NDArray[Any]) -> HnswGraph:
        """A graph over every row of ``vectors`` (the quantiser is trained on a sample of them)."""
        graph = cls.empty(dimension)
        graph.add(np.arange(len(vectors), dtype=np.int64), vectors)
        return graph

    @staticmethod
    def library_version() -> str:
        return f"faiss-cpu {faiss.__version__}"

    def describe(self) -> str:
        return f"{FACTORY} efConstruction={EF_CONSTRUCTION} efSearch={EF_SEARCH}"

    def __len__(self) -> int:
        return int(self._index.ntotal)

    @property
    def trained_on(self) -> int:
        return self._trained_on

    def can_absorb(self, extra: int) -> bool:
        """Whether ``extra`` more rows can be added without the int8 ranges going stale.

        The quantiser's ranges are learnt once, from the rows present then; past twice that many rows the
        graph is rebuilt (and retrained) instead, which keeps total build work linear in the final size and
        turns a bulk load into a single build.
        """
        return bool(self._index.is_trained) and self._trained_on * 2 >= len(self) + extra

    def add(self, rows: Rows, vectors: npt.NDArray[Any]) -> None:
        if len(rows) == 0:
            return
        if int(rows[0]) != len(self) or int(rows[-1]) != len(self) + len(rows) - 1:
            raise AssertionError(f"graph has {len(self)} nodes but rows {rows[0]}..{rows[-1]} were added")
        step = 100_000
        if not self._index.is_trained:
            sample = vectors[:: max(1, len(vectors) // TRAIN_SAMPLE)]
            self._index.train(np.ascontiguousarray(sample, dtype=np.float32))
            self._trained_on = len(vectors)
        # Threads pay off on big batches only; on small ones (or a busy machine) OpenMP spinning costs more.
        faiss.omp_set_num_threads(os.cpu_count() or 1 if len(vectors) >= 20_000 else 1)
        try:
            for start in range(0, len(vectors), step):
                self._index.add(np.ascontiguousarray(vectors[start : start + step], dtype=np.float32))
        finally:
            faiss.omp_set_num_threads(1)  # one query per call: a thread team only adds wake-up latency

    def search(self, query: npt.NDArray[np.float32], count: int, mask: Mask | None, *, ef: int) -> Rows:
        """Up to ``count`` rows near ``query`` among rows where ``mask`` is true (all rows if ``None``)."""
        if len(self) == 0:
            return np.zeros(0, dtype=np.int64)
        faiss.omp_set_num_threads(1)
        params = faiss.SearchParametersHNSW()
        params.efSearch = max(ef, count)
        bits = None
        if mask is not None:
            bits = np.packbits(mask, bitorder="little")
            params.sel = faiss.IDSelectorBitmap(len(bits), faiss.swig_ptr(bits))
        _, labels = self._index.search(query.reshape(1, -1), min(count, len(self)), params=params)
        del bits  # kept alive until here: the selector points into it
        found: Rows = labels[0].astype(np.int64)
        return found[found >= 0]

    def save(self, path: Path) -> None:
        faiss.write_index(self._index, os.fspath(path))

    @classmethod
    def load(cls, path: Path, dimension: int, rows: int, trained_on: int) -> HnswGraph:
        try:
            index = faiss.read_index(os.fspath(path))  # already the concrete class; never downcast it
        except RuntimeError as exc:
            reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            raise VectorIndexUnavailable(f"{path}: unreadable HNSW graph ({reason})") from exc
        if type(index).__name__ != "IndexHNSWSQ" or index.d != dimension or index.ntotal != rows:
            raise VectorIndexUnavailable(
                f"{path}: HNSW graph does not match its rows ({type(index).__name__}, d={index.d}, "
                f"{index.ntotal} nodes; expected d={dimension}, {rows} nodes)"
            )
        return cls(index, dimension, trained_on)
