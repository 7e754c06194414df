"""Rich progress bars for long jobs, and the summary table printed after them."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from types import TracebackType

from rich.console import Console
from rich.progress import (
    BarColumn,
    DownloadColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
    TransferSpeedColumn,
)
from rich.table import Table

from paperfeed.domain.indexing_status import describe_duration
from paperfeed.domain.ingest import IngestSummary

from .tables import print_table

__all__ = ["FillBars", "Heartbeat", "PlainLines", "RichProgress", "print_summary", "time_left"]

LINE_EVERY = 30.0  # seconds between two progress lines when the output is a log or a pipe


class PlainLines:
    """Progress as plain lines for a log or a pipe, where a bar draws nothing: a line once the job has
    run ``every`` seconds, then at most one per ``every`` seconds, and the last one (``force``) only when
    some were said. A job shorter than that says nothing, so a quick command's output (its one error
    line) is what it always was, and a long job run by a supervisor or cron still says how far it got."""

    def __init__(
        self, console: Console, every: float = LINE_EVERY, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._console, self._every, self._clock = console, every, clock
        self._last = clock()
        self._said = False

    def say(self, text: str, *, force: bool = False) -> None:
        now = self._clock()
        if (force and self._said) or now - self._last >= self._every:
            self._last, self._said = now, True
            self._console.print(text, highlight=False, markup=False, soft_wrap=True)


def time_left(done: int, total: int | None, first: int, elapsed: float) -> str:
    """``, ~3m left`` from the pace since ``first`` (what this run did), or nothing when unknown."""
    if not total or done <= first or elapsed <= 0:
        return ""
    seconds = (total - done) * elapsed / (done - first)
    return f", ~{seconds / 60:.0f}m left" if seconds >= 90 else f", ~{seconds:.0f}s left"


class RichProgress:
    """A :class:`~paperfeed.domain.ports.ProgressReporter` drawing one bar (bytes or items)."""

    def __init__(
        self, console: Console, description: str, *, unit: str = "bytes", lines: PlainLines | None = None
    ) -> None:
        size_cols = (DownloadColumn(), TransferSpeedColumn()) if unit == "bytes" else (MofNCompleteColumn(),)
        self._progress = Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            *size_cols,
            TextColumn("{task.fields[counts]}"),
            TimeElapsedColumn(),
            TimeRemainingColumn(),
            console=console,
            transient=False,
            disable=not console.is_terminal,
        )
        self._task: TaskID = self._progress.add_task(description, total=None, counts="")
        self._description, self._unit = description, unit
        self._lines = None if console.is_terminal else lines or PlainLines(console)
        self._started = time.monotonic()
        self._first: int | None = None

    def __enter__(self) -> RichProgress:
        self._progress.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._progress.stop()

    def update(self, position: int, total: int | None, added: int, updated: int, rejected: int) -> None:
        counts = f"+{added:,} ~{updated:,} !{rejected:,}"
        self._progress.update(self._task, completed=position, total=total, counts=counts)
        if self._lines is not None:
            first = self._first = position if self._first is None else self._first
            of = f" of {total:,}" if total else ""
            left = time_left(position, total, first, time.monotonic() - self._started)
            line = f"{self._description}: {position:,}{of} {self._unit} ({counts}){left}"
            self._lines.say(line, force=total is not None and position >= total)


def print_summary(console: Console, title: str, summary: IngestSummary, seconds: float) -> None:
    table = Table(title=title, show_header=True, header_style="bold")
    for col in ("added", "updated", "unchanged", "rejected", "listings", "papers/s"):
        table.add_column(col, justify="right")
    rate = summary.seen / seconds if seconds > 0 else 0.0
    table.add_row(
        f"{summary.added:,}",
        f"{summary.updated:,}",
        f"{summary.unchanged:,}",
        f"{summary.rejected:,}",
        f"{summary.listings:,}",
        f"{rate:,.0f}",
    )
    print_table(console, table)


class FillBars:
    """A :class:`~paperfeed.domain.fill.FillReporter`: one bar per stage on a terminal, else plain lines
    (``<stage> 3/30: <detail>``) a log or a pipe keeps whole."""

    def __init__(self, console: Console) -> None:
        self._console = console
        self._live = console.is_terminal
        self._progress = Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[detail]}"),
            TimeElapsedColumn(),
            console=console,
            transient=False,
            disable=not self._live,
        )
        self._tasks: dict[str, TaskID] = {}
        self._totals: dict[str, int] = {}

    def __enter__(self) -> FillBars:
        self._progress.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._progress.stop()

    def _say(self, text: str) -> None:
        self._console.print(text, highlight=False, markup=False, soft_wrap=True)

    def begin(self, stage: str, total: int) -> None:
        self._totals[stage] = total
        if self._live:
            self._tasks[stage] = self._progress.add_task(stage, total=total, detail="")
        else:
            self._say(f"{stage}: {total} to fetch")

    def advance(self, stage: str, done: int, detail: str) -> None:
        if self._live and stage in self._tasks:
            self._progress.update(self._tasks[stage], completed=done, detail=detail)
        else:
            self._say(f"{stage} {done}/{self._totals.get(stage, '?')}: {detail}")

    def note(self, message: str) -> None:
        self._say(f"note: {message}")


class Heartbeat:
    """A line at least every ``every`` seconds while a long-lived process works (``index --follow``, the
    scheduler): when nothing else was said for that long and ``doing()`` names the work in hand (a model
    loading, a slice, a topic build, a job's step), it says "still <doing> (<how long>)". ``said()`` is
    called for every other line, so the heartbeat only fills silences. Runs on a daemon thread between
    :meth:`start` and :meth:`stop`; a line is printed whole, never interleaved with another."""

    def __init__(
        self,
        say: Callable[[str], None],
        doing: Callable[[], str | None],
        *,
        every: float = LINE_EVERY,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._say, self._doing, self._every, self._clock = say, doing, every, clock
        self._last = clock()
        self._since: tuple[str, float] | None = None  # what is being done, since when
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def said(self) -> None:
        self._last = self._clock()

    def beat(self) -> bool:
        """Say the line if one is due now (the thread calls this every second); True when it did."""
        now = self._clock()
        doing = self._doing()
        if doing is None:
            self._since = None
            return False
        if self._since is None or self._since[0] != doing:
            self._since = (doing, now)
        if now - self._last < self._every:
            return False
        self._last = now
        self._say(f"still {doing} ({describe_duration(now - self._since[1])} so far)")
        return True

    def start(self) -> Heartbeat:
        self._thread = threading.Thread(target=self._run, name="heartbeat", daemon=True)
        self._thread.start()
        return self

    def _run(self) -> None:
        while not self._stop.wait(1.0):
            self.beat()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=2)
