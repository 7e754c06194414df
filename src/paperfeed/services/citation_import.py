"""Importing citations in bulk (issue #33): ``paperfeed citations import FILE…``.

Each file is read batch by batch (:class:`~paperfeed.domain.citation_import.CitationFile`) and each batch
saved with the file's new place in the import ledger, in one transaction. A file whose last import was cut
short (a kill -9, a full disk) resumes after its last saved batch; a file imported to its end is read again
from its start, which adds nothing (every pair is there already, with this file among its sources).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from paperfeed.domain.citation_import import (
    CitationFile,
    CitationFiles,
    CitationImportRecords,
    ImportFormat,
)
from paperfeed.domain.ingest import Reject
from paperfeed.domain.ports import ProgressReporter

__all__ = ["IMPORT_BATCH", "CitationImport", "FileReport"]

# Records per transaction: 20,000 edges of a pairs file are about 0.1 s of work, so a kill loses little,
# and per-batch costs (a few lookups, the ledger row, the commit) stay below 5 % (bench/citation_import.py).
IMPORT_BATCH = 20_000


@dataclass(slots=True)
class FileReport:
    """What importing one file did (this run; ``resumed_at`` says where it took up an earlier one)."""

    name: str
    format: ImportFormat
    source: str
    resumed_at: int | None = None  # the line after which this run went on
    lines: int = 0  # the file's last line read
    records: int = 0
    edges_added: int = 0
    edges_merged: int = 0  # stored already (a harvest, another file): gained this file as a source
    edges_unchanged: int = 0  # stored already with this file as a source
    works_added: int = 0
    aliases: int = 0
    resolved: int = 0
    self_citations: int = 0
    outside_store: int = 0
    unkeyed: int = 0
    rejected: int = 0
    stopped: bool = False  # the file broke off (a fatal reject): the next import resumes there


@dataclass
class CitationImport:
    """Opens citation files and imports them into the paper graph."""

    files: CitationFiles
    records: CitationImportRecords

    def open(self, path: str, fmt: ImportFormat | None, *, batch_size: int = IMPORT_BATCH) -> CitationFile:
        """The file, its format told from its first record unless given; raises
        :class:`~paperfeed.domain.citation_import.UnreadableCitationFile`."""
        return self.files.open(path, fmt, batch_size=batch_size)

    def run(
        self,
        file: CitationFile,
        progress: ProgressReporter,
        *,
        touching_store: bool = False,
        on_rejects: Callable[[Sequence[Reject]], None] = lambda _: None,
    ) -> FileReport:
        """Import ``file`` from where its last import stopped (or its start)."""
        mark = file.mark
        report = FileReport(mark.name, mark.format, mark.source)
        state = self.records.state(mark.fingerprint)
        start = None
        if state is not None and not state.done and state.point.line > 0:
            start = state.point
            report.resumed_at = state.point.line
        elif state is not None:
            self.records.restart(mark)
        progress.update(0, file.size, 0, 0, 0)
        for batch in file.batches(start):
            saved = self.records.save_batch(batch, mark, touching_store=touching_store)
            report.lines = batch.point.line
            report.records += batch.records
            report.unkeyed += batch.unkeyed
            report.rejected += len(batch.rejects)
            report.stopped = report.stopped or any(r.fatal for r in batch.rejects)
            for name in (
                "edges_added",
                "edges_merged",
                "edges_unchanged",
                "works_added",
                "aliases",
                "resolved",
                "self_citations",
                "outside_store",
            ):
                setattr(report, name, getattr(report, name) + getattr(saved, name))
            if batch.rejects:
                on_rejects(batch.rejects)
            progress.update(
                batch.position, file.size, report.edges_added, report.edges_merged, report.rejected
            )
        if not report.stopped:
            self.records.finish(mark)
        return report
