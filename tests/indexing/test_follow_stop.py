"""Ctrl+C of the background indexer (issue #40 item 2): a stop is clean within a few seconds wherever the
indexer is, says one final line, and promises a resume only when something is pending.

The race: the indexer raised an exception from its signal handler, and a Python handler runs only once
the main thread is back in Python code. Inside a C call that does not return soon -- a forward pass of
the model, a role-model fit, a topics build, or here a write that waits for another process's SQLite
lock -- the stop waited for it; then the interpreter's teardown of the loaded model took seconds more.
Under `paperfeed run` the supervisor's 10 s ran out after the indexer had said "the next start resumes…":
"indexer did not stop in time: killing it".

The C call is made deterministic here with a real SQLite lock: the test holds the database's write lock
(as a long import's transaction does), starts the indexer, and signals it once the main thread is seen
sleeping inside SQLite's busy handler (Linux: ``/proc/PID/syscall``), which it cannot leave before the
lock is released or SQLite's 30 s busy timeout. The old indexer could therefore not stop before the
lock went; this one must stop while it is still held. Real processes, the fake embedder (the model's
speed is not the point), no sleeps standing in for synchronisation.
"""

from __future__ import annotations

import os
import platform
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.importing.conftest import rec, write_jsonl
from tests.support.follower import import_file, index_follow

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/PID/syscall"),
]

PAPERS = 300
# clock_nanosleep, which SQLite's busy handler sleeps in between tries for the lock
NANOSLEEP = {"x86_64": 230, "aarch64": 115}.get(platform.machine())
LOCK_HELD = 20.0  # seconds the test may hold the lock: well under SQLite's 30 s busy timeout


def _env() -> dict[str, str]:
    keep = {k: v for k, v in os.environ.items() if not k.startswith("PAPERFEED_")}
    return {**keep, "PAPERFEED_EMBEDDING_BACKEND": "fake", "PAPERFEED_KEYWORD_ENGINE": "fts5"}


@pytest.fixture
def data(tmp_path: Path) -> Path:
    folder = tmp_path / "data"
    papers = write_jsonl(tmp_path / "papers.jsonl", [rec(f"2503.{i:05d}") for i in range(1, PAPERS + 1)])
    import_file(folder, _env(), papers)
    return folder


@contextmanager
def _write_lock(data: Path) -> Iterator[None]:
    """The database's write lock, held by this process (another writer, as an import's transaction)."""
    conn = sqlite3.connect(data / "paperfeed.db", isolation_level=None, timeout=30)
    try:
        conn.execute("BEGIN IMMEDIATE")
        yield
    finally:
        conn.execute("ROLLBACK")
        conn.close()


def _waiting_inside_sqlite(pid: int, timeout: float = 60) -> None:
    """Until the process's main thread is asleep in SQLite's busy handler (it polls the lock in short
    sleeps; the indexer itself never sleeps while it has papers to embed)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        fields = Path(f"/proc/{pid}/syscall").read_text().split()
        if fields and fields[0] == str(NANOSLEEP):
            return
        time.sleep(0.01)
    raise AssertionError("the indexer never waited for the lock")


@pytest.mark.skipif(NANOSLEEP is None, reason=f"no clock_nanosleep number known for {platform.machine()}")
def test_a_stop_while_inside_a_c_call_ends_within_seconds_and_the_next_start_resumes(data: Path) -> None:
    with _write_lock(data), index_follow(data, _env(), "--poll", "0.2") as indexer:
        indexer.expect(f"embedding {PAPERS} papers")
        _waiting_inside_sqlite(indexer.proc.pid)
        indexer.proc.send_signal(signal.SIGTERM)
        code = indexer.proc.wait(timeout=LOCK_HELD)  # while the lock is still held: the old one could not
        last = indexer.expect("indexer stopped", timeout=5)
    assert code == 0
    assert last.startswith("indexer stopped while embedding papers: what was committed is kept")
    assert [line for line in indexer.seen if line.startswith("indexer stopped")] == [last]  # one final line
    assert not [line for line in indexer.seen if "Traceback" in line], indexer.seen

    # the next start embeds them all (what was rolled back is done again); its stop says one final line
    with index_follow(data, _env(), "--poll", "0.2") as again:
        again.expect(f"embedding {PAPERS} papers")
        again.expect(f"embedded {PAPERS} papers")
        again.proc.send_signal(signal.SIGTERM)
        assert again.proc.wait(timeout=LOCK_HELD) == 0
        again.expect("indexer stopped", timeout=5)
    assert len([line for line in again.seen if line.startswith("indexer stopped")]) == 1, again.seen


def test_a_stop_with_nothing_pending_promises_no_resume(tmp_path: Path) -> None:
    """An empty store: the indexer waits for papers; stopped, it says nothing was pending (the old one
    said "the next start resumes where it left off" whatever was left). With papers, the same when all are
    done: tests/indexing/test_follow.py."""
    with index_follow(tmp_path / "data", _env(), "--poll", "30") as indexer:
        indexer.expect("no papers yet")
        indexer.proc.send_signal(signal.SIGTERM)
        assert indexer.proc.wait(timeout=LOCK_HELD) == 0  # at once, not after the 30 s poll
        final = indexer.expect("indexer stopped", timeout=5)
    assert final == "indexer stopped: no papers yet, nothing was pending"
    assert "resume" not in " ".join(indexer.seen)


@pytest.mark.skipif(NANOSLEEP is None, reason=f"no clock_nanosleep number known for {platform.machine()}")
def test_ctrl_c_of_paperfeed_run_stops_the_indexer_in_time_with_one_final_line(
    data: Path, tmp_path: Path
) -> None:
    """The symptom as a user met it: `paperfeed run`'s supervisor gives its children 10 s."""
    with socket_port() as port, _write_lock(data):
        command = [sys.executable, "-m", "paperfeed", "--data-dir", str(data), "run", "--offline"]
        run = subprocess.Popen(
            [*command, "--no-scheduler", "--port", str(port)],
            env=_env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        )
        try:
            assert run.stdout is not None
            seen: list[str] = []
            for line in run.stdout:
                seen.append(line.rstrip())
                if f"embedding {PAPERS} papers" in line:
                    break
            indexer = _child_pid(data, run.pid, "indexer")
            _waiting_inside_sqlite(indexer)
            os.killpg(run.pid, signal.SIGINT)  # Ctrl+C in the terminal
            out, _ = run.communicate(timeout=LOCK_HELD)
        finally:
            if run.poll() is None:
                os.killpg(run.pid, signal.SIGKILL)
                run.communicate(timeout=30)
    said = [*seen, *out.splitlines()]
    assert run.returncode == 0, "\n".join(said)
    assert not [line for line in said if "did not stop in time" in line], "\n".join(said)
    stopped = [line for line in said if "indexer stopped" in line]  # after the supervisor's time and name
    assert len(stopped) == 1, "\n".join(said)
    assert "while embedding papers" in stopped[0]
    assert not [line for line in said if "Traceback" in line], "\n".join(said)


@contextmanager
def socket_port() -> Iterator[int]:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = int(s.getsockname()[1])
    yield port


def _child_pid(data: Path, supervisor: int, name: str, timeout: float = 60) -> int:
    """The pid of ``name`` as the supervisor's status file says it."""
    import json

    path = data / "run" / f"supervisor-{supervisor}.json"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            children = {c["name"]: c for c in json.loads(path.read_text())["children"]}
        except (OSError, ValueError, KeyError):
            children = {}
        pid = children.get(name, {}).get("pid")
        if pid:
            return int(pid)
        time.sleep(0.05)
    raise AssertionError(f"no {name} in {path}")
