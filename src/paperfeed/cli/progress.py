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

__all__ = ["RichProgress", "print_summary"]


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
