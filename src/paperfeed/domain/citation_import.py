"""Citations in bulk (issue #33): files of who-cites-whom, imported into the paper graph the harvest fills.

A file is read in batches (:class:`EdgeBatch`), each saved in one transaction together with the file's
place in the ledger (the decompressed byte offset and the line number after the batch), so a kill -9 loses
at most the batch in flight and the same command resumes after the last saved batch. Every edge lands in
the harvest's ``citations`` table, keyed the way the harvest keys works (:func:`work_key`), with the file
as its provenance beside the harvest's ``s2`` / ``openalex`` (:func:`provenance`); an edge already stored
gains the file as a source and nothing else, so importing a file twice adds nothing.

Three shapes of file (``docs/citations.md`` shows each):

* :attr:`ImportFormat.PAIRS`: TSV, CSV or JSON lines of (citing, cited) ids, each an arXiv id in any
  spelling (old or new style, with or without version) or a DOI (:func:`work_ref`).
* :attr:`ImportFormat.S2_CITATIONS` / :attr:`ImportFormat.S2_PAPERS`: the Semantic Scholar Datasets'
  ``citations`` records (corpus id to corpus id) and ``papers`` records (a corpus id's external ids).
* :attr:`ImportFormat.OPENALEX`: OpenAlex works snapshot records (a work and its ``referenced_works``).

A work a file names only by a source's own id (an S2 corpus id, an OpenAlex ``W`` id) is kept under that
id, ``s2corpus:<n>`` or ``openalex:W<n>``, like the harvest keeps a reference it cannot resolve; an
*alias* (``s2corpus:<n>`` -> ``2401.12345``) learned from a papers or works record, in the same file or a
later one, resolves it: later edges use the work's key at once, and the edges stored under the alias move
to the key (see ``adapters/store/citation_import.py``).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from enum import Enum
from typing import Protocol

from .ids import InvalidPaperId, parse_arxiv_id
from .ingest import Reject
from .paper_graph import WorkRef, work_key

__all__ = [
    "BatchSaved",
    "CitationFile",
    "CitationFiles",
    "CitationImportRecords",
    "EdgeBatch",
    "EdgeDetail",
    "FileMark",
    "ImportFormat",
    "ImportPoint",
    "ImportState",
    "InvalidWorkId",
    "UnreadableCitationFile",
    "provenance",
    "s2_corpus_key",
    "work_ref",
]


class ImportFormat(Enum):
    PAIRS = "pairs"  # TSV / CSV / JSONL of (citing, cited) arXiv ids or DOIs
    S2_CITATIONS = "s2-citations"  # Semantic Scholar Datasets, ``citations``
    S2_PAPERS = "s2-papers"  # Semantic Scholar Datasets, ``papers`` (corpus id -> external ids)
    OPENALEX = "openalex-works"  # OpenAlex snapshot, ``works``


# The provenance an imported edge carries in ``citations.sources``: the kind of file, then its name.
_KIND = {
    ImportFormat.PAIRS: "file",
    ImportFormat.S2_CITATIONS: "s2-datasets",
    ImportFormat.S2_PAPERS: "s2-datasets",
    ImportFormat.OPENALEX: "openalex-snapshot",
}


def provenance(fmt: ImportFormat, file_name: str) -> str:
    """The source name an imported edge carries (``file:edges.tsv.gz``, ``s2-datasets:citations-7.gz``):
    told apart from the harvest's ``s2`` and ``openalex`` by the colon, and naming the file it came from."""
    return f"{_KIND[fmt]}:{file_name}"


class InvalidWorkId(ValueError):
    """An id of a pairs file that is neither an arXiv id nor a DOI; the message says which."""


class UnreadableCitationFile(ValueError):
    """A file that cannot be imported at all (missing, unreadable, of no format we know): bad usage."""


_DOI_PREFIXES = ("https://doi.org/", "http://doi.org/", "https://dx.doi.org/", "http://dx.doi.org/", "doi:")


def work_ref(text: str) -> str:
    """The work key of one id of a pairs file: an arXiv id in any spelling (``hep-th/9407087v2``,
    ``arXiv:2401.12345``, an abs URL) gives the version-less id, a DOI (bare, ``doi:…`` or a doi.org URL)
    ``doi:<lower-case DOI>`` (an arXiv DOI, ``10.48550/arXiv.…``, the arXiv id). Anything else is
    :class:`InvalidWorkId`."""
    raw = text.strip()
    try:
        return parse_arxiv_id(raw).base
    except InvalidPaperId:
        pass
    lowered = raw.lower()
    for prefix in _DOI_PREFIXES:
        if lowered.startswith(prefix):
            lowered = lowered[len(prefix) :].strip()
            break
    if lowered.startswith("10."):
        key = work_key(doi=lowered)
        if key is not None:
            return key
        raise InvalidWorkId(f"not a DOI (10.<4-9 digits>/<suffix>): {raw[:80]!r}")
    if not raw:
        raise InvalidWorkId("empty id")
    raise InvalidWorkId(f"not an arXiv id or a DOI: {raw[:80]!r}")


_CORPUS_ID = re.compile(r"[1-9]\d{0,11}")


def s2_corpus_key(value: object) -> str | None:
    """``s2corpus:<n>`` for a Semantic Scholar corpus id (a positive integer, or its digits as text, as
    the datasets' releases write it); ``None`` when it is not one."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return f"s2corpus:{value}" if 0 < value < 10**12 else None
    if isinstance(value, str) and _CORPUS_ID.fullmatch(value.strip()):
        return f"s2corpus:{value.strip()}"
    return None


@dataclass(frozen=True, slots=True)
class EdgeDetail:
    """What a Semantic Scholar citations record says about one edge beyond its two ends."""

    is_influential: bool | None = None
    contexts: tuple[str, ...] = ()
    intents: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class ImportPoint:
    """Where a file's import stands: bytes of its (decompressed) text and lines read and saved."""

    offset: int
    line: int


@dataclass(slots=True)
class EdgeBatch:
    """What one stretch of a file says; saved in one transaction with :attr:`point`.

    ``edges`` are (citing, cited) *references*, in file order, repeats allowed: a work key, or an alias
    (``s2corpus:…``, ``openalex:W…``, a ``doi:…`` a record tied to an arXiv id) resolved when saved.
    ``details`` carry influence, contexts and intents where the file has them. ``works`` describe works
    (records of a papers or works file: title, date, ids, counts), ``aliases`` say which key an alias
    stands for. ``unkeyed`` counts edges whose end has no id at all (S2's unmatched references), which
    cannot be stored, like the harvest's references without a usable id.
    """

    point: ImportPoint
    position: int = 0  # bytes of the file on disk read (for a progress bar)
    edges: list[tuple[str, str]] = field(default_factory=list)
    details: dict[tuple[str, str], EdgeDetail] = field(default_factory=dict)
    works: list[WorkRef] = field(default_factory=list)
    aliases: list[tuple[str, str]] = field(default_factory=list)
    rejects: list[Reject] = field(default_factory=list)
    unkeyed: int = 0
    records: int = 0  # lines read that were records (taken or rejected): not blank, comment or header


@dataclass(frozen=True, slots=True)
class FileMark:
    """A file in the import ledger: ``fingerprint`` tells the same file again (its size and first
    megabyte), so an interrupted import resumes only into the very file it was reading."""

    fingerprint: str
    name: str
    format: ImportFormat
    source: str  # :func:`provenance`


@dataclass(frozen=True, slots=True)
class ImportState:
    """A file's row of the ledger: where its import stands and what it added so far (this pass)."""

    point: ImportPoint
    done: bool
    edges_added: int
    rejected: int


@dataclass(slots=True)
class BatchSaved:
    """What saving one batch changed."""

    edges_added: int = 0  # new (citing, cited) pairs
    edges_merged: int = 0  # pairs already stored (by a harvest or another file) that gained this source
    edges_unchanged: int = 0  # pairs already stored with this source: what a second import finds
    works_added: int = 0
    aliases: int = 0  # aliases learned (or changed)
    resolved: int = 0  # works stored under an alias that moved to their key
    self_citations: int = 0  # both ends one work (after resolving): dropped, like the harvest does
    outside_store: int = 0  # neither end a paper of this instance, with ``touching_store``: left out


class CitationFile(Protocol):
    """One file opened for import (``adapters/sources/citation_files.py``)."""

    @property
    def mark(self) -> FileMark: ...

    @property
    def size(self) -> int:
        """Bytes on disk (the progress bar's total)."""
        ...

    def batches(self, start: ImportPoint | None) -> Iterator[EdgeBatch]:
        """The file's batches from ``start`` (the beginning when ``None``); every line is in exactly one
        batch, taken or rejected with its ``file:line`` and reason. A file that breaks off (a truncated
        gzip) ends with a fatal reject."""
        ...


class CitationFiles(Protocol):
    """Opens files for import; raises :class:`UnreadableCitationFile` when one cannot be read at all."""

    def open(self, path: str, fmt: ImportFormat | None, *, batch_size: int) -> CitationFile:
        """``path`` in ``fmt``, or in the format its first record shows when ``fmt`` is ``None``."""
        ...


class CitationImportRecords(Protocol):
    """The store side: the paper graph, the aliases and the import ledger (SQLite and PostgreSQL)."""

    def state(self, fingerprint: str) -> ImportState | None:
        """The ledger's row of this file, if it was ever imported."""
        ...

    def save_batch(self, batch: EdgeBatch, mark: FileMark, *, touching_store: bool) -> BatchSaved:
        """Store the batch (aliases, works, edges) and the file's new place, all of it or nothing.
        ``touching_store``: keep only edges with an end among the store's papers, and descriptions only of
        works those edges name, the graph already holds, or the store's papers."""
        ...

    def restart(self, mark: FileMark) -> None:
        """Mark the file as read again from its start (a finished file imported again)."""
        ...

    def finish(self, mark: FileMark) -> None:
        """Mark the file done: the next import of it reads it again from the start (and adds nothing)."""
        ...
