"""Where `paperfeed run` serves (issue #40 item 1): the settings (`PAPERFEED_PORT`, `PAPERFEED_HOST`), the
flags and `make run PORT=…` agree, and `users add --link` in another shell points where it really serves.

Before, `run` had defaults of its own (127.0.0.1:8000) and ignored the settings, the Makefile passed no
port, and `users add --link` built its link from the settings alone: 8000 when the server ran on
`--port 8123`. Real processes: `paperfeed run` (and `make run`) on loopback, another `paperfeed users add`
beside it, and a GET on the port.
"""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
START = 120.0  # seconds for the children to come up on a busy machine


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _env(data: Path, **extra: str) -> dict[str, str]:
    closed = f"http://127.0.0.1:{_free_port()}"  # every source unreachable: offline at once
    keep = {k: v for k, v in os.environ.items() if not k.startswith("PAPERFEED_")}
    return {
        **keep,
        "PAPERFEED_DATA_DIR": str(data),
        "PAPERFEED_EMBEDDING_BACKEND": "fake",
        "PAPERFEED_KEYWORD_ENGINE": "fts5",
        "PAPERFEED_JOBS_DAILY_STEPS": "index,digests",
        "PAPERFEED_HF_API_URL": f"{closed}/api",
        "PAPERFEED_ARXIV_API_URL": f"{closed}/api/query",
        "PAPERFEED_ARXIV_OAI_URL": f"{closed}/oai",
        "PAPERFEED_S2_API_URL": f"{closed}/graph/v1",
        "PAPERFEED_OPENALEX_API_URL": closed,
        **extra,
    }


@dataclass
class Started:
    proc: subprocess.Popen[bytes]
    data: Path

    def served_on(self, port: int) -> httpx.Response:
        """The home page from ``port``, once the web child answers there."""
        deadline = time.monotonic() + START
        while time.monotonic() < deadline:
            assert self.proc.poll() is None, f"it exited with {self.proc.returncode}: {self.stop()}"
            try:
                return httpx.get(f"http://127.0.0.1:{port}/", headers={"accept": "text/html"}, timeout=5)
            except httpx.TransportError:
                time.sleep(0.3)
        raise AssertionError(f"nothing answered on port {port}")

    def stop(self) -> str:
        """Ctrl+C as a terminal sends it: to the whole foreground process group."""
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGINT)
        out, _ = self.proc.communicate(timeout=60)
        return out.decode()


@pytest.fixture
def start(tmp_path: Path) -> Iterator[Callable[[list[str], dict[str, str]], Started]]:
    started: list[Started] = []

    def launch(command: list[str], env: dict[str, str]) -> Started:
        proc = subprocess.Popen(
            command,
            env=env,
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group, as a shell gives a foreground job
        )
        started.append(Started(proc, Path(env["PAPERFEED_DATA_DIR"])))
        return started[-1]

    yield launch
    for run in started:
        if run.proc.poll() is None:
            os.killpg(run.proc.pid, signal.SIGKILL)
            run.proc.communicate(timeout=30)
    for line in _processes_using(tmp_path):  # a failed test leaves nothing running
        os.kill(int(line.split(":", 1)[0]), signal.SIGKILL)


def _processes_using(folder: Path) -> list[str]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and int(entry.name) != os.getpid():
            try:
                cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                continue
            if str(folder) in cmdline:
                found.append(f"{entry.name}: {cmdline}")
    return found


def _sign_in_link(env: dict[str, str], email: str = "reader@example.org") -> str:
    """``paperfeed users add --link`` run from another shell: the link it prints."""
    added = subprocess.run(
        [sys.executable, "-m", "paperfeed", "users", "add", email, "--link"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert added.returncode == 0, added.stderr
    return next(line for line in added.stdout.splitlines() if "/signin/link" in line)


def test_paperfeed_port_moves_run_and_the_sign_in_link_follows(
    start: Callable[[list[str], dict[str, str]], Started], tmp_path: Path
) -> None:
    port = _free_port()
    env = _env(tmp_path / "data", PAPERFEED_PORT=str(port))
    run = start([sys.executable, "-m", "paperfeed", "run", "--offline"], env)
    assert run.served_on(port).status_code == 200
    link = _sign_in_link(env)
    assert link.startswith(f"http://127.0.0.1:{port}/signin/link"), link
    out = run.stop()
    assert f"serving on http://127.0.0.1:{port}/" in out
    assert run.proc.returncode == 0, out
    assert "Traceback" not in out


def test_a_port_flag_reaches_users_add_in_another_shell_through_the_running_supervisor(
    start: Callable[[list[str], dict[str, str]], Started], tmp_path: Path
) -> None:
    """`users add` runs without the flag in its settings: the supervisor's status says where it serves."""
    port = _free_port()
    data = tmp_path / "data"
    run = start([sys.executable, "-m", "paperfeed", "run", "--offline", "--port", str(port)], _env(data))
    assert run.served_on(port).status_code == 200
    link = _sign_in_link(_env(data))  # no PAPERFEED_PORT here: the settings alone would say 8000
    assert link.startswith(f"http://127.0.0.1:{port}/signin/link"), link
    signed = httpx.get(link, headers={"accept": "text/html"}, timeout=30)  # the link opens on that server
    assert signed.status_code == 200, signed.text[:300]
    out = run.stop()
    assert run.proc.returncode == 0, out
    # stopped: the status is withdrawn, and a link made now falls back to the settings
    later = _sign_in_link(_env(data, PAPERFEED_PORT="8321"), "later@example.org")
    assert later.startswith("http://127.0.0.1:8321/"), later


def test_make_run_port_serves_there(
    start: Callable[[list[str], dict[str, str]], Started], tmp_path: Path
) -> None:
    """`make run PORT=…` on the venv running these tests (``-o``: it is installed, do not reinstall)."""
    venv = Path(sys.prefix)
    if not (venv / "bin" / "paperfeed").is_file():
        pytest.skip("these tests do not run from a venv with paperfeed installed (make test makes one)")
    port = _free_port()
    command = ["make", "-s", "-o", f"{venv}/.installed", "run", f"PORT={port}", f"VENV={venv}"]
    run = start(command, _env(tmp_path / "data"))
    page = run.served_on(port)
    assert page.status_code == 200
    out = run.stop()
    assert f"serving on http://127.0.0.1:{port}/" in out, out
    assert re.search(rf"links in mail point to http://127\.0\.0\.1:{port}/", out), out
    assert not _processes_using(tmp_path / "data"), "Ctrl+C left processes behind"


def test_a_taken_address_from_the_settings_is_refused_before_anything_is_imported(tmp_path: Path) -> None:
    """PAPERFEED_HOST and PAPERFEED_PORT are the address checked (the old `run` checked 127.0.0.1:8000
    whatever they said), a flag wins over them, and the error says how to choose another port, before the
    import it was asked for."""
    papers = tmp_path / "papers.jsonl"
    papers.write_text('{"id": "2503.00001", "title": "A study", "abstract": "Words."}\n')
    with socket.socket() as held, socket.socket() as other:
        held.bind(("127.0.0.2", 0))  # another loopback address: only PAPERFEED_HOST can point here
        held.listen()
        port = int(held.getsockname()[1])
        other.bind(("127.0.0.2", 0))
        other.listen()
        flag = int(other.getsockname()[1])
        data = tmp_path / "data"
        env = _env(data, PAPERFEED_HOST="127.0.0.2", PAPERFEED_PORT=str(port))
        command = [sys.executable, "-m", "paperfeed", "run", "--offline", "--import", str(papers)]
        refused = subprocess.run(command, env=env, capture_output=True, text=True, timeout=120)
        assert refused.returncode == 2, refused.stdout + refused.stderr  # a usage error, as a bad flag
        said = refused.stdout + refused.stderr
        assert f"cannot serve on 127.0.0.2:{port}: Address already in use" in said, said
        assert "--port N, or PAPERFEED_PORT=N (make run PORT=N)" in said, said
        assert "Traceback" not in said
        assert not (data / "paperfeed.db").exists() or "2503.00001" not in _stored_ids(data)
        by_flag = subprocess.run(
            [*command, "--port", str(flag)], env=env, capture_output=True, text=True, timeout=120
        )
    assert by_flag.returncode == 2
    assert f"cannot serve on 127.0.0.2:{flag}:" in by_flag.stdout + by_flag.stderr


def _stored_ids(data: Path) -> set[str]:
    import sqlite3

    with sqlite3.connect(data / "paperfeed.db") as conn:
        try:
            return {row[0] for row in conn.execute("SELECT id FROM papers")}
        except sqlite3.OperationalError:  # no tables yet
            return set()
