"""``paperfeed check``: are the keyword index and the vector index consistent with the store? And repair.

The store is the truth; both indexes are derived from it. The check reads every area without changing
anything, through the :class:`~paperfeed.domain.consistency.ConsistencyInspector` port
(``adapters/consistency.py``); a repair then does the least that fixes what was found, chosen by each
finding's :class:`~paperfeed.domain.consistency.FindingKind`, through the adapters' own operations:

* keyword index: re-index the papers that are missing, stale or doubled and drop documents of papers the
  store no longer has (tantivy); apply the queue or rebuild (FTS5); recompute stale documents
  (PostgreSQL). An unreadable index is rebuilt from the store.
* embeddings: drop vectors of papers that are gone; embed papers with no vector or a stale one (the
  ``paperfeed index`` backlog).
* vector index: bring it up to date from the stored vectors; when it is unreadable, of another model, or
  still inconsistent after that, rebuild it from the stored vectors (no re-embedding).
* evidence search's sentence indexes (keyword and vectors, issue #42): each against the stored sentences,
  by count and by its cursor; a repair catches them up, and rebuilds one still inconsistent after that.

Afterwards the check runs again, and the report says what, if anything, is still wrong.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from paperfeed.domain.consistency import ConsistencyInspector, FindingKind, Probe
from paperfeed.domain.search import EmbedderSource
from paperfeed.domain.wording import count
from paperfeed.services.embedders import Indexer
from paperfeed.services.evidence_index import EvidenceIndexes

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

    inspector: ConsistencyInspector
    embedder: EmbedderSource  # the embedder in use: its model id is read without loading the model
    indexer: Indexer  # the indexing service of that model, for a repair that needs it
    evidence: EvidenceIndexes | None = None  # the sentence indexes of evidence search

    def check(self) -> CheckReport:
        started = time.monotonic()
        probes = self._probe()
        return CheckReport(probes, time.monotonic() - started)

    def _probe(self) -> list[Probe]:
        return [*self.inspector.probe(self.embedder.current().model_id), *self._sentence_probes()]

    def _sentence_probes(self) -> list[Probe]:
        """The sentence indexes against the stored sentences (one probe each)."""
        if self.evidence is None:
            return []
        probes = []
        for found in self.evidence.check():
            probe = Probe(
                found.name, f"{found.indexed:,} of {found.stored:,} stored sentences", kind=found.detail
            )
            if found.behind:
                probe.add(
                    FindingKind.not_indexed,
                    "sentences stored after the index last followed the store",
                    count=max(1, found.stored - found.indexed),
                )
            elif found.stored != found.indexed:
                probe.add(
                    FindingKind.index_miscounted,
                    f"sentences indexed ({found.indexed:,}) differ from those stored ({found.stored:,})",
                    count=abs(found.stored - found.indexed),
                )
            probes.append(probe)
        return probes

    # -- repair -------------------------------------------------------------------------------------------

    def repair(self, report: CheckReport | None = None) -> CheckReport:
        """Check (unless given a report), fix what was found, and check again."""
        report = report or self.check()
        started = time.monotonic()
        by_area = {p.area: p for p in report.probes}
        if not by_area["keyword"].ok:
            report.actions.append(self.inspector.repair_keyword(by_area["keyword"]))
        if not by_area["embeddings"].ok or not by_area["vector index"].ok:
            report.actions.extend(self._repair_vectors(by_area["embeddings"], by_area["vector index"]))
        if self.evidence is not None and any(not p.ok for p in self._sentence_probes()):
            report.actions.extend(self._repair_sentences(self.evidence))
        if not by_area["store"].ok:
            report.actions.append(
                "papers under non-canonical ids are left as they are: re-import them from their source "
                "(the importers store canonical ids) and delete the odd rows by hand"
            )
        report.after = self._probe()
        report.seconds += time.monotonic() - started
        return report

    @staticmethod
    def _repair_sentences(evidence: EvidenceIndexes) -> list[str]:
        """Catch both sentence indexes up; rebuild one that is still off (deleted papers, a lost file)."""
        actions = [evidence.catch_up().message()]
        keyword, vector = evidence.check()
        if not keyword.consistent:
            actions.append(f"sentence keyword index rebuilt ({count(evidence.keyword.rebuild(), 'paper')})")
        if not vector.consistent:
            actions.append(f"sentence vector index rebuilt ({count(evidence.vectors().rebuild(), 'paper')})")
        return actions

    def _repair_vectors(self, table: Probe, index: Probe) -> list[str]:
        actions: list[str] = []
        for finding in table.findings:
            if finding.kind is FindingKind.orphan_vector:
                deleted = self.inspector.delete_vectors(sorted(finding.ids))
                actions.append(f"deleted {count(deleted, 'vector')} of deleted papers")
        service = self.indexer.current()
        backlog = any(f.kind is not FindingKind.orphan_vector for f in table.findings)
        if backlog:
            summary = service.run()
            actions.append(f"embedded {count(summary.embedded, 'paper')} that had no current vector")
        if not self.inspector.vector_index_consistent(self.embedder.current().model_id):
            synced = service.sync_index(full=True)
            actions.append(f"vector index rebuilt from the stored vectors ({count(synced.size, 'vector')})")
        elif not index.ok:
            actions.append("vector index brought up to date")
        return actions
