"""A tiny real corpus and one real adaptation run, shared by the module's tests (training costs seconds)."""

from __future__ import annotations

import gzip
from collections.abc import Sequence
from pathlib import Path

import orjson
from typer.testing import CliRunner

from paperfeed.cli import cli_app

# Small enough to train in seconds on one CPU thread, real enough to mean something: the real model.
TRAIN_OPTIONS = ["--epochs", "1", "--batch-size", "8", "--max-seq-length", "32", "--threads", "1"]
EVAL_OPTIONS = ["--save-steps", "2", "--distractors", "40"]


def real_papers(shared_dir: Path, n: int) -> list[bytes]:
    """``n`` real arXiv records (2007-2017 OAI sample) with short abstracts, from several archives."""
    lines: list[bytes] = []
    with gzip.open(shared_dir / "data" / "arxiv_oai_2007_2017_sample100k.jsonl.gz", "rb") as f:
        for line in f:
            rec = orjson.loads(line)
            if rec.get("abstract") and rec.get("categories") and len(rec["abstract"]) < 700:
                lines.append(line.rstrip(b"\n"))
                if len(lines) == n:
                    break
    return lines


def make_instance(root: Path, shared_dir: Path, n: int) -> Path:
    """A data dir whose store holds ``n`` real papers, imported through the CLI."""
    data = root / "data"
    data.mkdir(parents=True)
    source = root / "papers.jsonl"
    source.write_bytes(b"\n".join(real_papers(shared_dir, n)) + b"\n")
    if n:
        result = run(data, "import", str(source))
        assert result[0] == 0, result
    return data


def run(data: Path, *args: str, **env: str) -> tuple[int, str, str]:
    """The real CLI in-process: exit code, stdout and stderr with whitespace collapsed."""
    result = CliRunner().invoke(
        cli_app, ["--data-dir", str(data), *args], env={"PAPERFEED_EMBEDDING_BACKEND": "torch", **env}
    )
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, " ".join(result.stdout.split()), " ".join(result.stderr.split())


class StoredLinks:
    """A stored graph of a few edges for the pair sources (the SQL adapter's own read, ``links_among``,
    is tested in tests/citations/test_read.py)."""

    def __init__(self, edges: list[tuple[str, str]]) -> None:
        self.edges = edges

    def links_among(self, paper_ids: Sequence[str]) -> list[tuple[str, str]]:
        wanted = set(paper_ids)
        return [(a, b) for a, b in self.edges if a in wanted and b in wanted]
