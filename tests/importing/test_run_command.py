"""`paperfeed run` (what `make run` calls) never hangs without a network and says how to go offline."""

from __future__ import annotations

import socket
import time
from pathlib import Path

from .conftest import RunCli, rec, write_jsonl


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_unreachable_sources_are_reported_quickly(cli: RunCli) -> None:
    env = {"PAPERFEED_HF_API_URL": f"http://127.0.0.1:{_closed_port()}/api"}
    started = time.monotonic()
    result = cli("run", "--no-serve", "--probe-timeout", "2", env=env)
    assert result.exit_code == 0, result.output
    assert time.monotonic() - started < 20
    text = " ".join(result.output.split())
    assert "sources unreachable" in text
    assert text.count("make run DATA=papers.jsonl.gz") == 1  # the advice once (#30 item 7)
    assert "the store is empty" in text


def test_run_imports_given_files_first(cli: RunCli, tmp_path: Path) -> None:
    f = write_jsonl(tmp_path / "p.jsonl", [rec("2503.00001"), rec("2503.00002")])
    result = cli("run", "--no-serve", "--offline", "--import", str(f))
    assert result.exit_code == 0, result.output
    assert "2 papers in" in result.output


def test_run_serves_the_web_app_and_embeds_in_the_background(tmp_path: Path) -> None:
    """What `make run DATA=…` does: import, serve on a port, embed in the background, stop on Ctrl+C."""
    import os
    import signal
    import subprocess
    import sys

    import httpx

    f = write_jsonl(
        tmp_path / "p.jsonl",
        [rec(f"2503.{i:05d}", title=f"Paper number {i} on graphs") for i in range(1, 40)],
    )
    port = _closed_port()
    data = tmp_path / "data"
    env = {**os.environ, "PAPERFEED_EMBEDDING_BACKEND": "fake", "PAPERFEED_KEYWORD_ENGINE": "fts5"}
    cmd = [
        sys.executable,
        "-m",
        "paperfeed",
        "--data-dir",
        str(data),
        "run",
        "--offline",
        "--import",
        str(f),
        "--port",
        str(port),
    ]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 60
        page = None
        while time.monotonic() < deadline:
            try:
                page = httpx.get(f"http://127.0.0.1:{port}/papers/2503.00007", timeout=2)
                break
            except httpx.TransportError:
                time.sleep(0.2)
        assert page is not None, "the server never answered"
        assert page.status_code == 200
        assert "Paper number 7 on graphs" in page.text
        deadline = time.monotonic() + 180  # the indexer runs at low priority: slow on a busy machine
        while time.monotonic() < deadline and not (data / "vectors" / "manifest.json").exists():
            time.sleep(0.2)
        assert (data / "vectors" / "manifest.json").exists(), "the background indexer built no vector index"
    finally:
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=30)
    assert proc.returncode == 0, out.decode()
    assert b"Traceback" not in out
