"""Tables for people: on a terminal they fit its width; in a pipe or a log their rows are never wrapped.

A console that is not a terminal is 80 columns wide to rich (or ``COLUMNS``), so a table printed there
broke each row into several lines of cells cut mid-word: ``paperfeed users list | grep`` found half an
address. Off a terminal a table is printed at its natural width instead (every cell on one line), which a
pager scrolls and ``grep`` reads.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.console import Console
    from rich.table import Table

__all__ = ["NATURAL_WIDTH_CAP", "print_table"]

NATURAL_WIDTH_CAP = 10_000  # columns: wider than any row of ours, short of what rich would choke on


def print_table(console: Console, table: Table) -> None:
    """``table`` fitted to a terminal, or at its natural width when output goes to a pipe or a file."""
    if console.is_terminal:
        console.print(table)
        return
    from rich.measure import Measurement

    wide = console.options.update_width(NATURAL_WIDTH_CAP)
    natural = Measurement.get(console, wide, table).maximum
    previous = console.width  # print(width=) is capped at the console's own width: widen it meanwhile
    console.width = max(natural, previous)
    try:
        console.print(table, soft_wrap=False)
    finally:
        console.width = previous
