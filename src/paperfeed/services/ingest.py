"""Ingestion: pull batches from a source, apply each atomically, checkpoint, count, report progress."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

from paperfeed.domain.ingest import IngestSummary
from paperfeed.domain.ports import PaperSource, PaperStore, ProgressReporter, RecordRealizer

# Called with the ids of papers a committed batch added or changed (derived indexes refresh them).
ChangeListener = Callable[[Sequence[str]], None]

__all__ = ["IngestService"]


@dataclass
class IngestService:
    store: PaperStore
    listeners: list[ChangeListener] = field(default_factory=list)

    def run(
        self,
        source: PaperSource,
        progress: ProgressReporter | None = None,
        *,
        resume: bool = True,
        summary: IngestSummary | None = None,
    ) -> IngestSummary:
        """Ingest everything ``source`` yields; resumes from its checkpoint unless ``resume`` is False.

        Each batch commits on its own with the source's checkpoint, so an interrupted run loses at most
        the batch in flight and a re-run picks up after the last committed one.
        """
        summary = summary if summary is not None else IngestSummary()
        name = source.checkpoint_name
        start = self.store.get_checkpoint(name) if (resume and name) else None
        for batch in source.batches(start):
            skipped = 0
            if batch.raw and isinstance(source, RecordRealizer):
                known = self.store.known_fingerprints(source.name, [r.key for r in batch.raw])
                fresh = [r for r in batch.raw if known.get(r.key) != r.fingerprint]
                skipped = len(batch.raw) - len(fresh)
                source.realize(batch, fresh)
            result = self.store.apply_batch(batch)
            if skipped:
                result = replace(result, skipped=skipped)
            summary.add(result, batch.rejects)
            if result.changed_ids:
                for listener in self.listeners:
                    listener(result.changed_ids)
            if progress is not None:
                progress.update(batch.position, batch.total, summary.added, summary.updated, summary.rejected)
        return summary
