"""The first start as a new user meets it (#30 items 5 and 7), through the real ``paperfeed run``.

Item 5: after ``make run`` the ``paperfeed`` command is not on PATH (the venv is not activated): the run
banner says how to run it, in the README's words. Item 7: an offline first start (every source on a
closed loopback port) looks calm: no traceback, the import advice once, no line hard-wrapped at 80
columns, and Ctrl+C stops every process.
"""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from paperfeed.cli.run import PATH_HINT

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = Path(sys.executable).parent / "paperfeed"
SOURCES = ("ARXIV_OAI", "ARXIV_API", "HF_API", "S2_API", "OPENALEX_API")


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _env(**extra: str) -> dict[str, str]:
    """No PAPERFEED_* of the caller's, and a PATH without this venv (a shell after ``make run``)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PAPERFEED_")}
    venv_bin = str(Path(sys.executable).parent)
    env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep) if p and p != venv_bin)
    return {**env, **extra}


def _expected_hint() -> str:
    command = SCRIPT.relative_to(ROOT) if SCRIPT.is_relative_to(ROOT) else SCRIPT
    return PATH_HINT.format(command=command, activate=Path(command).parent / "activate")


needs_script = pytest.mark.skipif(
    not SCRIPT.is_file() or not (SCRIPT.parent / "activate").is_file(),
    reason="no paperfeed script and activate beside this Python (not a venv install)",
)


@needs_script
def test_run_says_how_to_run_commands_as_the_readme_does(tmp_path: Path) -> None:
    command = [sys.executable, "-m", "paperfeed", "--data-dir", str(tmp_path / "d"), "run"]
    done = subprocess.run(
        [*command, "--no-serve", "--offline"],
        cwd=ROOT,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert _expected_hint() in done.stdout.splitlines(), done.stdout
    readme = " ".join((ROOT / "README.md").read_text().split())
    assert PATH_HINT.format(command=".venv/bin/paperfeed", activate=".venv/bin/activate") in readme
    on_path = _env(PATH=f"{SCRIPT.parent}{os.pathsep}{_env()['PATH']}")  # an activated shell
    done = subprocess.run(
        [*command, "--no-serve", "--offline"],
        cwd=ROOT,
        env=on_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "not on your PATH" not in done.stdout


# What a line of `paperfeed run` may start with: the supervisor's own banner, or the time and a child's
# name (every line a child prints is relayed with them). A line hard-wrapped in two starts with neither.
_BANNER = (
    "using the secret key in ",
    "serving on http://",
    "paperfeed is not on your PATH",
    "links in mail point to ",
    "supervising web, scheduler, indexer",
    "sources unreachable (",
    "0 papers in ",
    "the store is empty.",
)
_STAMP = re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d ")


def _own_processes(marker: str) -> list[str]:
    """Command lines of processes still running with ``marker`` (the test's data folder) in them."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if marker in cmdline:
            found.append(cmdline)
    return found


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads /proc to see that every process stopped")
def test_an_offline_first_start_is_calm_and_stops_on_ctrl_c(tmp_path: Path) -> None:
    data = tmp_path / "data"
    closed = _closed_port()
    urls = {f"PAPERFEED_{name}_URL": f"http://127.0.0.1:{closed}/{name.lower()}" for name in SOURCES}
    env = _env(
        **urls,
        PAPERFEED_EMBEDDING_BACKEND="fake",
        PAPERFEED_HTTP_RETRIES="1",  # fail fast: the outcome is the same with more
        COLUMNS="60",  # a narrow "terminal": nothing may be cut at it, since the output is a pipe
    )
    command = [
        sys.executable,
        "-m",
        "paperfeed",
        "--data-dir",
        str(data),
        "run",
        "--port",
        str(_closed_port()),
    ]
    proc = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    assert proc.stdout is not None
    lines: list[str] = []
    deadline = time.monotonic() + 120
    try:
        # the daily job runs at once (its slot today was missed) and meets the closed port: read up to its end
        while time.monotonic() < deadline:
            raw = proc.stdout.readline()
            if not raw:
                break
            lines.append(raw.decode().rstrip("\n"))
            if _STAMP.sub("", lines[-1], count=1).startswith("scheduler") and "digests: ok" in lines[-1]:
                break
        time.sleep(1)
    finally:
        proc.send_signal(signal.SIGINT)
        rest, _ = proc.communicate(timeout=60)
    lines += rest.decode().splitlines()
    out = "\n".join(lines)
    assert proc.returncode == 0, out
    assert "Traceback" not in out
    assert out.count("paperfeed works offline: import a file") == 1, out
    assert out.count("paperfeed import") == 1, out  # no second wording of the same advice either
    assert "daily: partial (failed: harvest-hf)" in out, out
    [failed] = [line for line in lines if "harvest-hf failed" in line]
    assert f"127.0.0.1:{closed} unreachable" in failed  # the whole reason, on the step's one line
    assert "Connection refused" in failed
    assert "SourceUnavailable" not in out  # said as what happened, not as a Python class
    children = ("web", "scheduler", "indexer", "run")
    for line in lines:
        if line.startswith(_BANNER):
            continue
        # every relayed line starts with the time (the scheduler's own time moved to the front) and a name
        assert _STAMP.match(line), f"a line without its time, or cut in two: {line!r}\n{out}"
        name = _STAMP.sub("", line, count=1).split(" ", 1)[0]
        assert name in children, f"a line cut in two: {line!r}\n{out}"
    unreachable = [line for line in lines if line.startswith("sources unreachable (")]
    assert len(unreachable) == 1
    assert unreachable[0].endswith(").")
    if SCRIPT.is_file() and (SCRIPT.parent / "activate").is_file():
        assert _expected_hint() in lines  # item 5: the serving banner says it too
    assert "stopping web, scheduler, indexer (SIGINT)" in out
    time.sleep(0.5)
    assert _own_processes(str(data)) == []
