"""A real ``paperfeed index --follow`` process for tests: started with the given data folder and
environment, its output read line by line on a thread, so a test can wait for a line and stop it."""

from __future__ import annotations

import queue
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

__all__ = ["Follower", "import_file", "index_follow"]


def import_file(data: Path, env: dict[str, str], path: Path) -> None:
    """``paperfeed import PATH`` into ``data``, in a process of its own, as a person would run it."""
    command = [sys.executable, "-m", "paperfeed", "--data-dir", str(data), "import", str(path)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode == 0, done.stderr


class Follower:
    """The running indexer and every line it printed so far (``seen``)."""

    def __init__(self, proc: subprocess.Popen[str]) -> None:
        self.proc = proc
        self.seen: list[str] = []
        self._lines: queue.Queue[str] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self._lines.put(line.strip())

    def expect(self, text: str, timeout: float = 90) -> str:
        """The next line that contains ``text``; fails when the process exits or the time runs out."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                line = self._lines.get(timeout=0.5)
            except queue.Empty:
                assert self.proc.poll() is None, f"index --follow exited: {self.seen}"
                continue
            self.seen.append(line)
            if text in line:
                return line
        raise AssertionError(f"{text!r} never came: {self.seen}")

    def stop(self) -> None:
        """SIGTERM, as ``paperfeed run`` stops it, and wait for the exit."""
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(timeout=30)


@contextmanager
def index_follow(data: Path, env: dict[str, str], *args: str) -> Iterator[Follower]:
    """``paperfeed --data-dir DATA index --follow ARGS…``; stopped (SIGTERM) when the block ends."""
    command = [sys.executable, "-m", "paperfeed", "--data-dir", str(data), "index", "--follow", *args]
    proc = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    follower = Follower(proc)
    try:
        yield follower
    finally:
        if proc.poll() is None:
            follower.stop()
