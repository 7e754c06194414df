"""Long jobs say how far they got when their output is a log or a pipe, where a progress bar draws
nothing: ``paperfeed model adapt``'s training steps and every item bar (import, index, harvests)."""

from __future__ import annotations

import io

from rich.console import Console

from paperfeed.cli.model import StepBar
from paperfeed.cli.progress import PlainLines, RichProgress, time_left


def _piped() -> tuple[Console, io.StringIO]:
    out = io.StringIO()
    return Console(file=out, force_terminal=False, width=200), out


def test_plain_lines_wait_for_a_long_job_then_say_at_most_one_per_interval() -> None:
    console, out = _piped()
    now = [100.0]
    lines = PlainLines(console, every=30.0, clock=lambda: now[0])
    lines.say("started")  # a job that has just begun says nothing
    lines.say("done", force=True)  # nor does a short one at its end: its output stays as it was
    now[0] += 30
    lines.say("one")
    now[0] += 10
    lines.say("two")  # too soon: dropped
    now[0] += 25
    lines.say("three")
    lines.say("four", force=True)  # the end of a long job is always said
    assert out.getvalue().splitlines() == ["one", "three", "four"]


def test_time_left_is_the_pace_of_this_run_only() -> None:
    assert time_left(60, 100, 50, 10.0) == ", ~40s left"  # 10 steps in 10 s, resumed at 50
    assert time_left(10, 1000, 0, 60.0) == ", ~99m left"
    assert time_left(50, 100, 50, 10.0) == ""  # nothing done yet in this run
    assert time_left(5, None, 0, 10.0) == ""


def _ticking() -> tuple[PlainLines, Console, io.StringIO]:
    """Plain lines whose clock moves a minute at every reading: every line is due."""
    console, out = _piped()
    now = [0.0]

    def clock() -> float:
        now[0] += 60
        return now[0]

    return PlainLines(console, clock=clock), console, out


def test_training_steps_print_lines_when_stderr_is_not_a_terminal() -> None:
    lines, console, out = _ticking()
    with StepBar(console, lines) as bar:
        for step in range(1, 5):
            bar.step(step, 4)
    said = out.getvalue().splitlines()
    assert said[0].startswith("training: step 1 of 4 (25 %)")
    assert said[-1].startswith("training: step 4 of 4 (100 %)")


def test_a_terminal_gets_the_bar_and_no_lines() -> None:
    out = io.StringIO()
    console = Console(file=out, force_terminal=True, width=120)
    with StepBar(console) as bar:
        bar.step(1, 4)
    assert "training: step" not in out.getvalue()


def test_item_bars_print_lines_when_piped() -> None:
    lines, console, out = _ticking()
    with RichProgress(console, "embedding", unit="items", lines=lines) as progress:
        progress.update(10, 100, 10, 0, 0)
        progress.update(100, 100, 100, 0, 0)
    said = out.getvalue().splitlines()
    assert said[0] == "embedding: 10 of 100 items (+10 ~0 !0)"
    assert said[-1].startswith("embedding: 100 of 100 items (+100 ~0 !0)")


def test_a_short_piped_job_prints_no_progress_line() -> None:
    console, out = _piped()
    with RichProgress(console, "hf daily", unit="days") as progress:
        progress.update(0, 2, 0, 0, 0)
        progress.update(2, 2, 5, 0, 0)
    assert out.getvalue() == ""


def test_a_heartbeat_fills_silences_of_30_s_while_work_is_in_hand() -> None:
    """`index --follow` and the scheduler say something at least every 30 s while they work (issue #39
    item 5: the log said nothing for 745 s, nor during a 21-minute slice): when nothing else was said
    for that long and there is work in hand, "still <doing> (<how long> so far)"; never while idle."""
    from paperfeed.cli.progress import Heartbeat

    said: list[str] = []
    now = [0.0]
    doing: list[str | None] = [None]
    beat = Heartbeat(said.append, lambda: doing[0], every=30.0, clock=lambda: now[0])
    now[0] = 45.0
    assert not beat.beat()  # idle: nothing to say however long the silence
    doing[0] = "loading the embedding model"
    beat.beat()  # work begins now: a silence of 45 s already, so it is said at once
    now[0] = 60.0
    assert not beat.beat()  # 15 s after the last line
    now[0] = 75.0
    beat.said()  # another line was printed
    now[0] = 100.0
    assert not beat.beat()
    now[0] = 106.0
    assert beat.beat()
    assert said == [
        "still loading the embedding model (1 s so far)",
        "still loading the embedding model (1 min so far)",
    ]


def test_the_follower_says_how_far_a_slice_is_every_30_s() -> None:
    from paperfeed.cli.index import _SliceLines
    from paperfeed.services.indexer_status import IndexerReporter

    class Kept:
        def __init__(self) -> None:
            self.all: list[object] = []

        def report_indexer(self, report: object) -> None:
            self.all.append(report)

        def indexer_report(self) -> None:
            return None

    said: list[str] = []
    now = [0.0]
    reports = Kept()
    reporter = IndexerReporter(reports, every=0, clock=lambda: now[0], identity=lambda: "h:1:1")
    lines = _SliceLines(said.append, "sentences", 1000, reporter, clock=lambda: now[0])
    for done in range(0, 501, 50):
        now[0] += 10.0
        lines.update(done, 500, done, 0, 0)
    assert said == [
        "sentences: 100 of 500 papers in this slice, 5.00 papers/s, about 3 min left for all 900",
        "sentences: 250 of 500 papers in this slice, 5.00 papers/s, about 2 min left for all 750",
        "sentences: 400 of 500 papers in this slice, 5.00 papers/s, about 2 min left for all 600",
    ]
    assert all(r.state == "sentences" for r in reports.all)  # type: ignore[attr-defined]
