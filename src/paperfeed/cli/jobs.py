"""``paperfeed jobs run|status`` and ``paperfeed scheduler``: the daily pipeline and when it runs.

Jobs (their steps are in :mod:`paperfeed.services.pipeline`; this module only triggers and shows them):

- ``daily``: the steps of ``PAPERFEED_JOBS_DAILY_STEPS`` in order — ``harvest-arxiv`` (OAI-PMH, from where
  the last harvest ended), ``harvest-hf`` (Hugging Face Daily Papers of yesterday and today, UTC),
  ``index`` (embed the backlog, refresh the vector index), ``digests`` (compose and send due digests).
- ``digests``: only the last step; the scheduler runs it every hour, since subscribers choose local hours.

Each step is idempotent and a failed step does not stop the next ones; every run is recorded (see
``paperfeed jobs status`` and /admin/jobs). Exit codes of ``jobs run``: 0 every step ok, 1 some step
failed (the run is ``partial`` or ``failed``), 4 the job is already running elsewhere.
"""

from __future__ import annotations

import os
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape

from .context import Context, fail

if TYPE_CHECKING:
    from paperfeed.domain.job_runs import JobRun, StepReport

__all__ = ["jobs_app", "register"]

jobs_app = typer.Typer(
    help="The daily pipeline (papers, citations, index, topics, digests) and its run records.",
    no_args_is_help=True,
)


def _step_line(report: StepReport) -> str:
    detail = report.summary()
    text = f"  {report.name}: {report.status} in {report.seconds:.1f} s" + (f" ({detail})" if detail else "")
    return text + (f": {report.error}" if report.error else "")


def _run_line(run: JobRun) -> str:
    took = f"{run.seconds:.1f} s" if run.seconds is not None else "still running"
    slot = f" for {run.slot:%Y-%m-%d %H:%M}" if run.slot else ""
    started = f"{run.started_at:%Y-%m-%d %H:%M:%S}"
    return f"#{run.id} {run.job}{slot} ({run.trigger}) started {started} UTC, {took}: {run.status}"


@jobs_app.command("run")
def run(
    ctx: typer.Context,
    job: Annotated[str, typer.Argument(help="daily (papers, citations, index, topics, digests) or digests.")],
) -> None:
    """Run a job now and record it (each step is idempotent: running it twice does no double work)."""
    from paperfeed.services.jobs import LeaseBusy

    c: Context = ctx.obj
    service = c.app.maintenance.jobs
    if job not in service.names():
        raise fail(f"no job named {job!r}: choose {', '.join(service.names())}")
    try:
        record = service.run(
            job, on_step=lambda r: c.console.print(_step_line(r), markup=False, highlight=False)
        )
    except LeaseBusy as exc:
        c.err.print(f"[bold red]error:[/] {escape(str(exc))}", highlight=False, soft_wrap=True)
        raise typer.Exit(4) from None
    c.console.print(_run_line(record), markup=False, highlight=False)
    if record.status != "ok":
        raise typer.Exit(1)


@jobs_app.command("status")
def status(
    ctx: typer.Context,
    limit: Annotated[int, typer.Option("--limit", min=1, max=500, help="How many recent runs to show.")] = 10,
) -> None:
    """Recent job runs (start, end, per-step counts, errors), when the scheduler runs them next, the
    processes ``paperfeed run`` supervises (web, scheduler, indexer: running, restarting or failed), and
    what the indexer is doing and has left (papers' vectors and sentences), as /admin/jobs says it."""
    c: Context = ctx.obj
    service = c.app.maintenance.jobs
    runs = service.status(limit=limit)
    if not runs:
        c.console.print("no job has run yet: paperfeed jobs run daily, or start paperfeed scheduler")
    for record in runs:
        c.console.print(_run_line(record), markup=False, highlight=False)
        if record.error:
            c.console.print(f"  error: {record.error}", markup=False, highlight=False, soft_wrap=True)
        for report in record.steps:
            c.console.print(_step_line(report), markup=False, highlight=False, soft_wrap=True)
    now = datetime.now(UTC)
    for job, schedule in c.app.maintenance.schedules.items():
        c.console.print(
            f"{job}: {schedule}; next at {schedule.next_after(now):%Y-%m-%d %H:%M} UTC", highlight=False
        )
    held = c.app.maintenance.jobs.lease("scheduler")
    if held is not None and held[1] > now:
        c.console.print(f"scheduler running: {held[0]} (lease until {held[1]:%H:%M:%S} UTC)", highlight=False)
    from paperfeed.domain.supervision import describe_supervisors
    from paperfeed.services.jobs import holder_is_dead

    for line in describe_supervisors(c.app.maintenance.supervisors.read_all(), holder_is_dead):
        c.console.print(line, markup=False, highlight=False, soft_wrap=True)
    from paperfeed.domain.embedding_claims import describe_workers

    claims = c.app.indexes.claims  # every `paperfeed index` process sharing this store's backlog
    for line in describe_workers(claims.workers(), claims.holdings(), now, holder_is_dead):
        c.console.print(line, markup=False, highlight=False, soft_wrap=True)
    # what the indexer does and what is left, in /admin/jobs' own sentences (the sentences included)
    c.console.print("indexing:", highlight=False)
    for line in c.app.indexes.status.status().lines():
        c.console.print(f"  {line}", markup=False, highlight=False, soft_wrap=True)


def _forced_stop(doing: str | None) -> str:
    """The scheduler's final line when a stop did not wait for the job in hand (``doing``)."""
    if doing is None:
        return "scheduler stopped"
    return f"scheduler stopped while {doing}: the next start runs it again"


def register(app: typer.Typer) -> None:
    """Add ``jobs`` and ``scheduler`` to the CLI."""
    app.add_typer(jobs_app, name="jobs")

    @app.command("scheduler")
    def scheduler(
        ctx: typer.Context,
        once: Annotated[
            bool, typer.Option("--once", help="Run what is due now and exit (for cron) instead of looping.")
        ] = False,
        nice: Annotated[
            int,
            typer.Option(
                "--nice",
                min=0,
                max=19,
                help="Lower this process's priority (paperfeed run does, so the daily job's indexing "
                "never crowds out the web server beside it).",
            ),
        ] = 0,
    ) -> None:
        """Run the jobs at their times (PAPERFEED_JOBS_*_AT), one scheduler at a time. Not in web workers."""
        from paperfeed.services.jobs import LeaseBusy, Scheduler

        c: Context = ctx.obj
        if nice:
            os.nice(nice)  # before any embedder is built: niced, its embedding threads never spin
        c.app.indexes.embed_in_background()  # the daily job's model in a child process, ended when idle
        from .progress import Heartbeat
        from .stop_watch import StopWatch

        plan = c.app.maintenance.schedules

        def say(message: str) -> None:
            c.console.print(f"{datetime.now(UTC):%Y-%m-%d %H:%M:%S} {message}", markup=False)
            heartbeat.said()

        loop = Scheduler(c.app.maintenance.jobs, plan, notify=say)
        heartbeat = Heartbeat(say, lambda: loop.doing)  # a line at least every 30 s while a job runs
        # SIGTERM/Ctrl+C: napping, it stops at once; inside a job (a step in a C call, or waiting for a
        # lock) it gives the job 3 s, then ends as kill -9 would, in time for the supervisor's 10 s
        watch = StopWatch(say, _forced_stop, doing=lambda: loop.doing, on_request=loop.stop)
        for job, schedule in plan.items():
            c.console.print(f"{job}: {schedule}", highlight=False)
        heartbeat.start()
        try:
            loop.run_forever(iterations=1 if once else None)
        except LeaseBusy as exc:
            c.err.print(f"[bold red]error:[/] {escape(str(exc))}", highlight=False, soft_wrap=True)
            raise typer.Exit(4) from None
        finally:
            heartbeat.stop()
        if watch.requested.is_set():  # no job was in flight: nothing to say
            watch.finish(lambda: None, c.close)
