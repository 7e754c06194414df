"""`make run` installs PyTorch's CPU build, not PyPI's default with GBs of CUDA (issue #30, item 16).

scripts/install-torch asks PyTorch's CPU wheel index when it answers and falls back to pip's configured
sources (this machine's wheelhouse) when it does not. The script is run for real against a loopback index;
the Python it is given records what it would hand to pip instead of installing 190 MB.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import ClassVar

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "install-torch"


class _Index(BaseHTTPRequestHandler):
    asked: ClassVar[list[str]] = []

    def do_GET(self) -> None:
        _Index.asked.append(self.path)
        body = b'<html><body><a href="torch-2.13.0+cpu.whl">torch</a></body></html>'
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *_: object) -> None:
        return None


@pytest.fixture
def index() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Index)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/whl/cpu"
    finally:
        server.shutdown()


@pytest.fixture
def python(tmp_path: Path) -> tuple[Path, Path]:
    """A Python that runs code as the real one but records ``-m pip`` calls (and has no torch)."""
    calls = tmp_path / "pip-calls"
    fake = tmp_path / "python"
    fake.write_text(
        "#!/usr/bin/env bash\n"
        f'if [ "$1" = "-m" ] && [ "$2" = "pip" ]; then echo "$*" >> {calls}; exit 0; fi\n'
        f'if [ "$1" = "-c" ]; then exit 1; fi  # "is torch installed?": no\n'
        f'exec {sys.executable} "$@"\n'
    )
    fake.chmod(0o755)
    return fake, calls


def _run(python: Path, index: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PAPERFEED_TORCH_INDEX": index}
    return subprocess.run(
        [str(SCRIPT), str(python), "torch==2.13.0"], capture_output=True, text=True, env=env, timeout=60
    )


def _closed() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{s.getsockname()[1]}/whl/cpu"


def test_the_cpu_index_is_used_where_it_answers(python: tuple[Path, Path], index: str) -> None:
    fake, calls = python
    done = _run(fake, index)
    assert done.returncode == 0, done.stderr
    assert calls.read_text().split()[-3:] == ["torch==2.13.0", "--index-url", index]
    assert "/whl/cpu/torch/" in _Index.asked
    assert "CPU build" in done.stderr


def test_without_the_index_pip_uses_its_configured_sources(python: tuple[Path, Path]) -> None:
    fake, calls = python
    done = _run(fake, _closed())
    assert done.returncode == 0, done.stderr
    assert "--index-url" not in calls.read_text()
    assert calls.read_text().split()[-1] == "torch==2.13.0"
    assert "not reachable" in done.stderr
    skipped = _run(fake, "")  # PAPERFEED_TORCH_INDEX="" skips the CPU index
    assert skipped.returncode == 0
    assert "--index-url" not in calls.read_text()


def test_make_installs_torch_through_the_script() -> None:
    makefile = (ROOT / "Makefile").read_text()
    assert "scripts/install-torch $(BIN)/python $(TORCH)" in makefile
    assert "$(PIP) install $(TORCH)" not in makefile
