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
