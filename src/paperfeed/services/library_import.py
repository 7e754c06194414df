"""Importing a reader's library from BibTeX, RIS, CSL-JSON or a list of arXiv ids.

1. The whole file is parsed first: a broken file raises
   :class:`~paperfeed.domain.library.BibliographyError` (the bibliography parser port) before anything
   is written.
2. Papers not yet in the store are fetched from the arXiv API in batches (100 ids a request) and go
   through the ingest service like any other source; ids arXiv does not know are reported.
3. All found papers are saved to the chosen tag in one transaction. With ``with_tags`` (importing an
   export of paperfeed or a reference manager), an entry that names tags (BibTeX ``keywords``, RIS
   ``KW``, CSL-JSON ``keyword``) is saved to those tags instead, and its note becomes the reader's
   note on the paper where they have none yet.

Importing the same file again fetches nothing and saves nothing new. If arXiv cannot be reached, the
import stops before step 3: the library is unchanged (papers already fetched stay in the store, which
is harmless) and running it again finishes the job.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from paperfeed.domain.library import (
    DEFAULT_TAG,
    BibliographyError,
    BibliographyParser,
    CitedWork,
    Format,
    InvalidLibraryInput,
    arxiv_ids,
    check_note,
    check_tag_name,
)
from paperfeed.domain.ports import PaperFetcher, ProgressReporter
from paperfeed.services.ingest import IngestService
from paperfeed.services.library import LibraryService

__all__ = ["ImportReport", "LibraryImporter"]


@dataclass
class ImportReport:
    """What one import found and did; ``problems`` name each entry that was not saved and why."""

    source: str
    tag: str
    entries: int = 0
    with_arxiv_id: int = 0
    saved: int = 0  # newly saved to the tag
    already_saved: int = 0
    fetched: int = 0  # papers fetched from arXiv and added to the store
    notes: int = 0  # notes added (``with_tags``: the file's notes, where the reader had none)
    problems: list[CitedWork] = field(default_factory=list)  # entries not saved, with the reason

    @property
    def not_saved(self) -> int:
        return len(self.problems)


@dataclass
class LibraryImporter:
    library: LibraryService
    ingest: IngestService
    fetcher: Callable[[], PaperFetcher]  # built on first use: an import of known papers needs no network
    parse: BibliographyParser

    def import_file(
        self,
        user_id: int,
        path: Path,
        *,
        tag: str = DEFAULT_TAG,
        fmt: Format = "auto",
        fetch: bool = True,
        max_fetch: int | None = None,
        progress: ProgressReporter | None = None,
        with_tags: bool = False,
    ) -> ImportReport:
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise BibliographyError(f"{path}: cannot read: {exc.strerror or exc}") from None
        return self.import_bytes(
            user_id,
            data,
            path.name,
            tag=tag,
            fmt=fmt,
            fetch=fetch,
            max_fetch=max_fetch,
            progress=progress,
            with_tags=with_tags,
        )

    def import_bytes(
        self,
        user_id: int,
        data: bytes,
        name: str,
        *,
        tag: str = DEFAULT_TAG,
        fmt: Format = "auto",
        fetch: bool = True,
        max_fetch: int | None = None,
        progress: ProgressReporter | None = None,
        with_tags: bool = False,
    ) -> ImportReport:
        """Parse ``data`` (a file called ``name``), fetch what is missing, save everything found to ``tag``.

        ``max_fetch`` caps the papers fetched from arXiv (web uploads must answer quickly); the rest are
        reported as not fetched. ``with_tags``: save each entry to the tags it names (``tag`` when it
        names none) and add its note where the reader has none.
        """
        tag_name = check_tag_name(tag)
        works = self.parse(data, name, fmt)
        report = ImportReport(source=name, tag=tag_name, entries=len(works))
        ids = arxiv_ids(works)
        report.with_arxiv_id = sum(1 for w in works if w.arxiv_id)
        records = self.library.records
        present = records.existing_papers(ids)
        missing = [i for i in ids if i not in present]
        skipped: set[str] = set()
        if missing and fetch:
            wanted = missing if max_fetch is None else missing[: max(0, max_fetch)]
            skipped = set(missing[len(wanted) :])
            if wanted:
                summary = self.ingest.run(self.fetcher().papers(wanted), progress)
                report.fetched = summary.added
            present = records.existing_papers(ids)
        elif missing:
            skipped = set(missing)
        for work in works:
            if work.arxiv_id is None:
                report.problems.append(work)
            elif work.arxiv_id not in present:
                why = (
                    "not in this instance and not fetched"
                    + (" (--no-fetch)" if not fetch else " (too many papers to fetch at once)")
                    if work.arxiv_id in skipped
                    else "not found on arXiv"
                )
                report.problems.append(
                    CitedWork(work.where, work.arxiv_id, work.title, f"{work.arxiv_id}: {why}")
                )
        found = [i for i in ids if i in present]
        if not found:
            return report
        if not with_tags:
            report.saved, report.already_saved = self.library.save_many(user_id, found, tag_name)
            return report
        targets: dict[str, list[str]] = {}
        notes: dict[str, str] = {}
        for work in works:
            if work.arxiv_id in present:
                names = targets.setdefault(work.arxiv_id, [])
                names += [n for n in (_tag_name(t) for t in work.tags) if n and n not in names]
                if work.note and work.arxiv_id not in notes and (note := _note_body(work.note)):
                    notes[work.arxiv_id] = note
        plan = {pid: tuple(names) or (tag_name,) for pid, names in targets.items()}
        report.saved, report.already_saved = self.library.save_tagged(user_id, plan)
        report.notes = self.library.add_notes(user_id, notes)
        return report


def _tag_name(name: str) -> str | None:
    try:
        return check_tag_name(name)
    except InvalidLibraryInput:  # e.g. a keyword longer than a tag may be: not a tag of ours
        return None


def _note_body(body: str) -> str | None:
    try:
        return check_note(body) or None
    except InvalidLibraryInput:
        return None
