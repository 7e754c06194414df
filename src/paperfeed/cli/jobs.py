"""``paperfeed jobs run|status`` and ``paperfeed scheduler``: the daily pipeline and when it runs.

Jobs:

- ``daily``: the steps of ``PAPERFEED_JOBS_DAILY_STEPS`` in order — ``harvest-arxiv`` (OAI-PMH, from where
  the last harvest ended), ``harvest-hf`` (Hugging Face Daily Papers of yesterday and today, UTC),
  ``index`` (embed the backlog, refresh the vector index), ``digests`` (compose and send due digests).
- ``digests``: only the last step; the scheduler runs it every hour, since subscribers choose local hours.

Each step is idempotent and a failed step does not stop the next ones; every run is recorded (see
``paperfeed jobs status`` and /admin/jobs). Exit codes of ``jobs run``: 0 every step ok, 1 some step
failed (the run is ``partial`` or ``failed``), 4 the job is already running elsewhere.
"""

from __future__ import annotations

import signal
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from types import FrameType
from typing import Annotated

import typer
from rich.markup import escape

from paperfeed.bootstrap import App
from paperfeed.domain.job_runs import JobRun, StepReport
from paperfeed.services.jobs import JobSchedule, JobService, LeaseBusy, Scheduler, Step, StepCounts

from .context import Context, fail

__all__ = ["jobs_app", "pipeline", "register"]

jobs_app = typer.Typer(
    help="The daily pipeline (harvest → index → digests) and its run records.", no_args_is_help=True
)


def _harvest_arxiv(app: App) -> StepCounts:
    source = app.arxiv_oai_harvest(set_spec=app.settings.jobs_arxiv_set)
    summary = app.ingest.run(source, resume=True)
    return {"added": summary.added, "updated": summary.updated, "rejected": summary.rejected}


def _harvest_hf(app: App) -> StepCounts:
    from paperfeed.adapters.sources.hf_daily import HfDailySource

    today = datetime.now(UTC).date()
    source = HfDailySource(app.http, app.settings.hf_api_url, today - timedelta(days=1), today)
    summary = app.ingest.run(source)
    if source.checkpoint_name:
        app.store.clear_checkpoint(source.checkpoint_name)  # a finished range is harvested afresh next time
    return {"added": summary.added, "updated": summary.updated, "rejected": summary.rejected}


def _index(app: App) -> StepCounts:
    summary = app.indexing.run()
    return {"embedded": summary.embedded, "remaining": summary.remaining}


def _digests(app: App) -> StepCounts:
    composed, sent = app.digests.run()
    counts: dict[str, int | float | str] = {"composed": composed.composed, "empty": composed.empty}
    if sent is not None:
        counts.update(sent=sent.sent, retry=sent.retry_later, bounced=sent.bounced, failed=sent.failed)
        if sent.stopped:
            raise RuntimeError(f"sending stopped: {sent.stopped}")
    return counts


STEPS: dict[str, Callable[[App], StepCounts]] = {
    "harvest-arxiv": _harvest_arxiv,
    "harvest-hf": _harvest_hf,
    "index": _index,
    "digests": _digests,
}


def pipeline(app: App) -> dict[str, Callable[[], list[Step]]]:
    """The jobs of this instance, their steps bound to ``app``."""

    def steps(names: list[str]) -> Callable[[], list[Step]]:
        def bind(name: str) -> Step:
            return Step(name, lambda: STEPS[name](app))

        return lambda: [bind(n) for n in names]

    daily = [n.strip() for n in app.settings.jobs_daily_steps.split(",") if n.strip()]
    return {"daily": steps(daily), "digests": steps(["digests"])}


def job_service(app: App) -> JobService:
    return JobService(app.job_store, pipeline(app))


def schedules(app: App) -> dict[str, JobSchedule]:
    s = app.settings
    return {"daily": JobSchedule.parse(s.jobs_daily_at), "digests": JobSchedule.parse(s.jobs_digests_at)}


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
    job: Annotated[str, typer.Argument(help="daily (harvest → index → digests) or digests.")],
) -> None:
    """Run a job now and record it (each step is idempotent: running it twice does no double work)."""
    c: Context = ctx.obj
    service = job_service(c.app)
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
    """Recent job runs (start, end, per-step counts, errors) and when the scheduler runs them next."""
    c: Context = ctx.obj
    service = job_service(c.app)
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
    for job, schedule in schedules(c.app).items():
        c.console.print(
            f"{job}: {schedule}; next at {schedule.next_after(now):%Y-%m-%d %H:%M} UTC", highlight=False
        )
    held = c.app.job_store.lease("scheduler")
    if held is not None and held[1] > now:
        c.console.print(f"scheduler running: {held[0]} (lease until {held[1]:%H:%M:%S} UTC)", highlight=False)


def register(app: typer.Typer) -> None:
    """Add ``jobs`` and ``scheduler`` to the CLI."""
    app.add_typer(jobs_app, name="jobs")

    @app.command("scheduler")
    def scheduler(
        ctx: typer.Context,
        once: Annotated[
            bool, typer.Option("--once", help="Run what is due now and exit (for cron) instead of looping.")
        ] = False,
    ) -> None:
        """Run the jobs at their times (PAPERFEED_JOBS_*_AT), one scheduler at a time. Not in web workers."""
        c: Context = ctx.obj
        plan = schedules(c.app)
        loop = Scheduler(
            job_service(c.app),
            plan,
            notify=lambda m: c.console.print(f"{datetime.now(UTC):%Y-%m-%d %H:%M:%S} {m}", markup=False),
        )

        def stop(_signum: int, _frame: FrameType | None) -> None:
            loop.stop()

        signal.signal(signal.SIGTERM, stop)
        signal.signal(signal.SIGINT, stop)
        for job, schedule in plan.items():
            c.console.print(f"{job}: {schedule}", highlight=False)
        try:
            loop.run_forever(iterations=1 if once else None)
        except LeaseBusy as exc:
            c.err.print(f"[bold red]error:[/] {escape(str(exc))}", highlight=False, soft_wrap=True)
            raise typer.Exit(4) from None
