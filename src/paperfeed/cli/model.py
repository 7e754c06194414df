"""``paperfeed model adapt|status|reset``: an embedding model fine-tuned on this instance's papers."""

from __future__ import annotations

import signal
import time
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.table import Table

from paperfeed.domain.adaptation import MIN_TRAIN, AdaptOptions, Quality
from paperfeed.domain.errors import EmbedderUnavailable
from paperfeed.domain.wording import count

from .context import Context, fail
from .progress import PlainLines, time_left
from .tables import print_table

if TYPE_CHECKING:
    from paperfeed.services.adaptation import AdaptResult

__all__ = ["model_app"]

model_app = typer.Typer(
    help="Fine-tune the embedding model on this instance's papers (adapt), see (status) or undo (reset) it.",
    no_args_is_help=True,
)


class StepBar:
    """A rich bar of training steps with elapsed time and ETA; a line every half minute instead when
    stderr is a log or a pipe (``paperfeed run``'s jobs, cron: :class:`~.progress.PlainLines`)."""

    def __init__(self, console: Console, lines: PlainLines | None = None) -> None:
        self._progress = Progress(
            TextColumn("[bold]training"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("steps"),
            TimeElapsedColumn(),
            TimeRemainingColumn(),
            console=console,
            disable=not console.is_terminal,
        )
        self._task: TaskID = self._progress.add_task("training", total=None)
        self._started_at: int | None = None
        self._lines = None if console.is_terminal else lines or PlainLines(console)
        self._clock = time.monotonic()

    def __enter__(self) -> StepBar:
        self._progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._progress.stop()

    def step(self, done: int, total: int) -> None:
        if self._started_at is None:  # a resumed run: the ETA counts only the steps run now
            self._started_at = done
            self._progress.reset(self._task, total=total, completed=done)
        self._progress.update(self._task, completed=done, total=total)
        if self._lines is not None:
            share = f" ({done * 100 // total} %)" if total else ""
            left = time_left(done, total, self._started_at, time.monotonic() - self._clock)
            self._lines.say(f"training: step {done:,} of {total:,}{share}{left}", force=done == total)


class StopFlag:
    """The first Ctrl+C asks training to save a checkpoint and stop; a second one interrupts at once."""

    def __init__(self) -> None:
        self.requested = False

    def __call__(self) -> bool:
        return self.requested

    @contextmanager
    def installed(self, err: Console) -> Iterator[None]:
        def handle(signum: int, frame: FrameType | None) -> None:
            if self.requested:
                raise KeyboardInterrupt
            self.requested = True
            err.print("stopping after this step and saving a checkpoint (Ctrl+C again to abort at once)")

        previous = signal.signal(signal.SIGINT, handle)
        try:
            yield
        finally:
            signal.signal(signal.SIGINT, previous)


def _fmt(value: float | None) -> str:
    return "—" if value is None else f"{value:.4f}"


def _comparison(base_name: str, result: AdaptResult) -> Table:
    table = Table(title="held-out papers (never trained on)", header_style="bold")
    table.add_column("measure")
    table.add_column(base_name, justify="right")
    table.add_column(result.model_id, justify="right")
    table.add_column("change", justify="right")
    rows: list[tuple[str, float | None, float | None]] = [
        ("title→abstract nDCG@10", result.base.ndcg10, result.adapted.ndcg10),
        ("title→abstract MRR", result.base.mrr, result.adapted.mrr),
        ("same category in 10 nearest", result.base.category_at10, result.adapted.category_at10),
    ]
    for name, b, a in rows:
        change = "—" if a is None or b is None else f"{a - b:+.4f}"
        table.add_row(name, _fmt(b), _fmt(a), change)
    return table


def _quality_line(q: Quality | None) -> str:
    if q is None:
        return "—"
    queries = count(q.queries, "query")
    return f"nDCG@10 {q.ndcg10:.4f}, MRR {q.mrr:.4f}, category@10 {_fmt(q.category_at10)} ({queries})"


@model_app.command("adapt")
def adapt(
    ctx: typer.Context,
    max_papers: Annotated[
        int, typer.Option("--max-papers", min=MIN_TRAIN, help="Train on at most this many papers.")
    ] = 10_000,
    max_pairs: Annotated[
        int | None,
        typer.Option(
            "--max-pairs",
            min=MIN_TRAIN,
            help="Train on at most this many pairs, a stable sample keeping each source's share "
            "(default: all).",
        ),
    ] = None,
    epochs: Annotated[int, typer.Option("--epochs", min=1, max=20, help="Passes over the pairs.")] = 1,
    batch_size: Annotated[
        int,
        typer.Option(
            "--batch-size", min=2, max=1024, help="Pairs per step (in-batch negatives: more is better)."
        ),
    ] = 32,
    threads: Annotated[
        int | None, typer.Option("--threads", min=1, help="CPU threads for torch (default: all cores).")
    ] = None,
    max_seq_length: Annotated[
        int, typer.Option("--max-seq-length", min=16, max=512, help="Tokens per text while training.")
    ] = 128,
    eval_papers: Annotated[
        int, typer.Option("--eval-papers", min=8, help="Held-out papers to evaluate on, at most.")
    ] = 300,
    distractors: Annotated[
        int,
        typer.Option("--distractors", min=0, help="Other abstracts competing in the evaluation, at most."),
    ] = 2_000,
    min_gain: Annotated[
        float,
        typer.Option(
            "--min-gain", min=-1.0, max=1.0, help="Adopt only if held-out nDCG@10 rises by more than this."
        ),
    ] = 0.0,
    save_steps: Annotated[int, typer.Option("--save-steps", min=1, help="A checkpoint every N steps.")] = 100,
    stop_after: Annotated[
        int | None,
        typer.Option(
            "--stop-after", min=1, help="Stop after this many steps (a checkpoint is saved); resume later."
        ),
    ] = None,
) -> None:
    """Fine-tune the embedding model on this instance's papers (title ↔ abstract pairs, and citing ↔ cited
    pairs where the citation graph links two of them; in-batch negatives) on the CPU; adopt it only if it
    beats the base model on held-out papers. Safe to stop: a re-run with the same options resumes from the
    last checkpoint."""
    c: Context = ctx.obj
    options = AdaptOptions(
        max_papers=max_papers,
        max_pairs=max_pairs,
        epochs=epochs,
        batch_size=batch_size,
        max_seq_length=max_seq_length,
        threads=threads,
        eval_papers=eval_papers,
        distractors=distractors,
        min_gain=min_gain,
        save_steps=save_steps,
        stop_after=stop_after,
    )
    from paperfeed.services.adaptation import NotEnoughPapers

    stop = StopFlag()
    try:
        service = c.app.maintenance.adaptation
        plan = service.plan(options)
        c.console.print(plan.message(), highlight=False)
        with stop.installed(c.err), StepBar(c.err) as bar:
            outcome = service.train(plan, options, progress=bar, should_stop=stop)
        if not outcome.finished:
            c.console.print(
                f"stopped at step {outcome.steps_done:,} of {outcome.steps_total:,}; the checkpoint is in "
                f"{plan.run_dir}. Run the same `paperfeed model adapt` command again to resume.",
                highlight=False,
            )
            raise typer.Exit(130 if stop.requested else 0)
        if outcome.steps_total:
            resumed = f"resumed at step {outcome.resumed_from:,}, " if outcome.resumed_from else ""
            c.console.print(
                f"{resumed}trained to step {outcome.steps_done:,} of {outcome.steps_total:,} in "
                f"{outcome.seconds:,.0f} s; evaluating both models on the held-out papers",
                highlight=False,
            )
        else:
            c.console.print(f"{plan.model_id} was trained before; evaluating it", highlight=False)
        result = service.evaluate(plan, outcome, options)
    except NotEnoughPapers as exc:
        raise fail(str(exc)) from None
    except EmbedderUnavailable as exc:
        raise fail(str(exc)) from None
    print_table(c.console, _comparison(service.base_name, result))
    if result.decision.adopt:
        c.console.print(
            f"adopted {result.model_id}: {result.decision.reason}.\n"
            f"Run `paperfeed index` to re-embed every paper with it (resumable); "
            f"`paperfeed model reset` returns to {service.base_name}.",
            highlight=False,
        )
    else:
        c.console.print(
            f"kept aside, not adopted: {result.decision.reason}. The model stays in {result.model_dir}; "
            f"the instance keeps its current embedder.",
            highlight=False,
        )


@model_app.command("status")
def status(ctx: typer.Context) -> None:
    """Which embedding model this instance uses, and the adapted models kept aside."""
    c: Context = ctx.obj
    try:
        service = c.app.maintenance.adaptation
        active, aside = service.status()
        in_use = c.app.indexes.embedders.current().model_id
    except EmbedderUnavailable as exc:
        raise fail(str(exc)) from None
    c.console.print(f"embedder in use: {in_use}", highlight=False)
    if active is None:
        c.console.print(
            f"no adapted model is adopted: the base model {service.base_name} is used", highlight=False
        )
    else:
        c.console.print(
            f"adopted: {active.model_id} (from {active.base or service.base_name}, "
            f"{active.papers:,} training papers, {active.created})\n  at {active.path}\n"
            f"  base:    {_quality_line(active.base_quality)}\n"
            f"  adapted: {_quality_line(active.adapted_quality)}",
            highlight=False,
        )
    for path in aside:
        c.console.print(f"kept aside: {path.name} ({path})", highlight=False)


@model_app.command("reset")
def reset(ctx: typer.Context) -> None:
    """Return to the base model (the adapted model's folder is kept); then run `paperfeed index`."""
    c: Context = ctx.obj
    try:
        service = c.app.maintenance.adaptation
        previous = service.reset()
    except EmbedderUnavailable as exc:
        raise fail(str(exc)) from None
    if previous is None:
        c.console.print(
            f"no adapted model was adopted: {service.base_name} is already in use", highlight=False
        )
        return
    c.console.print(
        f"{previous.model_id} is no longer used; the embedder is {service.base_name} again. "
        f"Run `paperfeed index` to re-embed with it (the folder {previous.path} is kept).",
        highlight=False,
    )
