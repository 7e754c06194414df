"""``paperfeed check``: are the keyword index and the vector index consistent with the store? And repair.

The store is the truth; both indexes are derived from it. The check reads every area without changing
anything (see :mod:`paperfeed.adapters.consistency`); a repair then does the least that fixes what was
found, through the adapters' own operations:

* keyword index: re-index the papers that are missing, stale or doubled and drop documents of papers the
  store no longer has (tantivy); apply the queue or rebuild (FTS5); recompute stale documents
  (PostgreSQL). An unreadable index is rebuilt from the store.
* embeddings: drop vectors of papers that are gone; embed papers with no vector or a stale one (the
  ``paperfeed index`` backlog).
* vector index: bring it up to date from the stored vectors; when it is unreadable, of another model, or
  still inconsistent after that, rebuild it from the stored vectors (no re-embedding).

Afterwards the check runs again, and the report says what, if anything, is still wrong.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from sqlalchemy.engine import Engine

from paperfeed.adapters.consistency import (
    EmbeddingState,
    Probe,
    embeddings_probe,
    fts5_probe,
    pgvector_probe,
    postgres_fts_probe,
    store_probe,
    tantivy_probe,
    vector_folder_probe,
)
from paperfeed.adapters.keyword.factory import KeywordEngine, resolve_engine
from paperfeed.adapters.store.embeddings import SqlEmbeddingStore
from paperfeed.services.indexing import IndexingService

__all__ = ["CheckReport", "CheckService", "Probe"]


@dataclass
class CheckReport:
    """The probes of one check, plus (after a repair) what was done and the probes of the re-check."""

    probes: list[Probe]
    seconds: float = 0.0
    actions: list[str] = field(default_factory=list)
    after: list[Probe] | None = None

    @property
    def ok(self) -> bool:
        return all(p.ok for p in self.probes)

    @property
    def repaired(self) -> bool:
        return self.after is not None and all(p.ok for p in self.after)

    @property
    def problems(self) -> int:
        return sum(len(p.findings) for p in self.probes)


@dataclass
class CheckService:
    """Checks (and repairs) one data folder or database."""

    engine: Engine
    data_dir: Path
    keyword_engine: KeywordEngine
    model_id: Callable[[], str]  # the configured embedder's model (cheap: no model is loaded)
    indexing: Callable[[], IndexingService]  # built only for a repair that needs it

    def check(self) -> CheckReport:
        started = time.monotonic()
        probes = self._probe()
        return CheckReport(probes, time.monotonic() - started)

    def _probe(self) -> list[Probe]:
        from paperfeed.adapters.keyword.tantivy_index import INDEX_VERSION

        store, ids = store_probe(self.engine)
        chosen = resolve_engine(self.keyword_engine, self.engine)
        if chosen == "tantivy":
            keyword = tantivy_probe(self.data_dir / "keyword", self.engine, ids, version=INDEX_VERSION)
        elif chosen == "fts5":
            keyword = fts5_probe(self.engine, ids)
        else:
            keyword = postgres_fts_probe(self.engine)
        model_id = self.model_id()
        vectors_probe, state = embeddings_probe(self.engine, model_id, ids)
        return [store, keyword, vectors_probe, self._vector_probe(state)]

    def _vector_probe(self, state: EmbeddingState) -> Probe:
        from paperfeed.adapters.vector.factory import uses_pgvector

        if uses_pgvector(self.engine):
            mark = SqlEmbeddingStore(self.engine).get_mark(f"vector-index:{state.model_id}")
            return pgvector_probe(self.engine, state, mark)
        return vector_folder_probe(self.data_dir / "vectors", self.engine, state)

    # -- repair -------------------------------------------------------------------------------------------

    def repair(self, report: CheckReport | None = None) -> CheckReport:
        """Check (unless given a report), fix what was found, and check again."""
        report = report or self.check()
        started = time.monotonic()
        by_area = {p.area: p for p in report.probes}
        if not by_area["keyword"].ok:
            report.actions.append(self._repair_keyword(by_area["keyword"]))
        if not by_area["embeddings"].ok or not by_area["vector index"].ok:
            report.actions.extend(self._repair_vectors(by_area["embeddings"], by_area["vector index"]))
        if not by_area["store"].ok:
            report.actions.append(
                "papers under non-canonical ids are left as they are: re-import them from their source "
                "(the importers store canonical ids) and delete the odd rows by hand"
            )
        report.after = self._probe()
        report.seconds += time.monotonic() - started
        return report

    def _repair_keyword(self, probe: Probe) -> str:
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
                        return f"keyword index rebuilt from the store ({index.rebuild():,} papers)"
                    ids: set[str] = set()
                    for finding in probe.findings:
                        ids |= finding.ids
                    done = index.reindex(sorted(ids))
                    caught = index.catch_up()
                    return f"keyword index: {done:,} papers re-indexed, {caught:,} caught up"
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

    def _repair_vectors(self, table: Probe, index: Probe) -> list[str]:
        actions: list[str] = []
        embeddings = SqlEmbeddingStore(self.engine)
        for finding in table.findings:
            if finding.problem.startswith("vectors of papers that are not in the store"):
                actions.append(
                    f"deleted {embeddings.delete(sorted(finding.ids)):,} vectors of deleted papers"
                )
        service = self.indexing()
        backlog = any(not f.problem.startswith("vectors of papers that") for f in table.findings)
        if backlog:
            summary = service.run()
            actions.append(f"embedded {summary.embedded:,} papers that had no current vector")
        _store, ids = store_probe(self.engine)
        _probe, state = embeddings_probe(self.engine, self.model_id(), ids)
        if state.vectors and not self._vector_probe(state).ok:
            synced = service.sync_index(full=True)
            actions.append(f"vector index rebuilt from the stored vectors ({synced.size:,} vectors)")
        elif not index.ok:
            actions.append("vector index brought up to date")
        return actions
