"""The daily pipeline (harvest → index → digests), job-run records, leases, and the scheduler loop.

**Leases.** A lease is a row in ``job_leases`` (name, holder, expiry) taken with one compare-and-set
statement, so it works across processes and hosts and on PostgreSQL as on SQLite. The holder renews it
from a background thread; a holder that dies stops renewing and the lease expires. On the same host a
dead holder is recognised at once (its pid is gone, or now belongs to a process started at another time),
so a crashed run can be re-run immediately instead of waiting for the expiry.

**Runs.** Every run of a job is a ``job_runs`` row: start, end, per-step status and counts, error. A
step that fails is recorded and the next steps still run (digests go out even when arXiv is down); the
run is then ``partial``. Each step is idempotent (harvests resume from checkpoints, indexing embeds the
backlog, digests are keyed by subscription and period), so running a job twice does no double work.

**Scheduling.** Jobs have daily (``HH:MM``) or hourly (``:MM``) times in UTC. The scheduler wakes up,
finds each job's latest scheduled slot at or before now, and runs it unless a run for that slot already
finished; after downtime only the latest missed slot runs (not one per missed slot). The scheduler holds
the ``scheduler`` lease for its lifetime, so a second one refuses to start; each job run also holds the
``job:<name>`` lease, so a run by hand never overlaps the scheduler's.
"""

from __future__ import annotations

import logging
import os
import secrets
import socket
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from types import TracebackType

from paperfeed.domain.errors import OaiError, SourceAnswerError, SourceUnavailable
from paperfeed.domain.job_runs import JobRun, LeaseStore, RunStore, StepRefused, StepReport

__all__ = [
    "JobSchedule",
    "JobService",
    "Lease",
    "LeaseBusy",
    "LeaseLost",
    "Scheduler",
    "Step",
    "holder_is_dead",
    "process_identity",
]

log = logging.getLogger("paperfeed.jobs")

LEASE_SECONDS = 120.0


# -- process identity -----------------------------------------------------------------------------------


def _start_ticks(pid: int) -> str:
    """The process's start time in clock ticks since boot (Linux), so a reused pid is not mistaken."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            stat = fh.read().decode("ascii", "replace")
    except OSError:
        return "?"
    fields = stat.rsplit(")", 1)[-1].split()
    return fields[19] if len(fields) > 19 else "?"


def process_identity() -> str:
    """``host:pid:start`` of this process."""
    pid = os.getpid()
    return f"{socket.gethostname()}:{pid}:{_start_ticks(pid)}"


def holder_is_dead(holder: str) -> bool:
    """True when ``holder`` names a process on this host that no longer runs. Holders on other hosts
    are never declared dead here: their leases end by expiring."""
    parts = holder.split(":")
    if len(parts) < 3 or parts[0] != socket.gethostname() or not parts[1].isdigit():
        return False
    pid = int(parts[1])
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        pass  # alive, someone else's
    started = _start_ticks(pid)
    return parts[2] != "?" and started != "?" and started != parts[2]


# -- leases ---------------------------------------------------------------------------------------------


class LeaseBusy(RuntimeError):
    """Another process holds the lease."""

    def __init__(self, name: str, holder: str, until: datetime) -> None:
        host, _, rest = holder.partition(":")
        pid = rest.split(":", 1)[0]
        super().__init__(
            f"{name} is running in another process (pid {pid} on {host}); "
            f"its lease ends at {until:%Y-%m-%d %H:%M:%S} UTC unless renewed"
        )
        self.name, self.holder, self.until = name, holder, until


class LeaseLost(RuntimeError):
    """This process no longer holds its lease (it could not renew it in time)."""


class Lease:
    """A named cross-process lock with expiry, renewed in the background while held."""

    def __init__(
        self,
        store: LeaseStore,
        name: str,
        *,
        seconds: float = LEASE_SECONDS,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self.store = store
        self.name = name
        self.seconds = seconds
        self.clock = clock
        self.holder = f"{process_identity()}:{secrets.token_hex(4)}"
        self._stop = threading.Event()
        self._lost = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def lost(self) -> bool:
        return self._lost.is_set()

    def check(self) -> None:
        if self.lost:
            raise LeaseLost(f"lost the {self.name} lease (the database was unreachable too long?)")

    def acquire(self) -> Lease:
        now = self.clock()
        current = self.store.lease(self.name)
        take_from = current[0] if current is not None and holder_is_dead(current[0]) else None
        until = now + timedelta(seconds=self.seconds)
        if not self.store.try_lease(self.name, self.holder, until, now, take_from=take_from):
            found = self.store.lease(self.name)
            holder, expires = found if found is not None else ("?:?", until)
            raise LeaseBusy(self.name, holder, expires)
        if take_from is not None:
            log.warning("took over the %s lease from %s, which is no longer running", self.name, take_from)
        self._thread = threading.Thread(target=self._renew, name=f"lease-{self.name}", daemon=True)
        self._thread.start()
        return self

    def _renew(self) -> None:
        while not self._stop.wait(self.seconds / 4):
            try:
                until = self.clock() + timedelta(seconds=self.seconds)
                if not self.store.renew_lease(self.name, self.holder, until):
                    self._lost.set()
                    return
            except Exception:  # a database hiccup: try again at the next beat, lose it on expiry
                log.exception("renewing the %s lease failed", self.name)

    def release(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None
        try:
            self.store.release_lease(self.name, self.holder)
        except Exception:  # the lease expires by itself
            log.exception("releasing the %s lease failed", self.name)

    def __enter__(self) -> Lease:
        return self.acquire()

    def __exit__(
        self, _t: type[BaseException] | None, _e: BaseException | None, _tb: TracebackType | None
    ) -> None:
        self.release()


# -- steps, runs, jobs ----------------------------------------------------------------------------------


StepCounts = Mapping[str, int | float | str]


@dataclass(frozen=True)
class Step:
    """One idempotent step of a job: a name and a function returning its counts (raising on failure)."""

    name: str
    run: Callable[[], StepCounts]


@dataclass(frozen=True)
class JobSchedule:
    """When a job runs: every day at ``hour:minute`` UTC, or every hour at ``minute`` (``hour`` None)."""

    minute: int
    hour: int | None = None

    @staticmethod
    def parse(text: str) -> JobSchedule:
        """``"05:30"`` (daily, UTC) or ``":15"`` (hourly)."""
        value = text.strip()
        hour_text, sep, minute_text = value.partition(":")
        if sep != ":" or not minute_text.isdigit() or (hour_text and not hour_text.isdigit()):
            raise ValueError(f"a time must look like HH:MM (daily, UTC) or :MM (hourly), got {text!r}")
        minute, hour = int(minute_text), int(hour_text) if hour_text else None
        if not 0 <= minute <= 59 or (hour is not None and not 0 <= hour <= 23):
            raise ValueError(f"no such time of day: {text!r}")
        return JobSchedule(minute, hour)

    def latest(self, now: datetime) -> datetime:
        """The latest scheduled moment at or before ``now``."""
        now = now.astimezone(UTC)
        if self.hour is None:
            slot = now.replace(minute=self.minute, second=0, microsecond=0)
            return slot if slot <= now else slot - timedelta(hours=1)
        slot = now.replace(hour=self.hour, minute=self.minute, second=0, microsecond=0)
        return slot if slot <= now else slot - timedelta(days=1)

    def next_after(self, moment: datetime) -> datetime:
        return self.latest(moment) + (timedelta(hours=1) if self.hour is None else timedelta(days=1))

    def __str__(self) -> str:
        return (
            f"hourly at :{self.minute:02d}"
            if self.hour is None
            else f"daily at {self.hour:02d}:{self.minute:02d} UTC"
        )


@dataclass
class _Outcome:
    run_id: int
    status: str
    steps: list[StepReport] = field(default_factory=list)
    error: str | None = None


class JobService:
    """Runs named jobs (lists of steps) under their lease and records every run."""

    def __init__(
        self,
        store: RunStore,
        jobs: Mapping[str, Callable[[], Sequence[Step]]],
        *,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
        lease_seconds: float = LEASE_SECONDS,
    ) -> None:
        self.store = store
        self.jobs = dict(jobs)
        self.clock = clock
        self.lease_seconds = lease_seconds

    def names(self) -> list[str]:
        return list(self.jobs)

    def lease(self, name: str) -> tuple[str, datetime] | None:
        """Who holds the lease ``name`` (``scheduler``, ``job:daily``, ...) and until when, if anyone."""
        return self.store.lease(name)

    def recent(self, limit: int = 20) -> list[JobRun]:
        """The newest runs as recorded (reads only: /admin/jobs shows a dead run as such)."""
        return self.store.runs(limit=limit)

    def last_run(self, job: str) -> JobRun | None:
        """The newest run of ``job`` as recorded (reads only, for pages)."""
        runs = self.store.runs(job=job, limit=1)
        return runs[0] if runs else None

    def held_by_a_live_process(self, name: str) -> bool:
        """Whether a process that is alive holds the lease ``name`` now (``scheduler``, ``job:topics``)."""
        held = self.store.lease(name)
        return held is not None and held[1] > self.clock() and not holder_is_dead(held[0])

    def interrupt_dead(self) -> int:
        """Record the runs whose process is gone (killed, machine restarted) as interrupted."""
        return self.store.interrupt_dead_runs(holder_is_dead, self.clock())

    def run(
        self,
        job: str,
        *,
        slot: datetime | None = None,
        trigger: str = "manual",
        on_step: Callable[[StepReport], None] | None = None,
    ) -> JobRun:
        """Run ``job`` now; raises :class:`LeaseBusy` when it is already running elsewhere."""
        if job not in self.jobs:
            raise KeyError(f"no job named {job!r} (jobs: {', '.join(self.jobs)})")
        return self.run_steps(job, self.jobs[job], slot=slot, trigger=trigger, on_step=on_step)

    def run_steps(
        self,
        job: str,
        steps: Callable[[], Sequence[Step]],
        *,
        slot: datetime | None = None,
        trigger: str = "manual",
        on_step: Callable[[StepReport], None] | None = None,
    ) -> JobRun:
        """Run ``steps`` as a recorded run of ``job`` under its lease: a scheduled job, or a command run by
        hand that changes what readers see (``paperfeed topics build``), so /admin/jobs lists it and its
        end reaches the page cache at once. Raises :class:`LeaseBusy` when ``job`` runs elsewhere."""
        with Lease(self.store, f"job:{job}", seconds=self.lease_seconds, clock=self.clock) as lease:
            self.store.interrupt_dead_runs(holder_is_dead, self.clock())
            run_id = self.store.start_run(job, slot, trigger, lease.holder, self.clock())
            reports: list[StepReport] = []
            try:
                for step in steps():
                    lease.check()
                    started = time.perf_counter()
                    try:
                        counts = dict(step.run())
                    except _EXPECTED as exc:  # a source down or refusing: expected, one line (the step's)
                        log.info("job %s: step %s failed: %s", job, step.name, exc)
                        report = StepReport(
                            step.name,
                            "failed",
                            {},
                            _one_line(exc, named=False),
                            time.perf_counter() - started,
                        )
                    except StepRefused as exc:  # an expected condition: its one line, no traceback
                        log.info("job %s: step %s: %s", job, step.name, exc)  # the report says it
                        report = StepReport(step.name, "failed", {}, str(exc), time.perf_counter() - started)
                    except Exception as exc:  # a fault: recorded with its traceback; the next steps still run
                        log.exception("job %s: step %s failed", job, step.name)
                        report = StepReport(
                            step.name, "failed", {}, _one_line(exc), time.perf_counter() - started
                        )
                    else:
                        report = StepReport(step.name, "ok", counts, None, time.perf_counter() - started)
                    reports.append(report)
                    self.store.save_steps(run_id, reports)
                    if on_step is not None:
                        on_step(report)
            except BaseException as exc:
                self.store.finish_run(run_id, "failed", reports, _one_line(exc), self.clock())
                raise
            failed = [r for r in reports if r.status == "failed"]
            if not failed:
                status, error = "ok", None
            else:
                status = "failed" if len(failed) == len(reports) else "partial"
                error = "; ".join(f"{r.name}: {r.error}" for r in failed)
            self.store.finish_run(run_id, status, reports, error, self.clock())
        return self.store.runs(job=job, limit=1)[0]

    def due(self, schedules: Mapping[str, JobSchedule], now: datetime) -> list[tuple[str, datetime]]:
        """Jobs whose latest slot has no finished (or running) run: what the scheduler does next."""
        self.store.interrupt_dead_runs(holder_is_dead, now)
        found = []
        for job, schedule in schedules.items():
            slot = schedule.latest(now)
            runs = self.store.runs_for_slot(job, slot)
            if not any(r.status in ("ok", "partial", "failed", "running") for r in runs):
                found.append((job, slot))
        return found

    def status(self, limit: int = 20, job: str | None = None) -> list[JobRun]:
        self.store.interrupt_dead_runs(holder_is_dead, self.clock())
        return self.store.runs(job=job, limit=limit)


# What a step meets when a source is down, slow or refusing (no network, an outage, a bad answer): an
# expected condition, said in the step's one line, never with a traceback.
_EXPECTED = (SourceUnavailable, SourceAnswerError, OaiError)


def _one_line(exc: BaseException, *, named: bool = True) -> str:
    """The error of a step as one line; ``named`` puts its type first (for faults, not expected errors
    whose message says it all: "export.arxiv.org unreachable after 5 attempts …")."""
    text = " ".join(str(exc).split()) or type(exc).__name__
    return (f"{type(exc).__name__}: {text}" if named else text)[:1000]


class Scheduler:
    """The loop behind ``paperfeed scheduler``: runs each job at its scheduled times, one process only.

    Never run inside web workers: it is its own process (systemd unit, container, or cron calling
    ``paperfeed jobs run`` instead). A failed run is not retried before the job's next slot.
    """

    def __init__(
        self,
        jobs: JobService,
        schedules: Mapping[str, JobSchedule],
        *,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
        sleep: Callable[[float], bool] | None = None,
        notify: Callable[[str], None] = lambda _m: None,
        max_nap: float = 60.0,
    ) -> None:
        """``notify``: each line of the log (a job starts, each step ends, the job ends)."""
        self.jobs = jobs
        self.schedules = dict(schedules)
        self.clock = clock
        self._stop = threading.Event()
        self._sleep = sleep or self._stop.wait
        self.notify = notify
        self.max_nap = max_nap
        self.doing: str | None = None  # the job and step at work now, for a heartbeat line (None: napping)

    def stop(self) -> None:
        self._stop.set()

    def tick(self) -> list[JobRun]:
        """Run every job that is due now (the latest missed slot of each); return the runs."""
        done = []
        for job, slot in self.jobs.due(self.schedules, self.clock()):
            self.notify(f"running {job} for {slot:%Y-%m-%d %H:%M} UTC")
            self.doing = f"running the {job} job"
            try:
                run = self.jobs.run(job, slot=slot, trigger="scheduler", on_step=self._step_notifier(job))
            except LeaseBusy as exc:
                self.notify(f"skipped {job}: {exc}")
                continue
            finally:
                self.doing = None
            failed = [step.name for step in run.steps if step.status == "failed"]
            # each failed step's error was said on its own line already: name the steps, once
            self.notify(f"{job}: {run.status}" + (f" (failed: {', '.join(failed)})" if failed else ""))
            done.append(run)
        return done

    def _step_notifier(self, job: str) -> Callable[[StepReport], None]:
        """Each finished step as a line, so the log (``paperfeed run``'s stream) shows the job's progress."""

        def notify(report: StepReport) -> None:
            detail = report.summary()
            self.notify(
                f"{job}: {report.name} {report.status} in {report.seconds:.1f} s"
                + (f" ({detail})" if detail else "")
                + (f": {report.error}" if report.error else "")
            )

        return notify

    def run_forever(self, *, iterations: int | None = None) -> None:
        """Tick, then nap until the next slot (at most ``max_nap`` seconds, so clock jumps are noticed)."""
        with Lease(self.jobs.store, "scheduler", clock=self.clock) as lease:
            count = 0
            while not self._stop.is_set():
                lease.check()
                self.tick()
                count += 1
                if iterations is not None and count >= iterations:
                    return
                now = self.clock()
                upcoming = min((s.next_after(now) for s in self.schedules.values()), default=None)
                nap = self.max_nap if upcoming is None else (upcoming - now).total_seconds()
                if self._sleep(min(max(nap, 0.5), self.max_nap)):
                    return
