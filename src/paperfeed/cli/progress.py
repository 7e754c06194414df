"""Rich progress bars for long jobs, and the summary table printed after them."""

from __future__ import annotations

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

from paperfeed.domain.ingest import IngestSummary

__all__ = ["FillBars", "RichProgress", "print_summary"]


class RichProgress:
    """A :class:`~paperfeed.domain.ports.ProgressReporter` drawing one bar (bytes or items)."""

    def __init__(self, console: Console, description: str, *, unit: str = "bytes") -> None:
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
    console.print(table)


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
