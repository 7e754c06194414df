"""Job runs, leases and the scheduler on a real SQLite store; the daily pipeline through the CLI."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from typer.testing import CliRunner

from paperfeed.adapters.store import open_store
from paperfeed.adapters.store.job_runs import SqlJobStore
from paperfeed.cli import cli_app as cli
from paperfeed.services.jobs import (
    JobSchedule,
    JobService,
    Lease,
    LeaseBusy,
    Scheduler,
    Step,
    holder_is_dead,
    process_identity,
)
from tests.support.digests import Clock
from tests.support.http_server import ReplayServer, Reply


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SqlJobStore]:
    paper_store = open_store(f"sqlite+pysqlite:///{tmp_path / 'jobs.db'}")
    try:
        yield SqlJobStore(paper_store.engine)
    finally:
        paper_store.close()


def test_schedules_parse_and_find_their_latest_slot() -> None:
    daily = JobSchedule.parse("05:30")
    hourly = JobSchedule.parse(":05")
    now = datetime(2025, 3, 20, 5, 0, tzinfo=UTC)
    assert daily.latest(now) == datetime(2025, 3, 19, 5, 30, tzinfo=UTC)
    assert daily.next_after(now) == datetime(2025, 3, 20, 5, 30, tzinfo=UTC)
    assert hourly.latest(now) == datetime(2025, 3, 20, 4, 5, tzinfo=UTC)
    assert hourly.latest(now.replace(minute=5)) == now.replace(minute=5)
    for bad in ("25:00", "5", "ab:cd", ":60", ""):
        with pytest.raises(ValueError, match=r"HH:MM|no such time"):
            JobSchedule.parse(bad)


def test_a_lease_is_held_by_one_holder_at_a_time(store: SqlJobStore) -> None:
    first = Lease(store, "job:x").acquire()
    with pytest.raises(LeaseBusy, match=f"pid {os.getpid()}"):
        Lease(store, "job:x").acquire()
    first.release()
    with Lease(store, "job:x"):
        assert store.lease("job:x") is not None
    assert store.lease("job:x") is None


def test_an_expired_lease_can_be_taken(store: SqlJobStore) -> None:
    clock = Clock(datetime(2025, 3, 20, 9, 0, tzinfo=UTC))
    store.try_lease("job:y", "otherhost:1:1:ab", clock.now + timedelta(seconds=120), clock.now)
    with pytest.raises(LeaseBusy):
        Lease(store, "job:y", clock=clock).acquire()
    clock.advance(seconds=121)
    lease = Lease(store, "job:y", clock=clock).acquire()
    assert store.lease("job:y") == (lease.holder, clock.now + timedelta(seconds=120))
    lease.release()


def test_a_lease_whose_holder_was_killed_is_taken_over_at_once(tmp_path: Path, store: SqlJobStore) -> None:
    code = (
        "import sys, time\n"
        "from paperfeed.adapters.store import open_store\n"
        "from paperfeed.adapters.store.job_runs import SqlJobStore\n"
        "from paperfeed.services.jobs import Lease\n"
        f"s = SqlJobStore(open_store({store.engine.url.render_as_string()!r}).engine)\n"
        "Lease(s, 'job:z').acquire()\n"
        "print('held', flush=True)\n"
        "time.sleep(60)\n"
    )
    child = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE)
    try:
        assert child.stdout is not None
        assert child.stdout.readline().strip() == b"held"
        holder = store.lease("job:z")
        assert holder is not None
        assert not holder_is_dead(holder[0])
        with pytest.raises(LeaseBusy):
            Lease(store, "job:z").acquire()
    finally:
        os.kill(child.pid, signal.SIGKILL)
        child.wait()
    assert holder_is_dead(holder[0])
    with Lease(store, "job:z"):
        pass
    assert not holder_is_dead(process_identity())


def test_runs_are_recorded_with_step_counts_and_errors(store: SqlJobStore) -> None:
    calls: list[str] = []

    def ok() -> dict[str, int]:
        calls.append("ok")
        return {"added": 3}

    def broken() -> dict[str, int]:
        calls.append("broken")
        raise ConnectionError("arXiv is unreachable")

    service = JobService(store, {"daily": lambda: [Step("harvest", broken), Step("digests", ok)]})
    run = service.run("daily")
    assert calls == ["broken", "ok"]  # a failed step does not stop the next
    assert run.status == "partial"
    assert run.error == "harvest: ConnectionError: arXiv is unreachable"
    assert [(s.name, s.status, s.counts) for s in run.steps] == [
        ("harvest", "failed", {}),
        ("digests", "ok", {"added": 3}),
    ]
    assert run.finished_at is not None
    assert run.finished_at >= run.started_at
    assert service.status()[0].id == run.id


def test_the_scheduler_runs_each_slot_once_and_catches_up_once(store: SqlJobStore) -> None:
    clock = Clock(datetime(2025, 3, 20, 6, 0, tzinfo=UTC))
    ran: list[str] = []

    def step(name: str) -> Step:
        def record() -> dict[str, int]:
            ran.append(name)
            return {}

        return Step(name, record)

    jobs = {"daily": lambda: [step("daily")], "digests": lambda: [step("digests")]}
    service = JobService(store, jobs, clock=clock)
    plan = {"daily": JobSchedule.parse("05:00"), "digests": JobSchedule.parse(":05")}
    scheduler = Scheduler(service, plan, clock=clock)
    done = scheduler.tick()
    assert sorted((r.job, r.slot) for r in done) == [
        ("daily", datetime(2025, 3, 20, 5, 0, tzinfo=UTC)),
        ("digests", datetime(2025, 3, 20, 5, 5, tzinfo=UTC)),
    ]
    assert scheduler.tick() == []  # the same slots: nothing again
    clock.advance(minutes=10)  # 06:10: the 06:05 digests slot is due
    assert [r.job for r in scheduler.tick()] == ["digests"]
    clock.advance(days=2, hours=3)  # down for two days: one run of each, for the latest slots
    caught = scheduler.tick()
    assert sorted((r.job, r.slot) for r in caught) == [
        ("daily", datetime(2025, 3, 22, 5, 0, tzinfo=UTC)),
        ("digests", datetime(2025, 3, 22, 9, 5, tzinfo=UTC)),
    ]
    assert ran == ["daily", "digests", "digests", "daily", "digests"]


def test_a_run_interrupted_by_a_crash_is_run_again(store: SqlJobStore) -> None:
    clock = Clock(datetime(2025, 3, 20, 6, 0, tzinfo=UTC))
    slot = datetime(2025, 3, 20, 5, 0, tzinfo=UTC)
    store.start_run("daily", slot, "scheduler", f"{process_identity().split(':')[0]}:999999:1:ab", clock.now)
    service = JobService(store, {"daily": lambda: [Step("x", lambda: {})]}, clock=clock)
    assert service.due({"daily": JobSchedule.parse("05:00")}, clock.now) == [("daily", slot)]
    assert [r.status for r in store.runs(job="daily")] == ["interrupted"]


def test_only_one_scheduler_runs(store: SqlJobStore) -> None:
    service = JobService(store, {"digests": lambda: []})
    held = Lease(store, "scheduler").acquire()
    try:
        with pytest.raises(LeaseBusy):
            Scheduler(service, {"digests": JobSchedule.parse(":05")}).run_forever(iterations=1)
    finally:
        held.release()
    started = time.monotonic()
    Scheduler(service, {"digests": JobSchedule.parse(":05")}).run_forever(iterations=1)
    assert time.monotonic() - started < 10


def test_daily_job_from_the_cli_records_a_partial_run(
    tmp_path: Path, server: ReplayServer, shared_dir: Path
) -> None:
    day = (shared_dir / "fixtures" / "hf_daily_api" / "2025-03-14.json").read_bytes()
    server.add("/api/daily_papers", Reply(200, day, {"content-type": "application/json"}))
    env = {
        "PAPERFEED_HF_API_URL": f"{server.base_url}/api",
        "PAPERFEED_ARXIV_OAI_URL": "http://127.0.0.1:9/oai",  # nothing listens there
        "PAPERFEED_JOBS_DAILY_STEPS": "harvest-arxiv,harvest-hf,index,digests",  # OAI-PMH is opt-in
        "PAPERFEED_HTTP_RETRIES": "0",
        "PAPERFEED_HF_DELAY": "0",
        "PAPERFEED_EMBEDDING_BACKEND": "fake",
        "PAPERFEED_KEYWORD_ENGINE": "fts5",
        "PAPERFEED_SECRET_KEY": "jobs-tests-secret-0123456789abcdefghijk",
    }
    runner = CliRunner()
    args = ["--data-dir", str(tmp_path / "data"), "jobs", "run", "daily"]
    result = runner.invoke(cli, args, env=env)
    assert result.exit_code == 1, result.output  # harvest-arxiv failed, the rest ran
    assert "harvest-arxiv: failed" in result.output
    assert re.search(r"harvest-hf: ok in [\d.]+ s \(added [1-9]\d*,", result.output), result.output
    assert re.search(r"index: ok in [\d.]+ s \(embedded [1-9]\d*,", result.output), result.output
    assert "digests: ok" in result.output
    status = runner.invoke(cli, ["--data-dir", str(tmp_path / "data"), "jobs", "status"], env=env)
    assert status.exit_code == 0, status.output
    assert "daily (manual)" in status.output
    assert ": partial" in status.output
    assert "harvest-hf: ok" in status.output
    again = runner.invoke(cli, args, env=env)  # idempotent: nothing new the second time
    assert "harvest-hf: ok" in again.output
    assert "(added 0," in again.output
    assert "index: ok" in again.output
    assert "(embedded 0," in again.output


def test_the_scheduler_reports_each_step_as_it_finishes(store: SqlJobStore) -> None:
    """What `paperfeed run` shows in its log stream while the daily job runs."""
    clock = Clock(datetime(2025, 3, 20, 6, 0, tzinfo=UTC))

    def broken() -> dict[str, int]:
        raise ConnectionError("arXiv is unreachable")

    jobs = {"daily": lambda: [Step("harvest-hf", lambda: {"added": 3}), Step("harvest-arxiv", broken)]}
    said: list[str] = []
    scheduler = Scheduler(
        JobService(store, jobs, clock=clock),
        {"daily": JobSchedule.parse("05:00")},
        clock=clock,
        notify=said.append,
    )
    scheduler.tick()
    assert said[0] == "running daily for 2025-03-20 05:00 UTC"
    assert re.fullmatch(r"daily: harvest-hf ok in [\d.]+ s \(added 3\)", said[1]), said
    assert re.fullmatch(
        r"daily: harvest-arxiv failed in [\d.]+ s: ConnectionError: arXiv is unreachable", said[2]
    ), said
    assert said[3].startswith("daily: partial")


def _nice_of(pid: int) -> int:
    with open(f"/proc/{pid}/stat", "rb") as fh:
        return int(fh.read().rsplit(b")", 1)[1].split()[16])  # field 19 of stat: nice


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads niceness from /proc")
def test_the_scheduler_lowers_its_priority_when_asked(tmp_path: Path) -> None:
    """``paperfeed run`` starts its scheduler with ``--nice``: the daily job's indexing then yields to web."""
    env = {**os.environ, "PAPERFEED_EMBEDDING_BACKEND": "fake", "PAPERFEED_JOBS_DAILY_STEPS": "digests"}
    args = [sys.executable, "-m", "paperfeed", "--data-dir", str(tmp_path / "data"), "scheduler"]
    proc = subprocess.Popen([*args, "--nice", "7"], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()  # the first schedule line: the process is past its start
        assert line, "the scheduler exited before printing its schedule"
        assert _nice_of(proc.pid) == _nice_of(os.getpid()) + 7
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=60)
    assert proc.returncode == 0
