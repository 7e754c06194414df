"""Ctrl+C or SIGTERM of the scheduler while a job runs (issue #40 item 2): it stops within a few seconds
with one final line, under `paperfeed run` in time for the supervisor's 10 s, and the next start runs the
job again.

Before, the scheduler's handler only set a flag read between jobs: a daily job waiting on a source (here a
server that accepts the request and never answers, with a 60 s HTTP timeout) held the stop for the whole
request and its retries; under `paperfeed run` the supervisor then said "scheduler did not stop in time:
killing it". The request reaching the test's server is the synchronisation: the scheduler is inside its
job then. Real processes, real sockets, no sleeps standing in for synchronisation.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

START = 120.0  # seconds for the process to come up and ask on a busy machine
STOPPED = 20.0  # a stop must end well before this (and before the 60 s HTTP timeout could end the job)


@contextmanager
def _silent_source() -> Iterator[socket.socket]:
    """A server that takes every request and never answers."""
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        server.settimeout(START)
        yield server


def _asked(server: socket.socket) -> socket.socket:
    """Until a request has arrived (the scheduler is inside its daily job, waiting for the answer)."""
    conn, _ = server.accept()
    conn.settimeout(START)
    assert conn.recv(200).startswith(b"GET /api/daily_papers"), "not the daily job's request"
    return conn


def _env(data: Path, server: socket.socket) -> dict[str, str]:
    keep = {k: v for k, v in os.environ.items() if not k.startswith("PAPERFEED_")}
    port = server.getsockname()[1]
    return {
        **keep,
        "PAPERFEED_DATA_DIR": str(data),
        "PAPERFEED_EMBEDDING_BACKEND": "fake",
        "PAPERFEED_KEYWORD_ENGINE": "fts5",
        "PAPERFEED_JOBS_DAILY_STEPS": "harvest-hf",
        "PAPERFEED_HF_API_URL": f"http://127.0.0.1:{port}/api",
        "PAPERFEED_HTTP_TIMEOUT": "60",
    }


def _start(command: list[str], env: dict[str, str]) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "paperfeed", *command],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )


def _stop(proc: subprocess.Popen[str], sig: int) -> list[str]:
    try:
        os.killpg(proc.pid, sig)
        out, _ = proc.communicate(timeout=STOPPED)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate(timeout=30)
    return out.splitlines()


def test_a_stop_inside_the_daily_job_ends_within_seconds_and_the_next_start_runs_it_again(
    tmp_path: Path,
) -> None:
    data = tmp_path / "data"
    with _silent_source() as server:
        env = _env(data, server)
        scheduler = _start(["scheduler"], env)
        held = _asked(server)
        said = _stop(scheduler, signal.SIGTERM)
        held.close()
        assert scheduler.returncode == 0, said
        finals = [line for line in said if "scheduler stopped" in line]
        assert len(finals) == 1, said
        assert finals[0].endswith(
            "scheduler stopped while running the daily job: the next start runs it again"
        )
        assert not [line for line in said if "Traceback" in line], said

        # the next start takes the dead one's lease and runs the interrupted job again
        again = _start(["scheduler"], env)
        _asked(server).close()  # the answer never comes: the connection drops, the step fails at once
        server.close()  # and its retries find nobody: the job ends, the scheduler naps
        said_again: list[str] = []
        assert again.stdout is not None
        for line in again.stdout:
            said_again.append(line.rstrip())
            if "daily: " in line and ("failed" in line or "partial" in line):
                break
        later = _stop(again, signal.SIGTERM)
    assert any("running daily for" in line for line in said_again), said_again
    assert again.returncode == 0, said_again + later
    assert not [line for line in later if "scheduler stopped" in line], later  # napping: nothing to say
    status = subprocess.run(
        [sys.executable, "-m", "paperfeed", "jobs", "status"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert "interrupted" in status.stdout, status.stdout


def test_ctrl_c_of_paperfeed_run_while_the_daily_job_waits_stops_the_scheduler_in_time(
    tmp_path: Path,
) -> None:
    """The supervisor gives its children 10 s: the scheduler used to take the job's whole request."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with _silent_source() as server:
        env = _env(tmp_path / "data", server)
        run = _start(["run", "--offline", "--scheduler", "--port", str(port)], env)
        held = _asked(server)
        said = _stop(run, signal.SIGINT)  # Ctrl+C in the terminal: to the foreground process group
        held.close()
    assert run.returncode == 0, "\n".join(said)
    assert not [line for line in said if "did not stop in time" in line], "\n".join(said)
    finals = [line for line in said if "scheduler stopped" in line]
    assert len(finals) == 1, "\n".join(said)
    assert "while running the daily job" in finals[0]
    assert not [line for line in said if "Traceback" in line], "\n".join(said)
