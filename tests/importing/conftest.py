from __future__ import annotations

import gzip
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import orjson
import pytest
from typer.testing import CliRunner, Result

from paperfeed.cli import cli_app as app

RunCli = Callable[..., Result]


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    return tmp_path / "data"


@pytest.fixture
def cli(data_dir: Path) -> RunCli:
    """Run the real ``paperfeed`` CLI in-process on a data folder of its own."""
    runner = CliRunner()

    def run(*args: str, env: dict[str, str] | None = None) -> Result:
        return runner.invoke(app, ["--data-dir", str(data_dir), *args], env=env, catch_exceptions=False)

    return run


def write_jsonl(path: Path, records: Sequence[Any], *, gz: bool = False) -> Path:
    lines = b"".join((r if isinstance(r, bytes) else orjson.dumps(r)) + b"\n" for r in records)
    path.write_bytes(gzip.compress(lines) if gz else lines)
    return path


def rec(pid: str, **kw: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "id": pid,
        "title": f"A study of {pid}",
        "abstract": "We study things.",
        "authors": ["Ada Lovelace"],
        "published": "2025-03-18",
        "categories": ["cs.CL"],
    }
    base.update(kw)
    return base
