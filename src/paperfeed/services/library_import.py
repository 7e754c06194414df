"""Importing a reader's library from BibTeX, RIS, CSL-JSON or a list of arXiv ids.

From the command line (:meth:`LibraryImporter.import_file`, the operator's tool):

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

From the site and the API (:meth:`LibraryImporter.start`), every request's work is bounded: the upload is
read as a stream and at most ``max_entries`` entries of it are parsed (the answer says when the file had
more); the papers already here are saved at once; the slow part, fetching at most ``max_fetch`` unknown
papers from arXiv, is a background job (:class:`ImportJobs`) whose progress the reader sees
(:meth:`LibraryImporter.status`, recorded as a job run); and a reader has at most one import at a time (a
lease per reader: another upload meanwhile is :class:`ImportBusy`). A paper an administrator hid is
handled as one this instance does not have (see :meth:`LibraryImporter._shown`).
"""

from __future__ import annotations

import io
import logging
import secrets
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import BinaryIO

from paperfeed.domain.job_runs import RunStore, StepReport
from paperfeed.domain.library import (
    DEFAULT_TAG,
    Bibliography,
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
from paperfeed.domain.wording import count
from paperfeed.services.ingest import IngestService
from paperfeed.services.jobs import holder_is_dead, process_identity
from paperfeed.services.library import LibraryService

__all__ = [
    "SAMPLE",
    "ImportBusy",
    "ImportJobs",
    "ImportReport",
    "ImportStatus",
    "LibraryImporter",
    "ReaderWork",
]

log = logging.getLogger(__name__)

SAMPLE = 20  # ids named in a job's status: what an answer lists of what it counts
_LEASE = timedelta(minutes=10)  # a dead worker's import stops blocking its reader after this
_SAVE_EVERY = 1.0  # seconds between progress writes
_JOB = "library-import"  # job_runs.job is f"{_JOB}:{user_id}"


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
    more: bool = False  # the file had entries past ``max_entries``, not read
    max_entries: int | None = None
    fetching: int = 0  # papers a background job is fetching from arXiv (then saved to their tags)
    job: int | None = None  # that job's run id (:meth:`LibraryImporter.status`)

    @property
    def not_saved(self) -> int:
        return len(self.problems)


@dataclass(frozen=True, slots=True)
class ImportStatus:
    """A reader's latest background import: ``running``, ``ok``, ``failed`` or ``interrupted``."""

    job: int
    state: str
    started_at: datetime
    finished_at: datetime | None
    source: str
    tag: str
    total: int  # papers to fetch
    done: int  # of them asked of arXiv so far
    fetched: int  # added to the store
    saved: int  # newly saved to the reader's tags
    already_saved: int
    not_found: int  # not on arXiv (or not available here): not saved
    not_found_sample: tuple[str, ...]  # the first :data:`SAMPLE` of them
    error: str | None

    @property
    def running(self) -> bool:
        return self.state == "running"


class ImportBusy(RuntimeError):
    """The reader already has an import running; ``status`` is it (None: another one is being read)."""

    def __init__(self, status: ImportStatus | None) -> None:
        if status is not None and status.running:
            what = f"fetching {count(status.total, 'paper')} from arXiv, {status.done:,} asked so far"
        else:
            what = "a file is being read"
        super().__init__(f"An import of yours is already running ({what}); wait for it to finish.")
        self.status = status


class ReaderWork:
    """One background thread for readers' slow work (an import's arXiv fetches): jobs run one after the
    other, so however many readers import at once the server holds one fetch and arXiv sees one client.
    :meth:`close` asks the running job to stop at its next batch and waits for it."""

    def __init__(self) -> None:
        from concurrent.futures import ThreadPoolExecutor

        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="paperfeed-reader-work")
        self.stopping = threading.Event()

    def submit(self, work: Callable[[], None]) -> None:
        self._pool.submit(work)

    def close(self) -> None:
        self.stopping.set()
        self._pool.shutdown(wait=True, cancel_futures=True)


@dataclass
class ImportJobs:
    """What :meth:`LibraryImporter.start` needs for its background part: the job runs and leases
    (``job_runs``, ``job_leases``), the worker that runs the jobs, and the clock."""

    runs: RunStore
    work: ReaderWork
    clock: Callable[[], datetime]
    holder: str = field(default_factory=process_identity)


class _Stopped(Exception):
    """The server is shutting down: the job stops between two batches."""


@dataclass
class _Progress:
    """Writes a job's progress to its run (at most once a second) and keeps the reader's lease."""

    jobs: ImportJobs
    run_id: int
    lease: str
    holder: str
    counts: dict[str, int | float | str]
    _written: float = 0.0

    def update(self, position: int, total: int | None, added: int, updated: int, rejected: int) -> None:
        if self.jobs.work.stopping.is_set():
            raise _Stopped
        self.counts.update(done=position, fetched=added)
        now = time.monotonic()
        if now - self._written >= _SAVE_EVERY:
            self._written = now
            self.save()

    def save(self, status: str = "running", error: str | None = None) -> None:
        step = StepReport("fetch", status, dict(self.counts), error)
        self.jobs.runs.save_steps(self.run_id, [step])
        self.jobs.runs.renew_lease(self.lease, self.holder, self.jobs.clock() + _LEASE)


@dataclass
class LibraryImporter:
    library: LibraryService
    ingest: IngestService
    fetcher: PaperFetcher  # the arXiv API, asked only for papers this instance does not have
    parse: BibliographyParser
    jobs: ImportJobs | None = None  # the site's background fetches; None: the command line's imports only

    # -- the command line: the whole file, fetched while it waits ----------------------------------------

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
            with path.open("rb") as stream:
                parsed = self.parse(stream, path.name, fmt)
        except OSError as exc:
            raise BibliographyError(f"{path}: cannot read: {exc.strerror or exc}") from None
        return self._import(user_id, parsed, path.name, tag, fetch, max_fetch, progress, with_tags)

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

        ``max_fetch`` caps the papers fetched from arXiv; the rest are reported as not fetched.
        ``with_tags``: save each entry to the tags it names (``tag`` when it names none) and add its note
        where the reader has none.
        """
        check_tag_name(tag)
        parsed = self.parse(io.BytesIO(data), name, fmt)
        return self._import(user_id, parsed, name, tag, fetch, max_fetch, progress, with_tags)

    def _import(
        self,
        user_id: int,
        parsed: Bibliography,
        name: str,
        tag: str,
        fetch: bool,
        max_fetch: int | None,
        progress: ProgressReporter | None,
        with_tags: bool,
    ) -> ImportReport:
        tag_name = check_tag_name(tag)
        works = parsed.works
        report = self._report(name, tag_name, parsed)
        ids = arxiv_ids(works)
        present = self._shown(ids)
        missing = [i for i in ids if i not in present]  # a hidden paper too: as if it were not here
        skipped: set[str] = set()
        if missing and fetch:
            wanted = missing if max_fetch is None else missing[: max(0, max_fetch)]
            skipped = set(missing[len(wanted) :])
            if wanted:
                self.ingest.run(self.fetcher.papers(wanted), progress)
                arrived = self.library.records.existing_papers(wanted)
                report.fetched = len(arrived)
                present |= arrived
        elif missing:
            skipped = set(missing)
        for work in works:
            if work.arxiv_id is None:
                report.problems.append(work)
            elif work.arxiv_id not in present:
                report.problems.append(_not_saved(work, skipped, fetch))
        self._save(user_id, works, present, tag_name, with_tags, report)
        return report

    # -- the site and the API: bounded, the slow part in the background ----------------------------------

    def start(
        self,
        user_id: int,
        stream: BinaryIO,
        name: str,
        *,
        tag: str = DEFAULT_TAG,
        fmt: Format = "auto",
        with_tags: bool = False,
        max_entries: int,
        max_fetch: int,
    ) -> ImportReport:
        """Read at most ``max_entries`` entries of ``stream`` (an upload called ``name``), save those whose
        papers are here at once, and fetch at most ``max_fetch`` missing ones from arXiv in the background
        (``report.job``; :meth:`status` follows it). :class:`ImportBusy` while the reader's previous import
        runs; :class:`BibliographyError` or :class:`InvalidLibraryInput` for a bad file or tag."""
        jobs = self.jobs
        if jobs is None:
            raise RuntimeError("this importer has no background jobs (ImportJobs)")
        tag_name = check_tag_name(tag)
        lease, holder = f"{_JOB}:{user_id}", f"{jobs.holder}:{secrets.token_hex(4)}"
        self._take(jobs, user_id, lease, holder)
        handed_over = False
        try:
            parsed = self.parse(stream, name, fmt, max_entries=max_entries)
            report = self._report(name, tag_name, parsed)
            report.max_entries = max_entries
            works = parsed.works
            ids = arxiv_ids(works)
            present = self._shown(ids)
            missing = [i for i in ids if i not in present]  # a hidden paper too: as if it were not here
            wanted, skipped = missing[: max(0, max_fetch)], set(missing[max(0, max_fetch) :])
            for work in works:
                if work.arxiv_id is None:
                    report.problems.append(work)
                elif work.arxiv_id in skipped:
                    report.problems.append(_not_saved(work, skipped, True, web=True))
            self._save(user_id, works, present, tag_name, with_tags, report)
            if wanted:
                later = [w for w in works if w.arxiv_id in set(wanted)]
                run_id = jobs.runs.start_run(f"{_JOB}:{user_id}", None, "reader", holder, jobs.clock())
                counts: dict[str, int | float | str] = {
                    "source": name[:100],
                    "tag": tag_name,
                    "total": len(wanted),
                    "done": 0,
                    "fetched": 0,
                    "saved": 0,
                    "already_saved": 0,
                    "not_found": 0,
                    "not_found_sample": "",
                }
                progress = _Progress(jobs, run_id, lease, holder, counts)
                progress.save()
                jobs.work.submit(
                    lambda: self._fetch_later(user_id, wanted, later, tag_name, with_tags, progress)
                )
                handed_over = True
                report.fetching, report.job = len(wanted), run_id
            return report
        finally:
            if not handed_over:
                jobs.runs.release_lease(lease, holder)

    def status(self, user_id: int) -> ImportStatus | None:
        """The reader's latest background import, or None. A job whose process is gone (or whose lease
        ran out) shows as ``interrupted``: importing the file again finishes it."""
        jobs = self.jobs
        if jobs is None:
            return None
        runs = jobs.runs.runs(job=f"{_JOB}:{user_id}", limit=1)
        if not runs:
            return None
        run = runs[0]
        state, error = run.status, run.error
        if state == "running":
            held = jobs.runs.lease(f"{_JOB}:{user_id}")
            if held is None or held[0] != run.holder or held[1] < jobs.clock() or holder_is_dead(run.holder):
                state, error = "interrupted", "the server stopped while fetching: import the file again"
        counts = run.steps[0].counts if run.steps else {}

        def count(key: str) -> int:
            value = counts.get(key, 0)
            return int(value) if isinstance(value, int | float) else 0

        sample = str(counts.get("not_found_sample", ""))
        return ImportStatus(
            job=run.id,
            state=state,
            started_at=run.started_at,
            finished_at=run.finished_at,
            source=str(counts.get("source", "")),
            tag=str(counts.get("tag", "")),
            total=count("total"),
            done=count("done"),
            fetched=count("fetched"),
            saved=count("saved"),
            already_saved=count("already_saved"),
            not_found=count("not_found"),
            not_found_sample=tuple(sample.split()) if sample else (),
            error=error or (run.steps[0].error if run.steps else None),
        )

    def _take(self, jobs: ImportJobs, user_id: int, lease: str, holder: str) -> None:
        """The reader's import lease, or :class:`ImportBusy` (a lease of a process that died is taken)."""
        now = jobs.clock()
        if jobs.runs.try_lease(lease, holder, now + _LEASE, now):
            return
        held = jobs.runs.lease(lease)
        dead = held is not None and holder_is_dead(held[0])
        if dead and held and jobs.runs.try_lease(lease, holder, now + _LEASE, now, take_from=held[0]):
            return
        raise ImportBusy(self.status(user_id))

    def _fetch_later(
        self,
        user_id: int,
        wanted: Sequence[str],
        works: Sequence[CitedWork],
        tag_name: str,
        with_tags: bool,
        progress: _Progress,
    ) -> None:
        """The background job: fetch ``wanted``, save what arrived to its tags, record the outcome."""
        jobs = progress.jobs
        try:
            self.ingest.run(self.fetcher.papers(wanted), progress)
            arrived = self.library.records.existing_papers(list(wanted))
            report = ImportReport(source="", tag=tag_name)
            self._save(user_id, works, arrived, tag_name, with_tags, report)
            lost = [i for i in wanted if i not in arrived]
            progress.counts.update(
                done=len(wanted),
                fetched=len(arrived),
                saved=report.saved,
                already_saved=report.already_saved,
                not_found=len(lost),
                not_found_sample=" ".join(lost[:SAMPLE]),
            )
            status, error = "ok", None
        except _Stopped:
            status, error = "interrupted", "the server was stopped: import the file again to finish"
        except Exception as exc:  # arXiv unreachable, an odd answer, the store: the reader sees why
            log.warning("library import of reader %s failed: %s", user_id, exc)
            status, error = "failed", f"{exc}; papers already fetched stay, import the file again"
        step = StepReport("fetch", status, dict(progress.counts), error)
        try:
            jobs.runs.finish_run(progress.run_id, status, [step], error, jobs.clock())
        finally:
            jobs.runs.release_lease(progress.lease, progress.holder)

    # -- shared parts ----------------------------------------------------------------------------------

    @staticmethod
    def _report(name: str, tag_name: str, parsed: Bibliography) -> ImportReport:
        works = parsed.works
        report = ImportReport(source=name, tag=tag_name, entries=len(works), more=parsed.more)
        report.with_arxiv_id = sum(1 for w in works if w.arxiv_id)
        return report

    def _shown(self, ids: list[str]) -> set[str]:
        """The papers among ``ids`` that are here and shown. One an administrator hid is treated as one
        this instance does not have: asked of arXiv and, when arXiv has it, counted as fetched and saved
        (out of sight, as a paper hidden after it was saved) — so an import answers for it exactly as for
        an unknown paper and cannot tell that moderation hid it."""
        records = self.library.records
        found = records.existing_papers(ids)
        return found - (records.hidden_among(list(found)) if found else set())

    def _save(
        self,
        user_id: int,
        works: Sequence[CitedWork],
        present: set[str],
        tag_name: str,
        with_tags: bool,
        report: ImportReport,
    ) -> None:
        found = [i for i in arxiv_ids(works) if i in present]
        if not found:
            return
        if not with_tags:
            report.saved, report.already_saved = self.library.save_many(user_id, found, tag_name)
            return
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


def _not_saved(work: CitedWork, skipped: set[str], fetch: bool, *, web: bool = False) -> CitedWork:
    assert work.arxiv_id is not None
    if work.arxiv_id in skipped:
        how = "(too many papers to fetch at once)" if fetch else "(--no-fetch)"
        why = f"not in this instance and not fetched {how}"
        if web:
            why += ": import the rest in another file"
    else:
        why = "not found on arXiv"
    return CitedWork(work.where, work.arxiv_id, work.title, f"{work.arxiv_id}: {why}")


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
