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
    assert "make run DATA=papers.jsonl.gz" in text
    assert "the store is empty" in text


def test_run_imports_given_files_first(cli: RunCli, tmp_path: Path) -> None:
    f = write_jsonl(tmp_path / "p.jsonl", [rec("2503.00001"), rec("2503.00002")])
    result = cli("run", "--no-serve", "--offline", "--import", str(f))
    assert result.exit_code == 0, result.output
    assert "2 papers in" in result.output
