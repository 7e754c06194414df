"""A small but real VectorIndex for the indexing tests: exact search, saved as one .npz file.

The production indexes live in ``paperfeed.adapters.vector``; the indexing service only sees the port, so
the tests exercise it against this independent implementation (which also counts saves and upserts).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Sequence
from datetime import date
from pathlib import Path

import numpy as np

from paperfeed.domain.search import (
    IndexManifest,
    ScoredId,
    SearchFilters,
    VectorIndexMismatch,
    VectorRecord,
    Vectors,
)


class NpzVectorIndex:
    def __init__(self, path: Path, model_id: str, dimension: int, rows: dict[str, VectorRecord]) -> None:
        self.path = path
        self.model_id = model_id
        self.dimension = dimension
        self.rows = rows
        self.upserts = 0
        self.saves = 0

    @property
    def manifest(self) -> IndexManifest:
        return IndexManifest("npz-exact", self.model_id, self.dimension, len(self.rows), "")

    def __len__(self) -> int:
        return len(self.rows)

    def upsert(self, records: Iterable[VectorRecord]) -> None:
        for record in records:
            if record.vector.shape != (self.dimension,):
                raise ValueError(f"{record.paper_id}: wrong dimension {record.vector.shape}")
            self.rows[record.paper_id] = record
            self.upserts += 1

    def remove(self, paper_ids: Iterable[str]) -> None:
        for paper_id in paper_ids:
            self.rows.pop(paper_id, None)

    def search(
        self, vector: Vectors, k: int, filters: SearchFilters | None = None, exclude: Iterable[str] = ()
    ) -> list[ScoredId]:
        skip = set(exclude)
        scored = [
            ScoredId(r.paper_id, float(r.vector @ vector))
            for r in self.rows.values()
            if r.paper_id not in skip
            and (filters is None or not filters.categories or set(r.categories) & set(filters.categories))
        ]
        return sorted(scored, key=lambda s: (-s.score, s.paper_id))[:k]

    def vector(self, paper_id: str) -> Vectors | None:
        record = self.rows.get(paper_id)
        return None if record is None else record.vector

    def vectors(self, paper_ids: Sequence[str]) -> dict[str, Vectors]:
        return {pid: self.rows[pid].vector for pid in paper_ids if pid in self.rows}

    def centroid(self) -> Vectors | None:
        if not self.rows:
            return None
        mean: Vectors = np.mean([r.vector for r in self.rows.values()], axis=0).astype(np.float32)
        return mean

    def save(self) -> None:
        ids = sorted(self.rows)
        tmp = self.path.with_name(self.path.name + ".tmp.npz")
        np.savez(
            tmp,
            meta=np.array(json.dumps({"model_id": self.model_id, "dimension": self.dimension})),
            ids=np.array(ids, dtype=str),
            vectors=np.array([self.rows[i].vector for i in ids], dtype=np.float32).reshape(
                -1, self.dimension
            ),
            published=np.array(
                [(self.rows[i].published or date.min).toordinal() for i in ids], dtype=np.int64
            ),
            categories=np.array([json.dumps(self.rows[i].categories) for i in ids], dtype=str),
            has_code=np.array([self.rows[i].has_code for i in ids], dtype=bool),
        )
        os.replace(tmp, self.path)
        self.saves += 1

    def reload_if_changed(self) -> bool:
        return False


class NpzIndexOpener:
    """The :class:`~paperfeed.domain.search.IndexOpener` for :class:`NpzVectorIndex` files."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.opened: list[NpzVectorIndex] = []

    def __call__(self, *, model_id: str, dimension: int, fresh: bool) -> NpzVectorIndex:
        rows: dict[str, VectorRecord] = {}
        if not fresh and self.path.exists():
            with np.load(self.path, allow_pickle=False) as data:
                meta = json.loads(str(data["meta"]))
                if (meta["model_id"], meta["dimension"]) != (model_id, dimension):
                    raise VectorIndexMismatch(f"{self.path}: built for {meta['model_id']}")
                for i, paper_id in enumerate(data["ids"]):
                    day = int(data["published"][i])
                    rows[str(paper_id)] = VectorRecord(
                        str(paper_id),
                        data["vectors"][i].astype(np.float32),
                        None if day == date.min.toordinal() else date.fromordinal(day),
                        tuple(json.loads(str(data["categories"][i]))),
                        bool(data["has_code"][i]),
                    )
        index = NpzVectorIndex(self.path, model_id, dimension, rows)
        self.opened.append(index)
        return index

    def load(self) -> NpzVectorIndex:
        """The saved index as another process would read it."""
        with np.load(self.path, allow_pickle=False) as data:
            meta = json.loads(str(data["meta"]))
        return NpzIndexOpener(self.path)(model_id=meta["model_id"], dimension=meta["dimension"], fresh=False)
