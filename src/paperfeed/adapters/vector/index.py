"""The vector index: rows and facets (:mod:`.base`), exact search (:mod:`.exact`), optionally an HNSW graph
(:mod:`.hnsw`), persisted in an atomically swapped folder.

One class serves three policies so that a corpus can grow from "exact" into "hnsw" without a second code
path: ``exact`` never builds a graph and keeps float32 vectors; ``hnsw`` always has one and keeps float16
vectors for exact re-scoring; ``auto`` behaves as ``exact`` below :data:`AUTO_HNSW_MIN_ROWS` live papers and
switches to ``hnsw`` when a save finds the corpus has grown past it.

Filtered search never starves: the filter is resolved to the exact set of allowed rows first. With a graph,
a set below :data:`BRUTE_FORCE_SHARE` of the rows is brute-forced on the graph's codes; a larger one is
searched in the graph with the filter applied inside the traversal. Either way the candidates are re-scored
exactly (from the graph's own float16 codes; from the float16 rows for graphs written with int8 codes), and
if fewer than ``k`` come back the exact path answers instead.

Updates: a replaced or removed paper's row is marked dead (masked out of every search) and dropped when a
save compacts. New rows join the graph incrementally (an int8 graph only while its quantiser still fits
them); otherwise (a bulk load) the graph lags, the newer rows are scanned exactly, and the next save builds
the graph once.

Concurrency: one writer process at a time (the embedding job); any number of reader processes, which call
:meth:`StoredVectorIndex.reload_if_changed` to pick up a newly saved generation. Within a process a lock
serialises mutation, search and reload.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from paperfeed.adapters.vector.base import (
    IndexFolder,
    RowStore,
    Selection,
    Stamp,
    StoredManifest,
    check_compatible,
    utc_now,
)
from paperfeed.adapters.vector.exact import best_k, top_k
from paperfeed.adapters.vector.hnsw import EF_CONSTRUCTION, EF_SEARCH, GRAPH_FILE, HnswGraph
from paperfeed.domain.search import (
    CENTROID_SAMPLE,
    IndexManifest,
    ScoredId,
    SearchFilters,
    VectorIndexUnavailable,
    VectorRecord,
    Vectors,
)
from paperfeed.domain.wording import count

__all__ = [
    "AUTO_HNSW_MIN_ROWS",
    "BRUTE_FORCE_SHARE",
    "ExactVectorIndex",
    "HnswVectorIndex",
    "Policy",
    "StoredVectorIndex",
]

Policy = Literal["exact", "hnsw", "auto"]

AUTO_HNSW_MIN_ROWS = 50_000
"""``auto`` switches to HNSW from here: below it an exact float32 scan takes under ~7 ms (200k: 26 ms)."""

BRUTE_FORCE_SHARE = 0.03
"""A filter allowing at most this share of the rows is answered by brute force over the graph's codes (faiss
skips the others by bitmap; ~0.7 us per allowed row here) instead of a graph walk. Measured at 200k: a graph
walk under a 1 % filter found recall@10 0.84 in 13 ms where brute force found 1.00 in 5 ms; from 5 % up the
walk wins (1.00 in 1.4-1.9 ms against 12-16 ms)."""
_RESCORE_CHUNK = 8_192  # rows widened to float32 at a time when scoring from graph codes (12 MB at 384-d)

RESCORE_CANDIDATES = 100
"""Graph hits re-scored exactly per query: ranking errors of the walk below this depth are repaired."""

COMPACT_DEAD_FRACTION = 0.2
"""Saving an HNSW index rebuilds it without dead rows once they exceed this share of its rows."""


class StoredVectorIndex:
    """A :class:`~paperfeed.domain.search.VectorIndex` kept in a folder; see the module docstring."""

    def __init__(
        self,
        path: Path,
        *,
        model_id: str,
        dimension: int,
        policy: Policy,
        brute_force_share: float = BRUTE_FORCE_SHARE,
        auto_hnsw_min_rows: int = AUTO_HNSW_MIN_ROWS,
        ef_search: int = EF_SEARCH,
        ef_construction: int = EF_CONSTRUCTION,
    ) -> None:
        if dimension <= 0:
            raise ValueError(f"dimension must be positive, got {dimension}")
        if policy not in ("exact", "hnsw", "auto"):
            raise ValueError(f"unknown vector index policy {policy!r}")
        self._brute_force_share = brute_force_share
        self._auto_hnsw_min_rows = auto_hnsw_min_rows
        self._ef_search = ef_search
        self._ef_construction = ef_construction
        self._folder = IndexFolder(path)
        self._model_id = model_id
        self._dimension = dimension
        self._policy: Policy = policy
        self._lock = threading.RLock()
        self._stored: StoredManifest | None = None
        self._stamp: Stamp | None = None
        self._dirty = False
        self._centroid: tuple[tuple[int, int, int], Vectors | None] | None = None
        self._store, self._graph = self._load()

    # -- VectorIndex -------------------------------------------------------------------------------------

    @property
    def path(self) -> Path:
        return self._folder.path

    @property
    def kind(self) -> str:
        return "exact" if self._graph is None else "hnsw"

    @property
    def manifest(self) -> IndexManifest:
        with self._lock:
            if self._stored is not None and not self._dirty:
                return self._stored.manifest
            return IndexManifest(
                kind=self.kind,
                model_id=self._model_id,
                dimension=self._dimension,
                count=len(self._store.row_of),
                built_at=self._stored.manifest.built_at if self._stored else "",
                extra=self._extra(),
            )

    def __len__(self) -> int:
        return self._store.live_count

    def upsert(self, records: Iterable[VectorRecord]) -> None:
        with self._lock:
            new_rows, _ = self._store.append(records)
            if len(new_rows):
                graph = self._graph  # dead rows stay in the graph, masked out until compaction
                if graph is not None and len(graph) == new_rows[0] and graph.can_absorb(len(new_rows)):
                    graph.add(new_rows, self._store.vectors[new_rows])
                # Otherwise the graph lags behind: searches scan the newer rows exactly until save() rebuilds.
                self._dirty = True

    def remove(self, paper_ids: Iterable[str]) -> None:
        with self._lock:
            if len(self._store.kill(paper_ids)):
                self._dirty = True

    def vector(self, paper_id: str) -> Vectors | None:
        return self.vectors([paper_id]).get(paper_id)

    def vectors(self, paper_ids: Sequence[str]) -> dict[str, Vectors]:
        with self._lock:
            row_of = self._store.row_of
            found = [(pid, row) for pid in dict.fromkeys(paper_ids) if (row := row_of.get(pid)) is not None]
            if not found:
                return {}
            rows = np.fromiter((row for _, row in found), dtype=np.int64, count=len(found))
            matrix = np.asarray(self._store.vectors[rows], dtype=np.float32)
        return {pid: matrix[i] for i, (pid, _) in enumerate(found)}

    def centroid(self) -> Vectors | None:
        """The mean of the live vectors, from at most CENTROID_SAMPLE rows spread evenly over the index;
        kept until the rows change (a reload, an upsert or a removal)."""
        with self._lock:
            store = self._store
            key = (id(store), store.n, store.live_count)
            if self._centroid is not None and self._centroid[0] == key:
                return self._centroid[1]
            live = np.flatnonzero(store.alive)
            if len(live) > CENTROID_SAMPLE:
                live = live[np.linspace(0, len(live) - 1, CENTROID_SAMPLE).astype(np.int64)]
            mean = store.vectors[live].astype(np.float32).mean(axis=0) if len(live) else None
            self._centroid = (key, mean)
            return mean

    def search(
        self, vector: Vectors, k: int, filters: SearchFilters | None = None, exclude: Iterable[str] = ()
    ) -> list[ScoredId]:
        query = np.asarray(vector, dtype=np.float32).reshape(-1)
        if query.shape != (self._dimension,):
            raise ValueError(
                f"query vector has {count(query.size, 'dimension')}, the index has {self._dimension}"
            )
        norm = float(np.linalg.norm(query))
        if k <= 0 or not np.isfinite(norm) or norm == 0.0:
            return []
        query = query / norm
        with self._lock:
            store = self._store
            allowed = store.allowed(filters)
            excluded = {store.row_of[pid] for pid in exclude if pid in store.row_of}
            fetch = max(RESCORE_CANDIDATES, 2 * k) + len(excluded)
            scan = store.live_count if allowed is None else allowed.count
            if self._graph is None or scan <= fetch:
                rows, scores = self._exact(query, k, allowed, excluded)
            else:
                # Few allowed rows: brute-force their int8 codes (a graph walk would mostly meet rows the
                # filter rejects). Many: walk the graph with the filter applied inside the traversal.
                brute = scan <= self._brute_force_share * store.n
                rows, scores = self._approximate(self._graph, query, k, fetch, allowed, excluded, brute=brute)
            pairs = zip(rows.tolist(), scores.tolist(), strict=True)
            return [ScoredId(store.ids[r], float(s)) for r, s in pairs]

    def save(self) -> None:
        """Write a new generation and swap it in (no-op when nothing changed since the last save/load)."""
        with self._lock:
            want_graph = self._want_graph(len(self._store.row_of))
            if not self._dirty and self._stored is not None and want_graph == (self._graph is not None):
                return
            store = self._store
            if want_graph:
                store.astype(np.float16)
                lag = store.n - (len(self._graph) if self._graph is not None else 0)
                if (
                    self._graph is None
                    or not self._graph.can_absorb(lag)
                    or store.dead_count > COMPACT_DEAD_FRACTION * max(1, store.n)
                ):
                    store.compact()
                    self._graph = HnswGraph.build(
                        self._dimension, store.vectors, ef_construction=self._ef_construction
                    )
                elif lag:
                    tail = np.arange(store.n - lag, store.n, dtype=np.int64)
                    self._graph.add(tail, store.vectors[tail])
            else:
                store.astype(np.float32)
                self._graph = None
                if store.dead_count:
                    store.compact()
            graph = self._graph
            manifest = IndexManifest(
                kind=self.kind,
                model_id=self._model_id,
                dimension=self._dimension,
                count=store.live_count,
                built_at=utc_now(),
                extra=self._extra(),
            )

            def write(folder: Path) -> None:
                store.write(folder)
                if graph is not None:
                    graph.save(folder / GRAPH_FILE)

            self._stored = self._folder.commit(write, manifest, store.n)
            self._stamp = self._folder.stamp()
            self._dirty = False

    def reload_if_changed(self) -> bool:
        """Load the generation another process saved, if any; one ``stat`` when nothing changed.

        Unsaved local changes are never thrown away: a writer with pending changes does not reload.
        """
        stamp = self._folder.stamp()
        if stamp == self._stamp:
            return False
        with self._lock:
            if self._dirty:
                return False
            current = self._stored.generation if self._stored else None
            found = self._folder.read()
            if found is not None and found[0].generation == current:
                self._stamp = found[1]
                return False
            self._store, self._graph = self._load()
            return True

    # -- internals ---------------------------------------------------------------------------------------

    def _want_graph(self, live: int) -> bool:
        if self._policy == "auto":
            if self._graph is not None:
                return live >= self._auto_hnsw_min_rows // 2  # hysteresis: no flapping around the threshold
            return live >= self._auto_hnsw_min_rows
        return self._policy == "hnsw"

    def _extra(self) -> dict[str, str]:
        extra = {"numpy": np.__version__, "policy": self._policy}
        if self._graph is not None:
            extra["library"] = HnswGraph.library_version()
            extra["graph"] = self._graph.describe()
            if not self._graph.lossless:  # int8 ranges learnt from this many rows
                extra["trained_on"] = str(self._graph.trained_on)
        return extra

    def _exact(
        self, query: Vectors, k: int, allowed: Selection | None, excluded: set[int]
    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]]:
        store = self._store
        if allowed is not None:
            rows = allowed.rows()
            if excluded:
                rows = rows[~np.isin(rows, list(excluded))]
            return top_k(store.vectors, query, k, rows)
        valid: npt.NDArray[np.bool_] | None = None
        if store.dead_count or excluded:
            valid = store.alive.copy()
            valid[list(excluded)] = False
        return top_k(store.vectors, query, k, valid=valid)

    def _approximate(
        self,
        graph: HnswGraph,
        query: Vectors,
        k: int,
        fetch: int,
        allowed: Selection | None,
        excluded: set[int],
        *,
        brute: bool,
    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]]:
        store = self._store
        mask: npt.NDArray[np.bool_] | None = None
        ef = self._ef_search
        if allowed is not None:
            mask = allowed.mask()
            # A filter hides part of the graph: widen the search as the allowed share shrinks.
            ef = int(ef * min(3.0, max(1.0, (0.25 * store.n / max(1, allowed.count)) ** 0.5)))
        elif store.dead_count:
            mask = store.alive
        live = mask if mask is not None else store.alive
        available = (store.live_count if allowed is None else allowed.count) - int(live[list(excluded)].sum())
        candidates = graph.scan(query, fetch, mask) if brute else graph.search(query, fetch, mask, ef=ef)
        if len(graph) < store.n:  # rows added since the graph was built are scored exactly
            tail = np.arange(len(graph), store.n, dtype=np.int64)
            tail = tail[live[tail]]
            candidates = np.concatenate([candidates, tail])
        if excluded:
            candidates = candidates[~np.isin(candidates, list(excluded))]
        rows, scores = self._rescore(graph, query, k, candidates)
        if len(rows) < min(k, available):
            return self._exact(query, k, allowed, excluded)  # the graph came up short: never starve
        return rows, scores

    def _rescore(
        self, graph: HnswGraph, query: Vectors, k: int, candidates: npt.NDArray[np.int64]
    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]]:
        """Exact scores of the candidates, best ``k`` first (ties: lower row first).

        float16 graph codes are the row store's numbers, so rows in the graph are scored from them (pages
        the walk has just touched) and ``vectors.npy`` is read only for rows added since the graph was built.
        """
        store = self._store
        if not graph.lossless or store.vectors.dtype != np.float16:
            return top_k(store.vectors, query, k, candidates)
        inside = candidates[candidates < len(graph)]
        tail = candidates[candidates >= len(graph)]
        scores = np.empty(len(inside), dtype=np.float32)
        for start in range(0, len(inside), _RESCORE_CHUNK):  # bounded scratch memory for large sets
            scores[start : start + _RESCORE_CHUNK] = (
                graph.reconstruct(inside[start : start + _RESCORE_CHUNK]) @ query
            )
        if len(tail):
            tail_scores = np.asarray(store.vectors[tail], dtype=np.float32) @ query
            inside, scores = np.concatenate([inside, tail]), np.concatenate([scores, tail_scores])
        return best_k(inside, scores, k)

    def _load(self) -> tuple[RowStore, HnswGraph | None]:
        """Read the current generation (retrying once if a writer swapped it while we were reading)."""
        for attempt in range(2):
            found = self._folder.read()
            if found is None:
                self._stored, self._stamp = None, None
                want = self._policy == "hnsw"
                store = RowStore(self._dimension, np.float16 if want else np.float32)
                return store, (
                    HnswGraph.empty(self._dimension, ef_construction=self._ef_construction) if want else None
                )
            stored, stamp = found
            check_compatible(stored.manifest, self._folder.manifest_path, **self._space())
            try:
                store, graph = self._read_generation(stored)
            except VectorIndexUnavailable:
                if attempt == 0 and self._folder.stamp() != stamp:
                    continue
                raise
            self._stored, self._stamp = stored, stamp
            return store, graph
        raise AssertionError("unreachable")

    def _space(self) -> dict[str, Any]:
        return {"model_id": self._model_id, "dimension": self._dimension}

    def _read_generation(self, stored: StoredManifest) -> tuple[RowStore, HnswGraph | None]:
        folder = self._folder.generation_dir(stored)
        has_graph = stored.manifest.kind == "hnsw" and (folder / GRAPH_FILE).exists()
        if self._policy == "auto":
            want = has_graph or stored.manifest.count >= self._auto_hnsw_min_rows
        else:
            want = self._policy == "hnsw"
        dtype = np.float16 if want else np.float32
        store = RowStore.read(folder, dimension=self._dimension, rows=stored.rows, dtype=dtype)
        if store.live_count != stored.manifest.count:
            raise VectorIndexUnavailable(
                f"{folder}: {store.live_count} live rows but the manifest says {stored.manifest.count}"
            )
        if not want:
            return store, None
        if has_graph:
            trained_on = int(stored.manifest.extra.get("trained_on", stored.rows) or stored.rows)
            graph = HnswGraph.load(folder / GRAPH_FILE, self._dimension, stored.rows, trained_on)
        else:
            graph = HnswGraph.build(self._dimension, store.vectors, ef_construction=self._ef_construction)
            self._dirty = True  # the stored kind differs from the policy: the next save writes the graph
        return store, graph


class ExactVectorIndex(StoredVectorIndex):
    """Exact search only: for small corpora, tests, and as the reference for recall measurements."""

    def __init__(self, path: Path, *, model_id: str, dimension: int) -> None:
        super().__init__(path, model_id=model_id, dimension=dimension, policy="exact")


class HnswVectorIndex(StoredVectorIndex):
    """HNSW candidates re-scored exactly: for large corpora."""

    def __init__(self, path: Path, *, model_id: str, dimension: int) -> None:
        super().__init__(path, model_id=model_id, dimension=dimension, policy="hnsw")
