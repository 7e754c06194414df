"""An administrator's upload of a file of papers (web drag-and-drop): what kind of file it is, what it did.

The kind is told from the content, not the name a browser sends: a JSONL file (ours or arXiv's snapshot,
gzip or plain) starts with ``{``; a BibTeX file has an ``@entry{`` at the start of a line. Anything else
is refused before any of it is read as papers.
"""

from __future__ import annotations

import re
import zlib
from dataclasses import dataclass, field
from typing import Literal

from .ingest import IngestSummary, Reject

__all__ = [
    "HEAD_BYTES",
    "UnsupportedUpload",
    "UploadKind",
    "UploadReport",
    "detect_upload_kind",
    "upload_name",
]

UploadKind = Literal["jsonl", "bibtex"]
HEAD_BYTES = 64 * 1024  # how much of a file (decompressed) is looked at to tell its kind
_GZIP = b"\x1f\x8b"
_BOM = b"\xef\xbb\xbf"
_BIBTEX_ENTRY = re.compile(rb"^[ \t]*@[A-Za-z]+[ \t]*[{(]", re.MULTILINE)
_UNSAFE_NAME = re.compile(r"[^\w.\- ()+,]+", re.UNICODE)


class UnsupportedUpload(ValueError):
    """The file is not one of the kinds an upload takes (the message says what it looked like)."""


def upload_name(filename: str | None) -> str:
    """The name to call an uploaded file by in messages and as its source (``file:<name>``): the last
    path segment a browser sent, without control or shell characters, at most 100 characters."""
    base = (filename or "").replace("\\", "/").rsplit("/", 1)[-1]
    cleaned = _UNSAFE_NAME.sub("_", base).strip(" .")[:100]
    return cleaned or "upload"


def _decompressed_head(head: bytes) -> bytes:
    """The first bytes of a gzip file's content (``head`` may be cut anywhere)."""
    try:
        content = zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(head, HEAD_BYTES)
    except zlib.error as exc:
        raise UnsupportedUpload(f"it looks like gzip but cannot be decompressed ({exc})") from None
    if not content.strip():
        raise UnsupportedUpload("it looks like gzip but nothing could be read from it")
    return content


def _describe(start: bytes) -> str:
    sample = start.lstrip()[:12]
    if not sample:
        return "it is empty"
    if sample.startswith(b"%PDF"):
        return "it is a PDF"
    if sample.startswith(b"PK\x03\x04"):
        return "it is a zip archive"
    text = sample.decode("utf-8", errors="replace")
    shown = "".join(ch if ch.isprintable() else "?" for ch in text)
    return f"it starts with {shown!r}"


def detect_upload_kind(name: str, head: bytes) -> tuple[UploadKind, bool]:
    """``(kind, gzipped)`` of a file whose first bytes are ``head``; :class:`UnsupportedUpload` if it is
    neither JSONL nor BibTeX. ``name`` is only for the message."""
    gzipped = head.startswith(_GZIP)
    try:
        content = _decompressed_head(head) if gzipped else head
    except UnsupportedUpload as exc:
        raise UnsupportedUpload(f"{name}: not a JSONL or BibTeX file ({exc}).") from None
    start = content.removeprefix(_BOM)
    first = start.lstrip()[:1]
    if first == b"{":
        return "jsonl", gzipped
    if _BIBTEX_ENTRY.search(start):
        return "bibtex", gzipped
    raise UnsupportedUpload(
        f"{name}: not a JSONL or BibTeX file ({_describe(start)}). Upload papers as JSON lines "
        "(.jsonl or .jsonl.gz, one paper object per line, as `paperfeed import` reads) or as BibTeX (.bib)."
    )


@dataclass
class UploadReport:
    """What one upload did: the import's counts, and every reject kept (where, which field, why)."""

    name: str
    kind: UploadKind
    gzipped: bool
    added: int = 0
    updated: int = 0
    unchanged: int = 0
    rejected: int = 0
    rejects: list[Reject] = field(default_factory=list)

    @classmethod
    def of(cls, name: str, kind: UploadKind, gzipped: bool, summary: IngestSummary) -> UploadReport:
        return cls(
            name,
            kind,
            gzipped,
            summary.added,
            summary.updated,
            summary.unchanged,
            summary.rejected,
            list(summary.rejects),
        )

    @property
    def stored(self) -> int:
        """Papers now in the store from this file (new, changed or already there unchanged)."""
        return self.added + self.updated + self.unchanged

    @property
    def fatal(self) -> Reject | None:
        """The reject that stopped reading the file (a truncated gzip), if one did."""
        return next((r for r in self.rejects if r.fatal), None)

    @property
    def format_label(self) -> str:
        return ("JSONL" if self.kind == "jsonl" else "BibTeX") + (" (gzip)" if self.gzipped else "")
