"""``paperfeed citations import`` in-process (the real typer app) on SQLite and PostgreSQL: what it prints,
its exit codes (0 done, 1 lines rejected, 2 bad usage or a file it cannot read: nothing imported), every
reject with ``file:line`` and reason."""

from __future__ import annotations

import gzip
from collections.abc import Callable
from pathlib import Path

import orjson
import pytest
from typer.testing import CliRunner, Result

from paperfeed.adapters.store import open_store
from paperfeed.cli import cli_app as app

from .conftest import edge_rows, write_lines

Invoke = Callable[..., Result]


@pytest.fixture
def cli(db_url: str, tmp_path: Path) -> Invoke:
    def invoke(*args: str) -> Result:
        return CliRunner().invoke(
            app,
            ["--data-dir", str(tmp_path / "data"), "--database-url", db_url, "citations", "import", *args],
            catch_exceptions=False,
        )

    return invoke


def test_a_clean_file_then_the_same_file_again(cli: Invoke, db_url: str, tmp_path: Path) -> None:
    f = write_lines(
        tmp_path / "edges.tsv.gz",
        ["citing_id\tcited_id", "2401.00001\t2312.00002v2", "2401.00001\t10.1000/X"],
        gz=True,
    )
    first = cli(str(f))
    assert first.exit_code == 0, first.output
    assert first.stdout.strip() == (
        "edges.tsv.gz (pairs): 2 records read; +2 citation links; 0 already stored that gained this file "
        "as a source; 0 already stored from it; +3 works; 0 self-citations dropped; 0 rejected"
    )
    again = cli(str(f))
    assert again.exit_code == 0
    assert (
        "+0 citation links; 0 already stored that gained this file as a source; 2 already stored from it"
        in again.stdout
    )
    store = open_store(db_url)
    try:
        assert set(edge_rows(store)) == {("2401.00001", "2312.00002"), ("2401.00001", "doi:10.1000/x")}
    finally:
        store.close()


def test_rejects_name_file_and_line_and_exit_1(cli: Invoke, tmp_path: Path) -> None:
    lines = ["2401.00001\t2312.00002"] + [f"2401.00001\tbad-{n}" for n in range(25)] + ["only-one-column"]
    f = write_lines(tmp_path / "edges.tsv", lines)
    out = tmp_path / "rejects.jsonl"
    result = cli(str(f), "--rejects", str(out))
    assert result.exit_code == 1
    assert "+1 citation link" in result.stdout
    assert "26 rejected" in result.stdout
    shown = [x.strip() for x in result.stderr.splitlines() if x.strip().startswith("rejected ")]
    assert len(shown) == 20
    assert shown[0] == f"rejected {f}:2: cited: not an arXiv id or a DOI: 'bad-0'"
    assert "… and 6 more (use --rejects FILE for all)" in result.stderr
    written = [orjson.loads(x) for x in out.read_bytes().splitlines()]
    assert len(written) == 26
    assert written[-1] == {
        "where": f"{f}:27",
        "field": None,
        "reason": "expected two ids (citing, cited) separated by a tab or a comma",
    }
    assert cli(str(f), "--keep-going").exit_code == 0


def test_a_file_that_breaks_off(cli: Invoke, tmp_path: Path) -> None:
    whole = gzip.compress(b"".join(f"2401.00001\t2402.{n:05d}\n".encode() for n in range(1, 30001)))
    cut = tmp_path / "cut.tsv.gz"
    cut.write_bytes(whole[: len(whole) // 2])
    result = cli(str(cut))
    assert result.exit_code == 1
    assert "cut.tsv.gz: the file breaks off after line" in result.stderr
    assert "file unreadable from here" in result.stderr
    assert "Traceback" not in result.output


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda d: d / "missing.tsv", "missing.tsv: no such file; nothing was imported"),
        (lambda d: d, "not a file; nothing was imported"),
        (
            lambda d: write_lines(d / "odd.jsonl", [{"paper": "2401.00001", "refs": []}]),
            "cannot tell the format from the first record (its keys: paper, refs); give --format",
        ),
    ],
)
def test_unreadable_files_are_bad_usage_and_import_nothing(
    cli: Invoke, db_url: str, tmp_path: Path, make: Callable[[Path], Path], message: str
) -> None:
    good = write_lines(tmp_path / "good.tsv", ["2401.00001\t2312.00002"])
    result = cli(str(good), str(make(tmp_path)))
    assert result.exit_code == 2
    assert result.stderr.startswith("error: ")
    assert message in " ".join(result.stderr.split())
    assert "Traceback" not in result.output
    store = open_store(db_url)
    try:
        assert edge_rows(store) == {}  # the good file first in line was not imported either
    finally:
        store.close()


def test_format_option(cli: Invoke, tmp_path: Path) -> None:
    f = write_lines(tmp_path / "pairs.jsonl", [{"citing": "2401.00001", "cited": "2312.00002"}])
    bad = cli(str(f), "--format", "mystery")
    assert bad.exit_code == 2
    assert (
        "--format: expected one of auto, pairs, s2-citations, s2-papers, openalex-works, got 'mystery'"
        in (" ".join(bad.stderr.split()))
    )
    forced = cli(str(f), "--format", "s2-citations")
    assert forced.exit_code == 1
    assert "pairs.jsonl (s2-citations): 1 record read; +0 citation links" in forced.stdout
    assert f"rejected {f}:1: citingcorpusid: missing" in forced.stderr
