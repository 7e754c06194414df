"""Shared pieces of the vector indexes: row storage with filter facets, and the atomically swapped folder.

Rows are append-only: adding a paper appends a row, replacing one appends a new row and marks the old one
dead, removing one marks it dead. Row numbers therefore never move until :meth:`RowStore.compact`, which
lets an ANN graph key its nodes by row and lets filter masks be plain arrays indexed by row.

Facets are kept as arrays so a filter becomes a boolean mask or a row list in a few vectorised steps:
``days`` (int32 proleptic ordinal of ``published``, :data:`NO_DAY` when unknown), ``has_code`` (bool), and
categories in CSR form (``cat_offsets``/``cat_codes`` into a vocabulary) with per-category posting lists
built lazily, so a category filter starts from the few rows that carry it instead of scanning the corpus.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import time
import uuid
from collections.abc import Iterable, Sequence
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import orjson

from paperfeed.adapters.files import fsync
from paperfeed.adapters.vector.manifest import (
    FORMAT,
    MANIFEST_NAME,
    StoredManifest,
    check_compatible,
)
from paperfeed.domain.search import (
    IndexManifest,
    SearchFilters,
    VectorIndexUnavailable,
    VectorRecord,
)
from paperfeed.domain.wording import count

__all__ = [
    "FORMAT",
    "MANIFEST_NAME",
    "NO_DAY",
    "IndexFolder",
    "RowStore",
    "Selection",
    "StoredManifest",
    "check_compatible",
    "unit_rows",
]

NO_DAY = int(np.iinfo(np.int32).min)

Rows = npt.NDArray[np.int64]
Mask = npt.NDArray[np.bool_]


def _all_finite(path: Path, chunk_rows: int = 65_536) -> bool:
    """Whether a saved .npy holds only finite numbers, read in chunks through the file (not the mapping,
    which would leave every page of the array resident in the process)."""
    with path.open("rb") as f:
        version = np.lib.format.read_magic(f)
        read_header = (
            np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0
        )
        shape, _fortran, dtype = read_header(f)
        row = int(np.prod(shape[1:], dtype=np.int64)) if len(shape) > 1 else 1
        left = int(np.prod(shape, dtype=np.int64))
        while left > 0:
            take = min(left, chunk_rows * max(row, 1))
            data = np.frombuffer(f.read(take * dtype.itemsize), dtype=dtype)
            if len(data) != take or not np.isfinite(data).all():
                return False
            left -= take
    return True


def unit_rows(
    records: Iterable[VectorRecord], dimension: int
) -> tuple[list[VectorRecord], npt.NDArray[np.float32]]:
    """The records, the last of duplicate ids winning, and their vectors as rows of unit length.

    Every index scores cosine as the inner product of unit vectors, whatever the caller sent; a vector of
    the wrong dimension, zero or not finite is refused (ValueError naming the paper).
    """
    batch: dict[str, VectorRecord] = {}
    for record in records:
        batch[record.paper_id] = record
    items = list(batch.values())
    matrix = np.empty((len(items), dimension), dtype=np.float32)
    for i, record in enumerate(items):
        vec = np.asarray(record.vector, dtype=np.float32)
        if vec.shape != (dimension,):
            raise ValueError(
                f"paper {record.paper_id}: vector has shape {vec.shape}, index dimension is {dimension}"
            )
        matrix[i] = vec
    norms = np.linalg.norm(matrix, axis=1)
    bad = ~np.isfinite(norms) | (norms == 0)
    if bad.any():
        raise ValueError(f"paper {items[int(np.argmax(bad))].paper_id}: vector is zero or not finite")
    matrix /= norms[:, None]
    return items, matrix


def _grown(array: npt.NDArray[Any], needed: int) -> npt.NDArray[Any]:
    """``array`` with room for at least ``needed`` leading entries (capacity doubles, amortised O(1))."""
    if len(array) >= needed:
        return array
    capacity = max(needed, 2 * len(array), 1024)
    out = np.zeros((capacity, *array.shape[1:]), dtype=array.dtype)
    out[: len(array)] = array
    return out


class RowStore:
    """Vectors and facets of every row, plus the paper id of each row and the live row of each paper id."""

    def __init__(self, dimension: int, dtype: type[np.floating[Any]]) -> None:
        self.dimension = dimension
        self.dtype = np.dtype(dtype)
        self.n = 0  # rows in use (live and dead)
        self.ids: list[str] = []
        self.row_of: dict[str, int] = {}
        self.categories: list[str] = []
        self._code_of: dict[str, int] = {}
        self._vectors = np.zeros((0, dimension), dtype=self.dtype)
        self._days = np.zeros(0, dtype=np.int32)
        self._has_code = np.zeros(0, dtype=np.bool_)
        self._alive = np.zeros(0, dtype=np.bool_)
        self._cat_offsets = np.zeros(1, dtype=np.int64)  # length n + 1 in use
        self._cat_codes = np.zeros(0, dtype=np.int32)
        self._postings: dict[int, Rows] = {}
        self._postings_upto = 0

    # -- views -------------------------------------------------------------------------------------------

    @property
    def vectors(self) -> npt.NDArray[Any]:
        return self._vectors[: self.n]

    @property
    def alive(self) -> Mask:
        return self._alive[: self.n]

    @property
    def days(self) -> npt.NDArray[np.int32]:
        return self._days[: self.n]

    @property
    def has_code(self) -> Mask:
        return self._has_code[: self.n]

    @property
    def live_count(self) -> int:
        return len(self.row_of)

    @property
    def dead_count(self) -> int:
        return self.n - len(self.row_of)

    def categories_of(self, row: int) -> tuple[str, ...]:
        start, stop = self._cat_offsets[row], self._cat_offsets[row + 1]
        return tuple(self.categories[c] for c in self._cat_codes[start:stop])

    # -- mutation ----------------------------------------------------------------------------------------

    def append(self, records: Iterable[VectorRecord]) -> tuple[Rows, Rows]:
        """Add rows for ``records`` (the last of duplicate ids wins); return (new rows, rows made dead)."""
        items, matrix = unit_rows(records, self.dimension)
        if not items:
            return np.zeros(0, np.int64), np.zeros(0, np.int64)

        killed = [self.row_of[r.paper_id] for r in items if r.paper_id in self.row_of]
        if killed:
            self._alive[killed] = False
        start, stop = self.n, self.n + len(items)
        self._vectors = _grown(self._vectors, stop)
        self._days = _grown(self._days, stop)
        self._has_code = _grown(self._has_code, stop)
        self._alive = _grown(self._alive, stop)
        self._cat_offsets = _grown(self._cat_offsets, stop + 1)
        self._vectors[start:stop] = matrix
        codes: list[int] = []
        for i, record in enumerate(items):
            row = start + i
            self._days[row] = record.published.toordinal() if record.published else NO_DAY
            self._has_code[row] = record.has_code
            self._alive[row] = True
            for category in dict.fromkeys(record.categories):
                codes.append(self._code(category))
            self._cat_offsets[row + 1] = self._cat_offsets[start] + len(codes)
            self.ids.append(record.paper_id)
            self.row_of[record.paper_id] = row
        base = int(self._cat_offsets[start])
        self._cat_codes = _grown(self._cat_codes, base + len(codes))
        self._cat_codes[base : base + len(codes)] = codes
        self.n = stop
        return np.arange(start, stop, dtype=np.int64), np.asarray(killed, dtype=np.int64)

    def kill(self, paper_ids: Iterable[str]) -> Rows:
        """Mark the rows of ``paper_ids`` dead (unknown ids are ignored); return those rows."""
        rows = [self.row_of.pop(pid) for pid in dict.fromkeys(paper_ids) if pid in self.row_of]
        if rows:
            self._alive[rows] = False
        return np.asarray(rows, dtype=np.int64)

    def compact(self) -> Rows:
        """Drop dead rows; return the old row number of each new row (so a caller can remap its own state)."""
        keep = np.flatnonzero(self.alive).astype(np.int64)
        lengths = np.diff(self._cat_offsets[: self.n + 1])
        code_alive = np.repeat(self.alive, lengths)
        self._cat_codes = self._cat_codes[: int(self._cat_offsets[self.n])][code_alive].copy()
        self._cat_offsets = np.concatenate([[0], np.cumsum(lengths[keep])]).astype(np.int64)
        self._vectors = self._vectors[keep].copy()
        self._days = self._days[keep].copy()
        self._has_code = self._has_code[keep].copy()
        self._alive = np.ones(len(keep), dtype=np.bool_)
        self.ids = [self.ids[r] for r in keep.tolist()]
        self.row_of = {pid: row for row, pid in enumerate(self.ids)}
        self.n = len(keep)
        self._postings, self._postings_upto = {}, 0
        return keep

    def astype(self, dtype: type[np.floating[Any]]) -> None:
        """Change the in-memory vector precision (exact search wants float32, HNSW re-scoring float16)."""
        if np.dtype(dtype) != self.dtype:
            self.dtype = np.dtype(dtype)
            self._vectors = self._vectors[: self.n].astype(self.dtype)

    def _code(self, category: str) -> int:
        code = self._code_of.get(category)
        if code is None:
            code = self._code_of[category] = len(self.categories)
            self.categories.append(category)
        return code

    # -- filters -----------------------------------------------------------------------------------------

    def allowed(self, filters: SearchFilters | None) -> Selection | None:
        """The live rows passing ``filters``; ``None`` when there is no filter (every live row)."""
        if filters is None or not filters.active:
            return None
        dated = bool(filters.date_from or filters.date_to)
        if filters.paper_ids is not None:  # a topic's papers: start from their rows, usually few
            found = [self.row_of[p] for p in filters.paper_ids if p in self.row_of]
            rows = np.unique(np.asarray(found, dtype=np.int64))
            if filters.categories:
                rows = rows[np.isin(rows, self._category_rows(filters.categories))]
            if dated:
                rows = rows[_in_range(self._days[rows], filters.date_from, filters.date_to)]
            if filters.has_code is not None:
                rows = rows[self._has_code[rows] == filters.has_code]
            return Selection(self.n, rows=rows)
        if filters.categories:  # start from the categories' posting lists: usually a small fraction
            rows = self._category_rows(filters.categories)
            rows = rows[self._alive[rows]]
            if dated:
                rows = rows[_in_range(self._days[rows], filters.date_from, filters.date_to)]
            if filters.has_code is not None:
                rows = rows[self._has_code[rows] == filters.has_code]
            return Selection(self.n, rows=rows)
        mask = self.alive.copy()  # otherwise whole-corpus vector operations, no index arrays
        if dated:
            mask &= _in_range(self.days, filters.date_from, filters.date_to)
        if filters.has_code is not None:
            mask &= self.has_code if filters.has_code else ~self.has_code
        return Selection(self.n, mask=mask)

    def _category_rows(self, categories: Sequence[str]) -> Rows:
        self._refresh_postings()
        lists = [self._postings[c] for c in (self._code_of.get(name) for name in categories) if c is not None]
        if not lists:
            return np.zeros(0, dtype=np.int64)
        if len(lists) == 1:
            return lists[0]
        return np.unique(np.concatenate(lists))

    def _refresh_postings(self) -> None:
        """Extend the per-category row lists with rows appended since they were last built."""
        if self._postings_upto == self.n:
            return
        lo, hi = self._postings_upto, self.n
        offsets = self._cat_offsets[lo : hi + 1]
        codes = self._cat_codes[int(offsets[0]) : int(offsets[-1])]
        rows = np.repeat(np.arange(lo, hi, dtype=np.int64), np.diff(offsets))
        order = np.argsort(codes, kind="stable")
        codes, rows = codes[order], rows[order]
        self._postings_upto = hi
        if not len(codes):
            return
        bounds = np.flatnonzero(np.diff(codes)) + 1
        for code_rows, code in zip(np.split(rows, bounds), codes[np.r_[0, bounds]], strict=True):
            old = self._postings.get(int(code))
            self._postings[int(code)] = code_rows if old is None else np.concatenate([old, code_rows])

    # -- persistence -------------------------------------------------------------------------------------

    def write(self, folder: Path) -> None:
        """Write the rows into ``folder`` (a fresh generation folder: nobody reads it yet)."""
        np.save(folder / "vectors.npy", self.vectors)
        np.savez(
            folder / "facets.npz",
            days=self.days,
            has_code=self.has_code,
            alive=self.alive,
            cat_offsets=self._cat_offsets[: self.n + 1],
            cat_codes=self._cat_codes[: int(self._cat_offsets[self.n])],
        )
        (folder / "ids.json").write_bytes(orjson.dumps({"ids": self.ids, "categories": self.categories}))

    @classmethod
    def read(cls, folder: Path, *, dimension: int, rows: int, dtype: type[np.floating[Any]]) -> RowStore:
        """Load rows written by :meth:`write`, checking every array against the manifest's row count."""
        store = cls(dimension, dtype)
        try:
            # Mapped copy-on-write: a searching process reads only the rows it re-scores, and appending
            # copies into memory anyway (the arrays grow). The file is never rewritten in place.
            vectors = np.load(folder / "vectors.npy", allow_pickle=False, mmap_mode="c")
            finite = _all_finite(folder / "vectors.npy")
            with np.load(folder / "facets.npz", allow_pickle=False) as facets:
                arrays = {name: facets[name] for name in _FACETS}
            names = orjson.loads((folder / "ids.json").read_bytes())
        except (OSError, ValueError, KeyError, EOFError, orjson.JSONDecodeError) as exc:
            raise VectorIndexUnavailable(f"{folder}: cannot read index rows ({exc})") from exc
        ids, categories = names.get("ids"), names.get("categories")
        offsets, codes = arrays["cat_offsets"], arrays["cat_codes"]
        problems = [
            what
            for what, bad in (
                ("vectors", vectors.shape != (rows, dimension) or vectors.dtype.kind != "f"),
                ("days", arrays["days"].shape != (rows,)),
                ("has_code", arrays["has_code"].shape != (rows,)),
                ("alive", arrays["alive"].shape != (rows,)),
                ("cat_offsets", offsets.shape != (rows + 1,) or (rows and int(offsets[-1]) != len(codes))),
                ("ids", not isinstance(ids, list) or len(ids) != rows),
                ("categories", not isinstance(categories, list) or _codes_out_of(codes, categories)),
            )
            if bad
        ]
        if problems:
            raise VectorIndexUnavailable(f"{folder}: index rows are inconsistent ({', '.join(problems)})")
        if not finite:
            raise VectorIndexUnavailable(f"{folder}: vectors.npy holds non-finite values")
        store.n = rows
        store._vectors = vectors.astype(store.dtype, copy=False)
        store._days = arrays["days"].astype(np.int32, copy=False)
        store._has_code = arrays["has_code"].astype(np.bool_, copy=False)
        store._alive = arrays["alive"].astype(np.bool_, copy=False)
        store._cat_offsets = offsets.astype(np.int64, copy=False)
        store._cat_codes = codes.astype(np.int32, copy=False)
        store.ids = [str(x) for x in ids]
        store.categories = [str(x) for x in categories]
        store._code_of = {name: code for code, name in enumerate(store.categories)}
        store.row_of = {store.ids[row]: row for row in np.flatnonzero(store.alive).tolist()}
        if len(store.row_of) != int(store.alive.sum()):
            raise VectorIndexUnavailable(f"{folder}: ids.json names a paper on two live rows")
        return store


_FACETS = ("days", "has_code", "alive", "cat_offsets", "cat_codes")


def _in_range(days: npt.NDArray[np.int32], start: date | None, stop: date | None) -> Mask:
    keep: Mask = np.not_equal(days, NO_DAY)
    if start:
        keep &= days >= start.toordinal()
    if stop:
        keep &= days <= stop.toordinal()
    return keep


class Selection:
    """The rows a filter allows, as a sorted row list or a mask over all rows, whichever was cheaper to
    compute; the other form is derived on demand (the exact path wants rows, faiss wants a bitmap)."""

    def __init__(self, n: int, *, rows: Rows | None = None, mask: Mask | None = None) -> None:
        self._n = n
        self._rows = rows
        self._mask = mask
        if rows is not None:
            self.count = len(rows)
        elif mask is not None:
            self.count = int(np.count_nonzero(mask))
        else:
            raise ValueError("a selection needs rows or a mask")

    def rows(self) -> Rows:
        if self._rows is None:
            assert self._mask is not None
            self._rows = np.flatnonzero(self._mask).astype(np.int64)
        return self._rows

    def mask(self) -> Mask:
        if self._mask is None:
            self._mask = np.zeros(self._n, dtype=np.bool_)
            self._mask[self.rows()] = True
        return self._mask


def _codes_out_of(codes: npt.NDArray[Any], categories: object) -> bool:
    return bool(len(codes)) and isinstance(categories, list) and int(codes.max()) >= len(categories)


# -- manifest and generations ----------------------------------------------------------------------------


Stamp = tuple[int, int, int]


class IndexFolder:
    """An index folder: ``manifest.json`` names the current ``gen-*`` subfolder holding the files.

    Saving writes a complete new generation into a temporary folder, fsyncs it, renames it to its final
    ``gen-*`` name, then replaces the manifest with ``os.replace``: the manifest is the single atomic commit
    point, so a reader sees the old generation or the new one, never a half-written mix. The previous
    generation is kept (a reader may be loading it right now); older ones are deleted.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self.manifest_path = path / MANIFEST_NAME

    def stamp(self) -> Stamp | None:
        """Cheap change detector for the manifest (inode, mtime, size); ``None`` when there is none."""
        try:
            st = os.stat(self.manifest_path)
        except FileNotFoundError:
            return None
        return (st.st_ino, st.st_mtime_ns, st.st_size)

    def read(self) -> tuple[StoredManifest, Stamp] | None:
        """The current manifest and its stamp, or ``None`` if the folder holds no index yet."""
        stamp = self.stamp()
        if stamp is None:
            if self.path.exists() and any(self.path.glob("gen-*")):
                raise VectorIndexUnavailable(f"{self.manifest_path}: manifest is missing")
            return None
        try:
            data = self.manifest_path.read_bytes()
        except OSError as exc:
            raise VectorIndexUnavailable(f"{self.manifest_path}: cannot read manifest ({exc})") from exc
        return StoredManifest.from_json(data, self.manifest_path), stamp

    def generation_dir(self, stored: StoredManifest) -> Path:
        folder = self.path / stored.generation
        if not folder.is_dir() or "/" in stored.generation or not stored.generation.startswith("gen-"):
            raise VectorIndexUnavailable(f"{folder}: index generation folder is missing")
        for name, size in stored.files.items():
            try:
                actual = (folder / name).stat().st_size
            except OSError:
                raise VectorIndexUnavailable(f"{folder / name}: index file is missing") from None
            if actual != size:
                raise VectorIndexUnavailable(
                    f"{folder / name}: index file is {count(actual, 'byte')}, the manifest says {size} "
                    "(truncated or corrupt)"
                )
        return folder

    def commit(self, write: Any, manifest: IndexManifest, rows: int) -> StoredManifest:
        """Run ``write(folder)`` into a fresh generation, then atomically make it the current one."""
        self.path.mkdir(parents=True, exist_ok=True)
        token = f"{datetime.now(UTC):%Y%m%dT%H%M%S%f}-{uuid.uuid4().hex[:8]}"
        tmp = self.path / f".tmp-{token}"
        tmp.mkdir()
        try:
            write(tmp)
            files = {}
            for item in sorted(tmp.iterdir()):
                fsync(item)
                files[item.name] = item.stat().st_size
            fsync(tmp)
            final = self.path / f"gen-{token}"
            os.replace(tmp, final)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        stored = StoredManifest(manifest, final.name, rows, files)
        tmp_manifest = self.path / f".{MANIFEST_NAME}.{token}"
        tmp_manifest.write_bytes(stored.to_json())
        fsync(tmp_manifest)
        os.replace(tmp_manifest, self.manifest_path)
        fsync(self.path)
        self._collect(keep={final.name})
        return stored

    def _collect(self, keep: set[str]) -> None:
        """Delete generations older than the newest two, and temporaries abandoned over an hour ago."""
        generations = sorted(p for p in self.path.glob("gen-*") if p.is_dir())
        keep = keep | {p.name for p in generations[-2:]}
        for old in generations:
            if old.name not in keep:
                shutil.rmtree(old, ignore_errors=True)
        for stale in self.path.glob(".tmp-*"):
            with contextlib.suppress(OSError):
                if time.time() - stale.stat().st_mtime > 3600:
                    shutil.rmtree(stale, ignore_errors=True)


def utc_now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def day_of(value: date | None) -> int:
    return value.toordinal() if value else NO_DAY
