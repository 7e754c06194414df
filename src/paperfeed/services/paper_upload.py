"""An administrator's upload of a file of papers: tell its kind, import it like ``paperfeed import`` does.

The file arrives whole (the web surface streams it to a private temporary folder and enforces the size
limit) before anything is read as papers. The import then is exactly the CLI's: the ingest service
stores each batch in one transaction with the keyword index following it, valid records go in and every
invalid one is a reject naming ``file:line`` and why; embedding is left to the background indexer.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from paperfeed.domain.paper_upload import HEAD_BYTES, UploadKind, UploadReport, detect_upload_kind
from paperfeed.domain.ports import PaperSource
from paperfeed.services.coverage import CoverageService
from paperfeed.services.ingest import IngestService

__all__ = ["PaperUploads"]

# (the file, its kind, the name it was uploaded as) -> the source that reads it
SourceOpener = Callable[[Path, UploadKind, str], PaperSource]


@dataclass
class PaperUploads:
    ingest: IngestService
    open_source: SourceOpener
    coverage: CoverageService | None = None  # recounted after an import (the search's coverage note)

    def import_file(self, path: Path, name: str) -> UploadReport:
        """Import ``path`` (uploaded as ``name``); :class:`~paperfeed.domain.paper_upload.UnsupportedUpload`
        when it is neither JSONL nor BibTeX, before anything is written."""
        with path.open("rb") as file:
            head = file.read(HEAD_BYTES)
        kind, gzipped = detect_upload_kind(name, head)
        try:
            summary = self.ingest.run(self.open_source(path, kind, name))
        finally:
            if self.coverage is not None:
                self.coverage.forget()
        return UploadReport.of(name, kind, gzipped, summary)
