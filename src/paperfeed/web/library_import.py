"""A reader's bibliography upload, for the import page (``/library/import``) and the API
(``POST /api/me/library/import``, ``GET /api/me/library/import``) alike.

The upload is handed to the importer as the stream Starlette spooled it to (its first megabyte in memory,
the rest on disk), so the server holds what the entry cap lets the parser read, never the file. The answer
counts what happened and names a bounded sample of what was not saved (:data:`SAMPLE`); papers to fetch
from arXiv are fetched in the background and followed through :func:`status_json`.
"""

from __future__ import annotations

from typing import Any

from fastapi import Request, UploadFile
from starlette.concurrency import run_in_threadpool

from paperfeed.domain.accounts import User
from paperfeed.domain.library import Format
from paperfeed.services.library_import import ImportReport, ImportStatus

from .deps import app_of

__all__ = ["SAMPLE", "report_json", "start_import", "status_json"]

SAMPLE = 100  # entries an answer names of those not saved (it counts all of them)


async def start_import(
    request: Request, user: User, file: UploadFile, tag: str, fmt: Format, with_tags: bool
) -> ImportReport:
    """Import the uploaded ``file`` for ``user`` under the site's caps (``PAPERFEED_LIBRARY_IMPORT_*``);
    raises what :meth:`~paperfeed.services.library_import.LibraryImporter.start` raises."""
    app = app_of(request)
    settings = app.settings
    name = (file.filename or "upload").rsplit("/", 1)[-1][:100] or "upload"
    try:
        return await run_in_threadpool(
            app.readers.library_import.start,
            user.id,
            file.file,
            name,
            tag=tag,
            fmt=fmt,
            with_tags=with_tags,
            max_entries=settings.library_import_max_entries,
            max_fetch=settings.library_import_max_fetch,
        )
    finally:  # the parse's objects are gone: hand their pages back (bench/bounded_import.py: -17 MiB)
        await run_in_threadpool(app.core.release_free_memory)


def report_json(report: ImportReport) -> dict[str, Any]:
    """The API's answer to an upload: counts, and at most :data:`SAMPLE` of the entries not saved."""
    return {
        "source": report.source,
        "tag": report.tag,
        "entries": report.entries,
        "moreEntries": report.more,  # the file had more than maxEntries entries: those were not read
        "maxEntries": report.max_entries,
        "withArxivId": report.with_arxiv_id,
        "saved": report.saved,
        "alreadySaved": report.already_saved,
        "fetched": report.fetched,
        "notesAdded": report.notes,
        "notSavedCount": report.not_saved,
        "notSaved": [
            {"where": w.where, "arxivId": w.arxiv_id, "reason": w.problem} for w in report.problems[:SAMPLE]
        ],
        "fetching": report.fetching,  # papers a background job fetches, then saves: see job
        "job": report.job,
    }


def status_json(status: ImportStatus | None) -> dict[str, Any] | None:
    """A reader's latest background import, as ``GET /api/me/library/import`` answers it."""
    if status is None:
        return None
    return {
        "id": status.job,
        "state": status.state,  # running | ok | failed | interrupted
        "source": status.source,
        "tag": status.tag,
        "startedAt": status.started_at.isoformat(),
        "finishedAt": status.finished_at.isoformat() if status.finished_at else None,
        "total": status.total,
        "done": status.done,
        "fetched": status.fetched,
        "saved": status.saved,
        "alreadySaved": status.already_saved,
        "notFound": status.not_found,
        "notFoundSample": list(status.not_found_sample),
        "error": status.error,
    }
