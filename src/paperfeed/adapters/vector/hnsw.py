"""The HNSW graph behind the large-corpus vector index: faiss ``IndexHNSWSQ`` (int8 codes, inner product).

Why faiss-cpu, measured with ``bench/vector_libs.py`` on this 2-core machine (384-d embedding-like vectors,
M=16, efConstruction=128, 50 candidates re-scored exactly against float16 copies, k=10, one query thread;
the machine was shared with other jobs, so build times and p99s are inflated):

==============  =====  =======  =======  ===========  ==============  ==============  ================
library         n      build s  size MB  p50 ms       R@10 raw        R@10 re-scored  10 % filter
==============  =====  =======  =======  ===========  ==============  ==============  ================
usearch i8      200k   31       102      0.40 / 0.47  0.904 / 0.911   0.991 / 0.998   1.1-1.7 ms, R 1.0
usearch f16     200k   32       175      0.26 / 0.35  0.981 / 0.991   0.981 / 0.991   1.3-1.4 ms, R 1.0
faiss SQ8       200k   46       101      0.25 / 0.32  0.974 / 0.984   0.987 / 0.998   0.25-0.34 ms
hnswlib f32     200k   44       321      0.19 / 0.25  0.988 / 1.000   0.987 / 0.998   0.9-2.4 ms, R 1.0
usearch i8      1M     1210     508      0.52 / 0.62  0.771 / 0.811   0.887 / 0.935   6.6-6.8 ms
faiss SQ8       1M     2647     504      0.56 / 0.74  0.866 / 0.933   0.885 / 0.953   0.6-0.9 ms
==============  =====  =======  =======  ===========  ==============  ==============  ================

(pairs are efSearch 64 / 128.) Unfiltered speed and re-scored recall are a wash; filtering decides it.
faiss applies a row bitmap (``IDSelectorBitmap``) *inside* the traversal, 5-10x faster than the growing
oversampling usearch needs (its Python API has no filter) and than hnswlib's per-node Python callback.
hnswlib also stores float32 only: 1.5 GB at 1M before the graph, which breaks the 2 GB serving budget.
faiss's per-dimension int8 quantiser also ranks better before re-scoring than usearch's fixed-scale i8.
Costs accepted: ~1.5x slower builds than usearch, and no node deletion: the index masks dead rows with the
same bitmap and rebuilds the graph without them on save once they are numerous (see :mod:`.index`).

Graph node ``i`` is row ``i`` of the row store: both are append-only and grow together.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from paperfeed.domain.search import VectorIndexUnavailable
from paperfeed.domain.wording import count

__all__ = ["EF_SEARCH", "GRAPH_FILE", "HnswGraph", "read_ahead"]


class _Faiss:
    """faiss, imported on first use: a store too small for a graph never loads it (~13 MB of a web
    process, issue #39 item 6). Typed ``Any``: the bundled stubs lack SearchParametersHNSW and mistype
    several constructors."""

    def __getattr__(self, name: str) -> Any:
        import faiss as lib

        return getattr(lib, name)


faiss: Any = _Faiss()

GRAPH_FILE = "hnsw.faiss"
M = 16
EF_CONSTRUCTION = 128
EF_SEARCH = 512
"""Search breadth for unfiltered queries. 1M embedding-like vectors, 100 candidates re-scored
(``bench/vector_speed.py --ef``): ef 256 -> recall@10 0.969 at p50 1.2 ms, 384 -> 0.976 at 1.4 ms,
512 -> 0.983 at 2.0 ms. 512 keeps a margin over the 0.97 target, far under the 10 ms budget."""
TRAIN_SAMPLE = 100_000
THREADED_ADD_ROWS = 10_000
"""Rows added at once from which every core builds (seconds of work at ~300 us a row): a bulk catch-up of
the sentence vectors adds pages of ~13,000 sentences (2,000 papers), which 20,000 left to one thread."""
FACTORY = f"HNSW{M}_SQfp16"
"""float16 codes, the same numbers as the row store's float16 vectors. Measured on 100k of the 1M bench
vectors (``efSearch`` 512, 100 candidates re-scored, one thread): SQ8 p50 1.65 ms, recall@10 0.988; fp16
p50 1.13 ms, recall 0.9995 (no int8 decoding; F16C widens in hardware). Since the codes are the vectors
themselves, the candidates are re-scored from the graph's own (memory-mapped) codes and a serving process
never touches ``vectors.npy`` to search: at 1M papers that keeps ~770 MB of mapped pages out of its RSS,
which the SQ8 codes (384 MB) plus the float16 rows (768 MB) both needed. Graphs written with SQ8 codes
still load and are re-scored from the row store, as before."""

Rows = npt.NDArray[np.int64]
Mask = npt.NDArray[np.bool_]


def read_ahead(path: Path) -> None:
    """Ask the kernel to start reading ``path`` into the page cache (no wait, no private memory)."""
    advise = getattr(os, "posix_fadvise", None)
    if advise is None:
        return
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        advise(fd, 0, 0, os.POSIX_FADV_WILLNEED)
    except OSError:
        pass
    finally:
        os.close(fd)


class HnswGraph:
    """An int8 HNSW graph over rows ``0..len-1``; search returns candidate rows for exact re-scoring."""

    def __init__(self, index: Any, dimension: int, trained_on: int, *, path: Path | None = None) -> None:
        self._index = index
        self._dimension = dimension
        self._trained_on = trained_on
        self._mapped_from = path  # set while the codes are memory-mapped from this (read-only) file
        storage = faiss.downcast_index(index.storage)
        self._lossless = bool(storage.sq.qtype == faiss.ScalarQuantizer.QT_fp16)  # fixed for its life

    @classmethod
    def empty(cls, dimension: int, *, ef_construction: int = EF_CONSTRUCTION) -> HnswGraph:
        index = faiss.index_factory(dimension, FACTORY, faiss.METRIC_INNER_PRODUCT)
        index.hnsw.efConstruction = ef_construction  # saved with the graph: later adds keep it
        return cls(index, dimension, 0)

    @classmethod
    def build(
        cls, dimension: int, vectors: npt.NDArray[Any], *, ef_construction: int = EF_CONSTRUCTION
    ) -> HnswGraph:
        """A graph over every row of ``vectors`` (the quantiser is trained on a sample of them)."""
        graph = cls.empty(dimension, ef_construction=ef_construction)
        graph.add(np.arange(len(vectors), dtype=np.int64), vectors)
        return graph

    @staticmethod
    def library_version() -> str:
        return f"faiss-cpu {faiss.__version__}"

    def describe(self) -> str:
        return f"{FACTORY} efConstruction={self.ef_construction} efSearch={EF_SEARCH}"

    @property
    def ef_construction(self) -> int:
        return int(self._index.hnsw.efConstruction)

    def __len__(self) -> int:
        return int(self._index.ntotal)

    @property
    def trained_on(self) -> int:
        return self._trained_on

    @property
    def lossless(self) -> bool:
        """Whether the codes are float16 copies of the vectors (so they can re-score candidates)."""
        return self._lossless

    def can_absorb(self, extra: int) -> bool:
        """Whether ``extra`` more rows can be added without the int8 ranges going stale.

        An int8 quantiser's ranges are learnt once, from the rows present then; past twice that many rows
        the graph is rebuilt (and retrained) instead, which keeps total build work linear in the final
        size and turns a bulk load into a single build. float16 codes learn nothing: always.
        """
        if self.lossless:
            return True
        return bool(self._index.is_trained) and self._trained_on * 2 >= len(self) + extra

    def reconstruct(self, rows: Rows) -> npt.NDArray[np.float32]:
        """The stored codes of ``rows`` widened to float32 (exact for float16 codes)."""
        storage = faiss.downcast_index(self._index.storage)  # a view; self._index owns it
        return np.asarray(storage.reconstruct_batch(np.ascontiguousarray(rows, dtype=np.int64)))

    def add(self, rows: Rows, vectors: npt.NDArray[Any]) -> None:
        if len(rows) == 0:
            return
        if int(rows[0]) != len(self) or int(rows[-1]) != len(self) + len(rows) - 1:
            raise AssertionError(
                f"graph has {count(len(self), 'node')} but rows {rows[0]}..{rows[-1]} were added"
            )
        if self._mapped_from is not None:
            # A mapped graph cannot grow: the first write reads the file into memory (readers never write).
            self._index = self._read(self._mapped_from, 0)
            self._mapped_from = None
        step = 100_000
        if not self._index.is_trained:
            sample = vectors[:: max(1, len(vectors) // TRAIN_SAMPLE)]
            self._index.train(np.ascontiguousarray(sample, dtype=np.float32))
            self._trained_on = len(vectors)
        # Threads pay off on big batches only; on small ones (or a busy machine) OpenMP spinning costs more.
        faiss.omp_set_num_threads(os.cpu_count() or 1 if len(vectors) >= THREADED_ADD_ROWS else 1)
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

    def scan(self, query: npt.NDArray[np.float32], count: int, mask: Mask | None) -> Rows:
        """Brute-force the int8 codes (no graph) for the best ``count`` rows where ``mask`` is true.

        For small allowed sets: faiss skips non-members by bitmap and scores members with SIMD straight from
        the codes, several times faster than gathering and widening float16 rows in NumPy, and not subject
        to the graph's recall loss under selective filters. The caller re-scores the candidates exactly.
        """
        if len(self) == 0:
            return np.zeros(0, dtype=np.int64)
        faiss.omp_set_num_threads(1)
        storage = faiss.downcast_index(self._index.storage)  # a view; self._index owns it
        params = faiss.SearchParameters()
        bits = None
        if mask is not None:
            bits = np.packbits(mask, bitorder="little")
            params.sel = faiss.IDSelectorBitmap(len(bits), faiss.swig_ptr(bits))
        _, labels = storage.search(query.reshape(1, -1), min(count, len(self)), params=params)
        del bits
        found: Rows = labels[0].astype(np.int64)
        return found[found >= 0]

    def save(self, path: Path) -> None:
        faiss.write_index(self._index, os.fspath(path))

    @classmethod
    def load(cls, path: Path, dimension: int, rows: int, trained_on: int) -> HnswGraph:
        """Open a saved graph with its codes memory-mapped, not read.

        A serving process only searches, so it touches just the pages its queries visit: at 1M papers this
        keeps the codes out of private memory (they stay shareable page cache between web workers). The
        file is never modified in place (a new generation is written on save), so the mapping stays valid.
        The kernel is asked to read the file ahead in the background, so the first queries after a start
        meet page-cache hits rather than disk reads (at 1M, cold first queries took up to 0.8 s).
        """
        index = cls._read(path, faiss.IO_FLAG_MMAP_IFC)
        read_ahead(path)
        if type(index).__name__ != "IndexHNSWSQ" or index.d != dimension or index.ntotal != rows:
            raise VectorIndexUnavailable(
                f"{path}: HNSW graph does not match its rows ({type(index).__name__}, d={index.d}, "
                f"{count(index.ntotal, 'node')}; expected d={dimension}, {count(rows, 'node')})"
            )
        return cls(index, dimension, trained_on, path=path)

    @staticmethod
    def _read(path: Path, flags: int) -> Any:
        try:
            return faiss.read_index(os.fspath(path), flags)  # already the concrete class; never downcast it
        except RuntimeError as exc:
            reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            raise VectorIndexUnavailable(f"{path}: unreadable HNSW graph ({reason})") from exc
