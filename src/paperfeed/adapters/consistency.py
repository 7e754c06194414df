"""Read-only probes comparing the derived indexes with the store, one per engine (``paperfeed check``).

Each probe looks at what is actually on disk or in the database — the tantivy documents, the FTS5 shadow
tables, PostgreSQL's ``search_tsv`` column, the ``embeddings`` table, the vector index folder or pgvector
table — without going through the adapters' own open paths, which repair quietly (tantivy catches up on
open, the vector index swaps in a fresh one): a check must report a problem, not hide it.
:class:`StoreInspector` is the :class:`~paperfeed.domain.consistency.ConsistencyInspector` port over them;
its repairs go through the adapters' public rebuild/reindex operations, and :mod:`paperfeed.services.check`
decides which to run.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
from sqlalchemy import func, select
from sqlalchemy import text as sql
from sqlalchemy.engine import Engine

from paperfeed.adapters.keyword.factory import KeywordEngine, resolve_engine
from paperfeed.adapters.store.embeddings import SqlEmbeddingStore
from paperfeed.adapters.store.schema import embeddings, papers
from paperfeed.adapters.vector.factory import VectorIndexChoice
from paperfeed.domain.consistency import EmbeddingState, FindingKind, Probe
from paperfeed.domain.ids import InvalidPaperId, normalize_paper_id
from paperfeed.domain.search import VectorIndexError
from paperfeed.domain.wording import count

__all__ = [
    "StoreInspector",
    "embeddings_probe",
    "fts5_probe",
    "pgvector_probe",
    "postgres_fts_probe",
    "store_probe",
    "tantivy_probe",
    "vector_folder_probe",
]

_PAGE = 5000
_SAME_VECTOR = 0.995  # cosine between the index's copy (maybe float16) and the stored float32 vector


def _paper_ids(engine: Engine) -> Iterator[list[str]]:
    """Every paper id in pages (keyset by id: constant memory, short read transactions)."""
    last = ""
    while True:
        with engine.connect() as conn:
            rows = list(
                conn.execute(
                    select(papers.c.id).where(papers.c.id > last).order_by(papers.c.id).limit(_PAGE)
                ).scalars()
            )
        if not rows:
            return
        yield rows
        last = rows[-1]


def all_paper_ids(engine: Engine) -> set[str]:
    found: set[str] = set()
    for page in _paper_ids(engine):
        found.update(page)
    return found


# -- the store -------------------------------------------------------------------------------------------


def store_probe(engine: Engine) -> tuple[Probe, set[str]]:
    """Every paper exactly once: the key is unique by construction, so look for one paper stored under two
    spellings (a versioned id, an old-style id with its subject class, stray spaces) — a canonical id is
    what every importer and the web app look papers up by."""
    probe = Probe("store")
    ids = all_paper_ids(engine)
    odd: list[str] = []
    bases: dict[str, list[str]] = {}
    for pid in ids:
        try:
            parsed = normalize_paper_id(pid)
        except InvalidPaperId:
            odd.append(pid)
            continue
        if str(parsed) != pid or parsed.version is not None:
            odd.append(pid)
        bases.setdefault(parsed.base, []).append(pid)
    twice = [pid for group in bases.values() if len(group) > 1 for pid in group]
    probe.add(FindingKind.non_canonical_id, "papers stored under a non-canonical id", odd)
    probe.add(FindingKind.duplicate_id, "papers stored twice under different spellings of one id", twice)
    probe.summary = f"{count(len(ids), 'paper')}"
    return probe, ids


# -- keyword indexes -------------------------------------------------------------------------------------


def _modified_since(engine: Engine, since: datetime) -> set[str]:
    with engine.connect() as conn:
        return set(conn.execute(select(papers.c.id).where(papers.c.modified_at > since)).scalars())


def tantivy_probe(path: Path, engine: Engine, store_ids: set[str], *, version: str) -> Probe:
    """Every paper one document; none extra; no change newer than the index's watermark unindexed."""
    import tantivy

    from paperfeed.adapters.keyword.tantivy_damage import damaged_files

    probe = Probe("keyword", kind="tantivy")
    try:
        state = json.loads((path / "state.json").read_text())
    except (OSError, ValueError):
        state = None
    if not isinstance(state, dict) or state.get("version") != version or "watermark" not in state:
        probe.unusable = True
        missing = not (path / "meta.json").exists()
        what = "missing" if missing else "of another version or never completed"
        kind = FindingKind.index_missing if missing else FindingKind.index_incompatible
        probe.add(kind, f"keyword index is {what} ({path})", count=max(1, len(store_ids)))
        probe.summary = "no usable index"
        return probe
    damaged = damaged_files(path, trust_checked=False)  # tantivy never checks its checksums itself
    if damaged:
        probe.unusable = True
        what = "; ".join(damaged)[:200]
        probe.add(
            FindingKind.index_damaged,
            f"keyword index files are damaged ({what})",
            count=max(1, len(store_ids)),
        )
        probe.summary = "unreadable"
        return probe
    try:
        index = tantivy.Index.open(str(path))
        index.reload()
        searcher = index.searcher()
        total = int(searcher.num_docs)
        hits = searcher.search(tantivy.Query.all_query(), limit=max(total, 1)).hits
        counts: dict[str, int] = {}
        for _score, address in hits:
            for pid in searcher.doc(address).to_dict().get("id", []):
                counts[pid] = counts.get(pid, 0) + 1
    except BaseException as exc:  # tantivy panics (a BaseException) on some damaged files
        if isinstance(exc, KeyboardInterrupt | SystemExit):
            raise
        probe.unusable = True
        probe.add(
            FindingKind.index_damaged,
            f"keyword index files are damaged ({str(exc)[:200]})",
            count=max(1, len(store_ids)),
        )
        probe.summary = "unreadable"
        return probe
    indexed = set(counts)
    probe.add(FindingKind.not_indexed, "papers missing from the keyword index", store_ids - indexed)
    probe.add(
        FindingKind.index_orphan, "keyword documents of papers that are not in the store", indexed - store_ids
    )
    probe.add(
        FindingKind.indexed_twice,
        "papers indexed more than once",
        [pid for pid, n in counts.items() if n > 1],
    )
    marks = [state[k] for k in ("watermark", "dirty_since") if isinstance(state.get(k), str)]
    try:
        since = datetime.fromisoformat(min(marks))
    except ValueError:
        probe.add(
            FindingKind.index_watermark_unreadable,
            "keyword index state.json has an unreadable watermark",
            count=1,
        )
    else:
        since = since if since.tzinfo else since.replace(tzinfo=UTC)
        probe.add(
            FindingKind.index_stale,
            "papers changed since they were indexed",
            _modified_since(engine, since) & indexed,
        )
    probe.summary = f"{count(total, 'document')}"
    return probe


def fts5_probe(engine: Engine, store_ids: set[str]) -> Probe:
    """Queue drained, one document per paper row, and FTS5's own check of the index against ``papers``."""
    probe = Probe("keyword", kind="fts5")
    with engine.connect() as conn:
        queued = int(conn.execute(sql("SELECT count(*) FROM papers_fts_queue")).scalar_one())
        missing = list(
            conn.execute(
                sql("SELECT id FROM papers WHERE rowid NOT IN (SELECT id FROM papers_fts_docsize)")
            ).scalars()
        )
        extra = int(
            conn.execute(
                sql("SELECT count(*) FROM papers_fts_docsize WHERE id NOT IN (SELECT rowid FROM papers)")
            ).scalar_one()
        )
        docs = int(conn.execute(sql("SELECT count(*) FROM papers_fts_docsize")).scalar_one())
    probe.add(FindingKind.index_queued, "changes queued but not yet in the keyword index", count=queued)
    probe.add(FindingKind.not_indexed, "papers missing from the keyword index", missing)
    probe.add(FindingKind.index_orphan, "keyword documents of papers that are not in the store", count=extra)
    if not queued and not missing and not extra:
        try:
            with engine.begin() as conn:  # FTS5 compares every indexed token with the content table
                conn.execute(sql("INSERT INTO papers_fts(papers_fts, rank) VALUES ('integrity-check', 1)"))
        except Exception as exc:  # sqlite reports a mismatch as "database disk image is malformed"
            probe.add(
                FindingKind.index_content_differs,
                f"keyword index content differs from the papers ({str(exc)[:120]})",
                count=1,
            )
    probe.summary = f"{count(docs, 'document')}"
    return probe


def postgres_fts_probe(engine: Engine) -> Probe:
    """Every paper has a search document, equal to what the search function makes of its text now."""
    probe = Probe("keyword", kind="postgres")
    with engine.connect() as conn:
        missing = list(conn.execute(sql("SELECT id FROM papers WHERE search_tsv IS NULL")).scalars())
        stale = list(
            conn.execute(
                sql(
                    "SELECT id FROM papers WHERE search_tsv IS NOT NULL AND search_tsv IS DISTINCT FROM "
                    "paperfeed_search_document(title, abstract, authors)"
                )
            ).scalars()
        )
        docs = int(conn.execute(sql("SELECT count(*) FROM papers WHERE search_tsv IS NOT NULL")).scalar_one())
    probe.add(FindingKind.not_indexed, "papers without a search document", missing)
    probe.add(FindingKind.index_stale, "papers whose search document is out of date", stale)
    probe.summary = f"{count(docs, 'document')}"
    return probe


# -- embeddings ------------------------------------------------------------------------------------------


def embeddings_probe(engine: Engine, model_id: str, store_ids: set[str]) -> tuple[Probe, EmbeddingState]:
    """Each paper one vector of the configured model, made from its current text (content hash)."""
    probe = Probe("embeddings")
    ids: set[str] = set()
    stale: list[str] = []
    others: list[str] = []
    dimension: int | None = None
    last = ""
    while True:
        query = (
            select(
                embeddings.c.paper_id,
                embeddings.c.model_id,
                embeddings.c.content_hash,
                papers.c.content_hash.label("paper_hash"),
                func.length(embeddings.c.vector).label("size"),
            )
            .select_from(embeddings.outerjoin(papers, papers.c.id == embeddings.c.paper_id))
            .where(embeddings.c.paper_id > last)
            .order_by(embeddings.c.paper_id)
            .limit(_PAGE)
        )
        with engine.connect() as conn:
            rows = conn.execute(query).all()
        if not rows:
            break
        for r in rows:
            if r.model_id != model_id:
                others.append(r.paper_id)
                continue
            ids.add(r.paper_id)
            if r.paper_hash is not None and r.content_hash != r.paper_hash:
                stale.append(r.paper_id)
            if dimension is None and r.size:
                dimension = int(r.size) // 4
        last = rows[-1].paper_id
    orphans = (ids | set(others)) - store_ids
    in_use = bool(ids or others)
    if in_use:
        probe.add(FindingKind.no_vector, "papers with no vector", store_ids - ids - set(others))
        probe.add(FindingKind.stale_vector, "vectors made from an older version of the paper's text", stale)
        probe.add(
            FindingKind.other_model_vector, "vectors of another model (a model change not finished)", others
        )
    probe.add(FindingKind.orphan_vector, "vectors of papers that are not in the store", orphans)
    if not in_use:
        probe.notes.append("no paper is embedded yet: semantic search is off until `paperfeed index`")
    probe.summary = f"{count(len(ids), 'vector')} of {model_id}"
    live = ids & store_ids
    return probe, EmbeddingState(model_id, len(live), frozenset(live), dimension)


# -- vector indexes --------------------------------------------------------------------------------------


def _compare_vectors(engine: Engine, model_id: str, rows_of: dict[str, int], matrix: np.ndarray) -> list[str]:
    """Papers whose vector in the index is not the stored one (re-embedded, index not synced)."""
    differ: list[str] = []
    for page in SqlEmbeddingStore(engine).records(model_id, page=_PAGE):
        pairs = [(r, rows_of[r.paper_id]) for r in page if r.paper_id in rows_of]
        if not pairs:
            continue
        stored = np.stack([r.vector for r, _ in pairs]).astype(np.float32)
        stored /= np.maximum(np.linalg.norm(stored, axis=1, keepdims=True), 1e-12)
        held = np.asarray(matrix[[row for _, row in pairs]], dtype=np.float32)
        held /= np.maximum(np.linalg.norm(held, axis=1, keepdims=True), 1e-12)
        cos = np.einsum("ij,ij->i", stored, held)
        differ.extend(r.paper_id for (r, _), c in zip(pairs, cos, strict=True) if not c >= _SAME_VECTOR)
    return differ


def _index_vs_table(probe: Probe, indexed: Iterable[str], state: EmbeddingState) -> None:
    held = set(indexed)
    probe.add(FindingKind.not_indexed, "vectors missing from the vector index", state.ids - held)
    probe.add(FindingKind.index_orphan, "vector index entries with no stored vector", held - state.ids)


def vector_folder_probe(path: Path, engine: Engine, state: EmbeddingState) -> Probe:
    """The faiss/exact index folder: manifest, files and sizes, rows, model, and each paper's vector."""
    from paperfeed.adapters.vector.base import IndexFolder, RowStore

    probe = Probe("vector index")
    folder = IndexFolder(path)
    try:
        found = folder.read()
        if found is None:
            if state.vectors:
                probe.unusable = True
                probe.add(FindingKind.index_missing, f"vector index is missing ({path})", count=state.vectors)
            probe.summary = "none"
            return probe
        stored, _stamp = found
        manifest = stored.manifest
        probe.kind = manifest.kind
        if manifest.model_id != state.model_id or (
            state.dimension is not None and manifest.dimension != state.dimension
        ):
            probe.unusable = True
            probe.add(
                FindingKind.index_incompatible,
                f"vector index was built with {manifest.model_id} (dimension {manifest.dimension}), "
                f"the configured model is {state.model_id}",
                count=max(1, manifest.count),
            )
            probe.summary = f"{count(manifest.count, 'vector')} of another model"
            return probe
        generation = folder.generation_dir(stored)
        rows = RowStore.read(generation, dimension=manifest.dimension, rows=stored.rows, dtype=np.float32)
    except VectorIndexError as exc:
        probe.unusable = True
        probe.add(
            FindingKind.index_damaged, f"vector index is unreadable: {exc}", count=max(1, state.vectors)
        )
        probe.summary = "unreadable"
        return probe
    if rows.live_count != manifest.count:
        probe.add(
            FindingKind.index_miscounted,
            f"manifest says {count(manifest.count, 'vector')}, the files hold {rows.live_count:,}",
            count=abs(manifest.count - rows.live_count),
        )
    _index_vs_table(probe, rows.row_of.keys(), state)
    probe.add(
        FindingKind.index_stale,
        "vectors in the index differ from the stored ones",
        _compare_vectors(engine, state.model_id, rows.row_of, rows.vectors),
    )
    probe.summary = f"{count(rows.live_count, 'vector')}, built {manifest.built_at}"
    return probe


def pgvector_probe(engine: Engine, state: EmbeddingState, mark: datetime | None) -> Probe:
    """The pgvector table: its meta row (model, count), its rows against the embeddings table, and no
    vector newer than the index's sync mark."""
    from paperfeed.adapters.vector.pgvector_index import TABLE, stored_manifest

    probe = Probe("vector index", kind="pgvector")
    manifest = stored_manifest(engine)
    if manifest is None:
        if state.vectors:
            probe.unusable = True
            probe.add(FindingKind.index_missing, "vector index table is missing", count=state.vectors)
        probe.summary = "none"
        return probe
    if manifest.model_id != state.model_id or (
        state.dimension is not None and manifest.dimension != state.dimension
    ):
        probe.unusable = True
        probe.add(
            FindingKind.index_incompatible,
            f"vector index was built with {manifest.model_id}, the configured model is {state.model_id}",
            count=max(1, manifest.count),
        )
        return probe
    with engine.connect() as conn:
        held = list(conn.execute(sql(f"SELECT paper_id FROM {TABLE}")).scalars())
        newer = 0
        if mark is not None:
            newer = int(
                conn.execute(
                    select(func.count())
                    .select_from(embeddings)
                    .where(embeddings.c.model_id == state.model_id, embeddings.c.created_at > mark)
                ).scalar_one()
            )
        elif state.vectors:
            newer = state.vectors
    if len(held) != manifest.count:
        probe.add(
            FindingKind.index_miscounted,
            f"index metadata says {count(manifest.count, 'vector')}, the table holds {len(held):,}",
            count=abs(manifest.count - len(held)),
        )
    _index_vs_table(probe, held, state)
    probe.add(FindingKind.index_stale, "vectors stored since the index was last synced", count=newer)
    probe.summary = f"{count(len(held), 'vector')}, built {manifest.built_at}"
    return probe


# -- the port --------------------------------------------------------------------------------------------


@dataclass
class StoreInspector:
    """:class:`~paperfeed.domain.consistency.ConsistencyInspector` of one data folder or database."""

    engine: Engine
    data_dir: Path
    keyword_engine: KeywordEngine
    vector_index: VectorIndexChoice

    @property
    def _postgres(self) -> bool:
        from paperfeed.adapters.vector.factory import uses_pgvector  # the one place that chooses pgvector

        return uses_pgvector(self.engine, self.vector_index)

    def probe(self, model_id: str) -> list[Probe]:
        from paperfeed.adapters.keyword.tantivy_index import INDEX_VERSION

        store, ids = store_probe(self.engine)
        chosen = resolve_engine(self.keyword_engine, self.engine)
        if chosen == "tantivy":
            keyword = tantivy_probe(self.data_dir / "keyword", self.engine, ids, version=INDEX_VERSION)
        elif chosen == "fts5":
            keyword = fts5_probe(self.engine, ids)
        else:
            keyword = postgres_fts_probe(self.engine)
        vectors_probe, state = embeddings_probe(self.engine, model_id, ids)
        return [store, keyword, vectors_probe, self._vector_probe(state)]

    def _vector_probe(self, state: EmbeddingState) -> Probe:
        if self._postgres:
            mark = SqlEmbeddingStore(self.engine).get_mark(f"vector-index:{state.model_id}")
            return pgvector_probe(self.engine, state, mark)
        return vector_folder_probe(self.data_dir / "vectors", self.engine, state)

    def vector_index_consistent(self, model_id: str) -> bool:
        _store, ids = store_probe(self.engine)
        _probe, state = embeddings_probe(self.engine, model_id, ids)
        return not state.vectors or self._vector_probe(state).ok

    def delete_vectors(self, paper_ids: Sequence[str]) -> int:
        return SqlEmbeddingStore(self.engine).delete(paper_ids)

    def repair_keyword(self, probe: Probe) -> str:
        if probe.kind == "tantivy":
            from paperfeed.adapters.keyword.tantivy_index import KeywordIndexBusy, TantivyKeywordIndex

            folder = self.data_dir / "keyword"
            if probe.unusable and folder.is_dir():  # derived data: damaged files may panic tantivy on open
                for item in folder.iterdir():
                    if item.is_file():
                        item.unlink()
            try:
                index = TantivyKeywordIndex(folder, self.engine, catch_up=False, background=False)
                try:
                    if probe.unusable:
                        return f"keyword index rebuilt from the store ({count(index.rebuild(), 'paper')})"
                    ids: set[str] = set()
                    for finding in probe.findings:
                        ids |= finding.ids
                    done = index.reindex(sorted(ids))
                    caught = index.catch_up()
                    return f"keyword index: {count(done, 'paper')} re-indexed, {caught:,} caught up"
                finally:
                    index.close()
            except KeywordIndexBusy as exc:
                return f"keyword index not repaired: {exc}; stop that process and run check --repair again"
        if probe.kind == "fts5":
            from paperfeed.adapters.keyword.fts5 import Fts5KeywordIndex

            index5 = Fts5KeywordIndex(self.engine, sync=False)
            try:
                index5.rebuild()
            finally:
                index5.close()
            return "keyword index (FTS5) rebuilt from the store"
        from paperfeed.adapters.keyword.postgres_fts import PostgresKeywordIndex

        return f"keyword index: {PostgresKeywordIndex(self.engine).rebuild():,} search documents recomputed"
