"""`paperfeed run` supervises the web server, the scheduler and the indexer as one unit: real processes,
real signals, and /proc to prove that nothing is left behind."""

from __future__ import annotations

import io
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import httpx
import pytest
from rich.console import Console

from paperfeed.adapters.store import open_store
from paperfeed.adapters.store.job_runs import SqlJobStore
from paperfeed.adapters.supervisor_status import JsonSupervisorStatus
from paperfeed.bootstrap import build_app
from paperfeed.cli.supervisor import Backoff, ChildSpec, Supervisor
from paperfeed.services.jobs import Lease, holder_is_dead, process_identity
from paperfeed.settings import Settings
from paperfeed.web.security import SESSION_COOKIE

STAMP = re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d ")  # what every line of paperfeed run's log starts with

pytestmark = pytest.mark.slow

HTML = {"accept": "text/html"}
START = 120.0  # seconds for a child to come up: three Python processes at once on a busy machine


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _start_ticks(pid: int) -> str | None:
    """The process's start time (Linux ticks since boot), or None when it is gone or a zombie."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat.rsplit(")", 1)[-1].split()
    return None if fields[0] in ("Z", "X") else fields[19]


def _group_members(pgid: int) -> list[int]:
    """Live processes of process group ``pgid`` (a child's own children would be there too)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[-1].split()
            except OSError:
                continue
            if fields[0] not in ("Z", "X") and int(fields[2]) == pgid:
                found.append(int(entry.name))
    return found


@dataclass
class Instance:
    """A running `paperfeed run` and its data folder."""

    proc: subprocess.Popen[bytes]
    data: Path
    port: int
    env: dict[str, str]

    def status(self) -> dict[str, Any] | None:
        path = self.data / "run" / f"supervisor-{self.proc.pid}.json"
        try:
            value: dict[str, Any] = json.loads(path.read_text())
        except (OSError, ValueError):
            return None
        return value

    def children(self) -> dict[str, dict[str, Any]]:
        status = self.status()
        return {c["name"]: c for c in status["children"]} if status else {}

    def wait_for(
        self, what: str, test: Callable[[dict[str, dict[str, Any]]], bool], timeout: float = START
    ) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            assert self.proc.poll() is None, f"paperfeed run exited with {self.proc.returncode}"
            if test(self.children()):
                return
            time.sleep(0.2)
        raise AssertionError(f"timed out waiting for {what}: {self.children()}")

    def wait_served(self) -> None:
        deadline = time.monotonic() + START
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"http://127.0.0.1:{self.port}/", timeout=2).status_code < 500:
                    return
            except httpx.TransportError:
                pass
            assert self.proc.poll() is None, f"paperfeed run exited with {self.proc.returncode}"
            time.sleep(0.3)
        raise AssertionError("the web child never answered")

    def cli(self, *args: str) -> str:
        command = [sys.executable, "-m", "paperfeed", "--data-dir", str(self.data), *args]
        done = subprocess.run(command, capture_output=True, text=True, timeout=120, env=self.env)
        assert done.returncode == 0, done.stderr
        return " ".join(done.stdout.split())

    def stop(self, sig: int) -> str:
        self.proc.send_signal(sig)
        out, _ = self.proc.communicate(timeout=60)
        return out.decode()


def _running(*names: str) -> Callable[[dict[str, dict[str, Any]]], bool]:
    return lambda children: all(children.get(n, {}).get("state") == "running" for n in names)


@pytest.fixture
def start(tmp_path: Path) -> Iterator[Callable[..., Instance]]:
    started: list[Instance] = []

    def launch(*extra: str) -> Instance:
        data, port = tmp_path / "data", _free_port()
        env = {
            **os.environ,
            "PAPERFEED_EMBEDDING_BACKEND": "fake",
            "PAPERFEED_KEYWORD_ENGINE": "fts5",
            "PAPERFEED_JOBS_DAILY_STEPS": "index,digests",  # no source is contacted
        }
        command = [sys.executable, "-m", "paperfeed", "--data-dir", str(data), "run", "--offline"]
        proc = subprocess.Popen(
            [*command, "--port", str(port), *extra],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # so that a failed test can still clean up its whole session
        )
        started.append(Instance(proc, data, port, env))
        return started[-1]

    yield launch
    for instance in started:  # a test that failed midway leaves nothing running
        if instance.proc.poll() is None:
            instance.proc.kill()
            instance.proc.communicate(timeout=30)
        for child in instance.children().values():
            if child.get("pid"):
                for pid in _group_members(child["pid"]):
                    os.kill(pid, signal.SIGKILL)


def _assert_gone(pids: dict[int, str | None], timeout: float = 30.0) -> None:
    """Every process of ``pids`` (pid -> start ticks) and of its process group has exited."""
    deadline = time.monotonic() + timeout
    left: list[int] = []
    while time.monotonic() < deadline:
        left = [p for p, ticks in pids.items() if _start_ticks(p) is not None and _start_ticks(p) == ticks]
        left += [m for p in pids for m in _group_members(p)]
        if not left:
            return
        time.sleep(0.2)
    raise AssertionError(f"orphans left running: {sorted(set(left))}")


def _child_pids(instance: Instance) -> dict[int, str | None]:
    return {c["pid"]: _start_ticks(c["pid"]) for c in instance.children().values() if c.get("pid")}


def test_a_killed_scheduler_is_restarted_and_sigterm_stops_everything(start: Callable[..., Instance]) -> None:
    run = start("--scheduler")
    run.wait_for("web, scheduler and indexer", _running("web", "scheduler", "indexer"))
    run.wait_served()
    first = run.children()["scheduler"]["pid"]
    os.kill(first, signal.SIGKILL)
    run.wait_for(
        "a new scheduler",
        lambda c: c["scheduler"]["state"] == "running" and c["scheduler"]["pid"] not in (None, first),
    )
    scheduler = run.children()["scheduler"]
    assert scheduler["restarts"] == 1
    assert scheduler["last_exit"] == -signal.SIGKILL
    assert _start_ticks(first) is None

    said = run.cli("jobs", "status")
    assert f"supervised by paperfeed run pid {run.proc.pid}" in said
    assert f"scheduler running (pid {scheduler['pid']}, restarted 1x, last exit -9)" in said
    assert "web running" in said
    assert "indexer running" in said

    # /admin/jobs of the web child shows the same, to an administrator
    app = build_app(Settings(data_dir=run.data))
    try:
        app.readers.accounts.sign_up(
            "root@example.org", "correct horse battery", None, client="t", base_url="http://x"
        )
        app.readers.accounts.set_role("root@example.org", "admin")
        admin = app.readers.accounts.user_by_email("root@example.org")
        session = app.readers.accounts.create_session(admin).session
    finally:
        app.close()
    page = httpx.get(
        f"http://127.0.0.1:{run.port}/admin/jobs", headers=HTML, cookies={SESSION_COOKIE: session}, timeout=30
    )
    assert page.status_code == 200
    text = " ".join(page.text.split())
    assert f"supervised by paperfeed run pid {run.proc.pid}" in text
    assert "scheduler running" in text
    assert "restarted 1x" in text

    children = _child_pids(run)
    out = run.stop(signal.SIGTERM)
    assert run.proc.returncode == 0, out
    _assert_gone(children)
    assert "Traceback" not in out
    assert "scheduler was killed by SIGKILL" in out  # one log stream, prefixed by the child's name
    relayed = [line for line in out.splitlines() if STAMP.match(line)]  # every line the supervisor prints
    assert any(STAMP.sub("", line, count=1).startswith("scheduler ") for line in relayed), out
    assert "stopping web, scheduler, indexer (SIGTERM)" in out
    assert run.status() is None  # a clean stop withdraws the status
    assert "no paperfeed run supervisor is running" in run.cli("jobs", "status")


def test_sigint_stops_everything_and_a_held_scheduler_lease_means_standby(
    start: Callable[..., Instance], tmp_path: Path
) -> None:
    """A second `paperfeed run` on the same data does not start a second scheduler: it serves, and its
    scheduler waits in standby (retried later) while another process holds the scheduler lease."""
    data = tmp_path / "data"
    data.mkdir()
    store = open_store(f"sqlite+pysqlite:///{data / 'paperfeed.db'}")
    lease = Lease(SqlJobStore(store.engine), "scheduler").acquire()
    try:
        run = start("--scheduler")
        run.wait_for(
            "web running and the scheduler in standby",
            lambda c: _running("web", "indexer")(c) and c.get("scheduler", {}).get("state") == "standby",
        )
        run.wait_served()
        said = run.cli("jobs", "status")
        assert "scheduler standby (last exit 4, another scheduler holds the scheduler lease" in said
        children = _child_pids(run)
        out = run.stop(signal.SIGINT)
    finally:
        lease.release()
        store.close()
    assert run.proc.returncode == 0, out
    _assert_gone(children)
    assert "another scheduler holds the scheduler lease" in out
    assert "Traceback" not in out


def test_a_hard_killed_supervisor_leaves_no_orphans(start: Callable[..., Instance]) -> None:
    run = start("--scheduler")
    run.wait_for("web, scheduler and indexer", _running("web", "scheduler", "indexer"))
    children = _child_pids(run)
    assert len(children) == 3
    run.proc.kill()  # SIGKILL: the supervisor cannot stop anything itself
    run.proc.communicate(timeout=30)
    _assert_gone(children)  # each child noticed that its parent died
    said = run.cli("jobs", "status")
    assert "no paperfeed run supervisor is running on this data folder" in said
    assert f"(the last one, pid {run.proc.pid}, is gone)" in said


def _console() -> tuple[Console, io.StringIO]:
    out = io.StringIO()
    return Console(file=out, width=200, force_terminal=False), out


def test_every_line_of_the_log_starts_with_its_time_in_utc(tmp_path: Path) -> None:
    """The supervisor's own lines and every line a child prints carry the time (issue #39 item 5); a
    child that stamps its lines itself (the scheduler) keeps its own time, moved to the front, once."""
    console, out = _console()
    script = "print('hello'); print('2026-03-04 05:06:07 running daily'); raise SystemExit(3)"
    child = ChildSpec("web", [sys.executable, "-c", script], essential=True)
    backoff = Backoff(initial=0.1, maximum=0.1, give_up_after=1, stable_after=30, stop_timeout=5)
    fixed = datetime(2026, 1, 2, 3, 4, 5, tzinfo=timezone(timedelta(hours=2)))  # 01:04:05 UTC
    supervisor = Supervisor(
        [child], console=console, identity=process_identity(), backoff=backoff, clock=lambda: fixed, url=None
    )
    assert supervisor.run() == 1
    lines = out.getvalue().splitlines()
    assert lines, out.getvalue()
    assert all(STAMP.match(line) for line in lines), lines
    assert "2026-01-02 01:04:05 web       hello" in lines
    assert "2026-03-04 05:06:07 web       running daily" in lines  # its own time, not a second one
    assert any(line.startswith("2026-01-02 01:04:05 run       ") for line in lines), lines


def test_a_child_that_keeps_crashing_is_reported_and_given_up(tmp_path: Path) -> None:
    """Back-off between restarts, then a clear report; an essential child's failure stops the unit."""
    console, out = _console()
    status = JsonSupervisorStatus(tmp_path / "run")
    crash = ChildSpec(
        "web", [sys.executable, "-c", "print('port taken'); raise SystemExit(3)"], essential=True
    )
    backoff = Backoff(initial=0.1, maximum=0.4, give_up_after=4, stable_after=30, stop_timeout=5)
    published: list[list[str]] = []

    class Recording(JsonSupervisorStatus):
        def publish(self, value: Any) -> None:
            published.append([f"{c.name}:{c.state}:{c.restarts}" for c in value.children])
            super().publish(value)

    recorder = Recording(status.folder)
    started = time.monotonic()
    code = Supervisor(
        [crash], console=console, identity=process_identity(), status=recorder, backoff=backoff, url=None
    ).run()
    took = time.monotonic() - started
    text = out.getvalue()
    assert code == 1
    assert text.count("web       port taken") == 4  # relayed with its name, once per attempt
    assert "web exited with code 3 after" in text
    assert "restarting it in 0.1 s" in text
    assert "restarting it in 0.2 s (crash 2 in a row)" in text
    assert "restarting it in 0.4 s (crash 3 in a row)" in text  # doubled, then capped
    assert "web keeps crashing: it exited with code 3, 4 times in a row" in text
    assert "stopped: web could not be kept running" in text
    assert took >= 0.1 + 0.2 + 0.4
    assert "web:failed:3" in [s for states in published for s in states]
    assert status.read_all() == []  # withdrawn when the supervisor ends


def test_a_crashing_helper_child_does_not_stop_the_unit(tmp_path: Path) -> None:
    """The scheduler or indexer giving up is reported, and the rest keeps running until a signal."""
    console, out = _console()
    status = JsonSupervisorStatus(tmp_path / "run")
    specs = [
        ChildSpec("web", [sys.executable, "-c", "import time; print('up', flush=True); time.sleep(600)"]),
        ChildSpec("indexer", [sys.executable, "-c", "raise SystemExit(2)"]),
    ]
    backoff = Backoff(initial=0.05, maximum=0.05, give_up_after=2, stop_timeout=5)
    supervisor = Supervisor(
        specs,
        console=console,
        identity=process_identity(),
        status=status,
        is_dead=holder_is_dead,
        backoff=backoff,
        url=None,
    )

    def interrupt_when_failed() -> None:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            entries = status.read_all()
            if entries and {c.name: c.state for c in entries[0].children}.get("indexer") == "failed":
                os.kill(os.getpid(), signal.SIGINT)
                return
            time.sleep(0.05)

    import threading

    watcher = threading.Thread(target=interrupt_when_failed)
    watcher.start()
    code = supervisor.run()
    watcher.join()
    text = out.getvalue()
    assert code == 0
    assert "indexer keeps crashing" in text
    assert "stopping web (SIGINT)" in text
    assert "web       up" in text
