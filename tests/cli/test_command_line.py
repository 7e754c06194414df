"""The command line as a new user meets it (#30 item 14), through the real ``paperfeed`` in a subprocess:
search says how much meaning search covers and shows upvotes, an empty query is a usage error, a folder
imports the papers files in it, ``--data-dir`` may follow the command, ``similar --help`` says what the
README says, and ``stats`` tells of vectors and topics."""

from __future__ import annotations

import gzip
import os
import re
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import orjson
import pytest

from paperfeed.adapters.store import open_store
from paperfeed.adapters.store.topics import SqlTopicRecords
from paperfeed.cli import hoist_global_options
from paperfeed.domain.coverage import SearchCoverage
from paperfeed.domain.topics import Topic, TopicAssignment, TopicGeneration
from tests.importing.conftest import rec, write_jsonl

ROOT = Path(__file__).resolve().parents[2]
MODEL = "fake-hash64"  # PAPERFEED_EMBEDDING_BACKEND=fake's model id


def _cli(*args: str, stdin: str = "", **env: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("PAPERFEED_")}
    return subprocess.run(
        [sys.executable, "-m", "paperfeed", *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=180,
        env={**clean, "PAPERFEED_EMBEDDING_BACKEND": "fake", "COLUMNS": "200", **env},
    )


def _papers(tmp_path: Path, n: int = 6) -> Path:
    records = [
        rec(f"2503.{i:05d}", title=f"Graph networks for molecules, part {i}", upvotes=40 + i)
        for i in range(1, n)
    ]
    return write_jsonl(tmp_path / "papers.jsonl", [*records, rec("2503.09999", title="Quokka counts")])


@pytest.fixture
def data(tmp_path: Path) -> Path:
    folder = tmp_path / "data"
    done = _cli("--data-dir", str(folder), "import", str(_papers(tmp_path)))
    assert done.returncode == 0, done.stderr
    return folder


def test_search_shows_the_coverage_note_on_stderr_and_an_upvotes_column(data: Path) -> None:
    done = _cli("--data-dir", str(data), "search", "graph networks", "--format", "jsonl")
    assert done.returncode == 0, done.stderr
    ids = [orjson.loads(line)["id"] for line in done.stdout.splitlines()]  # stdout: results only
    assert "2503.00001" in ids
    web_note = SearchCoverage(0, 6).note()  # what the search page and the API say
    assert web_note is not None
    assert f"note: {web_note}" in done.stderr
    table = _cli("--data-dir", str(data), "search", "graph networks part 3", "--format", "table")
    assert table.returncode == 0, table.stderr
    header = next(line for line in table.stdout.splitlines() if "paper" in line and "date" in line)
    assert "upvotes" in header
    row = next(line for line in table.stdout.splitlines() if "2503.00003" in line)
    assert re.search(r"│\s+43\s+│", row), row
    indexed = _cli("--data-dir", str(data), "index")
    assert indexed.returncode == 0, indexed.stderr
    covered = _cli("--data-dir", str(data), "search", "graph networks", "--format", "jsonl")
    assert covered.returncode == 0
    assert "Meaning search covers" not in covered.stderr  # every paper has its vector now


@pytest.mark.parametrize("query", ["", "   ", "\t"])
def test_an_empty_query_is_a_usage_error(data: Path, query: str) -> None:
    done = _cli("--data-dir", str(data), "search", query)
    assert done.returncode == 2
    assert done.stdout == ""
    assert "the query is empty" in done.stderr
    assert "no results" not in done.stderr


def test_importing_a_folder_imports_the_papers_files_in_it(tmp_path: Path) -> None:
    folder = tmp_path / "papers"
    (folder / "sub").mkdir(parents=True)
    write_jsonl(folder / "a.jsonl", [rec("2503.00001"), rec("2503.00002")])
    write_jsonl(folder / "b.jsonl.gz", [rec("2503.00003")], gz=True)
    (folder / "c.bib").write_text(
        "@misc{x2024,\n  title = {A BibTeX paper},\n  author = {Ada Lovelace},\n  eprint = {2503.00004},\n"
        "  archivePrefix = {arXiv}\n}\n"
    )
    (folder / "d.json.gz").write_bytes(gzip.compress(orjson.dumps(rec("2503.00005")) + b"\n"))
    (folder / "notes.txt").write_text("not papers")
    write_jsonl(folder / "sub" / "e.jsonl", [rec("2503.00006")])  # subfolders are not searched
    data = tmp_path / "data"
    done = _cli("--data-dir", str(data), "import", str(folder))
    assert done.returncode == 0, done.stderr
    assert "importing 4 files" in done.stderr
    stats = orjson.loads(_cli("--data-dir", str(data), "stats", "--json").stdout)
    assert stats["papers"] == 5
    assert set(stats["by_source"]) == {"file:a.jsonl", "file:b.jsonl.gz", "file:c.bib", "file:d.json.gz"}

    (tmp_path / "empty").mkdir()
    empty = _cli("--data-dir", str(data), "import", str(tmp_path / "empty"))
    assert empty.returncode == 2
    assert f"{tmp_path / 'empty'} is a folder without files of papers in it" in empty.stderr
    assert "*.jsonl, *.jsonl.gz, *.json, *.json.gz, *.bib" in empty.stderr
    missing = _cli("--data-dir", str(data), "import", str(tmp_path / "nope.jsonl"))
    assert missing.returncode == 2
    assert "nope.jsonl: no such file or folder" in missing.stderr
    assert "Traceback" not in empty.stderr + missing.stderr


def test_data_dir_may_follow_the_command(tmp_path: Path, data: Path) -> None:
    after = _cli("stats", "--json", "--data-dir", str(data))
    assert after.returncode == 0, after.stderr
    assert orjson.loads(after.stdout)["papers"] == 6
    equals = _cli("search", "quokka", "--data-dir=" + str(data), "-f", "jsonl")
    assert [orjson.loads(line)["id"] for line in equals.stdout.splitlines()] == ["2503.09999"]
    other = tmp_path / "other"
    later_wins = _cli("--data-dir", str(other), "stats", "--json", "--data-dir", str(data))
    assert orjson.loads(later_wins.stdout)["papers"] == 6
    assert not other.exists()
    nested = _cli("users", "list", "--json", "--data-dir", str(data))
    assert nested.returncode == 0, nested.stderr


@pytest.mark.parametrize(
    ("args", "hoisted"),
    [
        (["stats", "--data-dir", "D"], ["--data-dir", "D", "stats"]),
        (["--data-dir", "A", "stats", "--data-dir", "B"], ["--data-dir", "A", "--data-dir", "B", "stats"]),
        (["users", "list", "--database-url=sqlite://"], ["--database-url=sqlite://", "users", "list"]),
        (["search", "--", "--data-dir", "x"], ["search", "--", "--data-dir", "x"]),  # after --: a query
        (["search", "q", "--data-dir"], ["search", "q", "--data-dir"]),  # no value: click says so
        (["--help"], ["--help"]),
        ([], []),
    ],
)
def test_global_options_are_moved_before_the_command(args: list[str], hoisted: list[str]) -> None:
    assert hoist_global_options(args) == hoisted


def test_similar_help_says_what_the_readme_says() -> None:
    readme = (ROOT / "README.md").read_text()
    row = next(line for line in readme.splitlines() if line.startswith("| `paperfeed similar ID`"))
    described = row.split("|")[2].strip()
    found = re.fullmatch(r"the papers most like one paper \((.+)\)", described)
    assert found is not None, described
    method = found.group(1)
    shown = " ".join(_cli("similar", "--help").stdout.split())
    assert method in shown, shown
    listed = " ".join(_cli("--help").stdout.split())  # the root's list starts the same summary
    assert "similar Papers most similar to one paper: its text neighbours" in listed
    assert "a keyword query of its text" not in shown + listed


def test_stats_tells_of_vectors_and_topics(data: Path) -> None:
    before = _cli("--data-dir", str(data), "stats")
    assert before.returncode == 0, before.stderr
    text = " ".join(before.stdout.split())
    assert "with a vector │ none yet" in text
    assert "topics │ none built yet (paperfeed topics build)" in text
    row = orjson.loads(_cli("--data-dir", str(data), "stats", "--json").stdout)
    assert (row["vectors"], row["topics"]) == ({}, None)

    assert _cli("--data-dir", str(data), "index").returncode == 0
    store = open_store(f"sqlite+pysqlite:///{data / 'paperfeed.db'}")
    try:
        built = datetime(2026, 11, 2, 5, 0, tzinfo=UTC)
        fine = [Topic(i, f"topic {i}", ("graph",), 2, (), level=0, parent_id=9) for i in (1, 2, 3)]
        centroids = {t: np.ones(8, dtype=np.float32) / np.sqrt(8) for t in (1, 2, 3, 9)}
        SqlTopicRecords(store.engine).replace(
            TopicGeneration(
                model_id=MODEL,
                method="kmeans k=3 seed=0",
                built_at=built,
                topics=[*fine, Topic(9, "graphs", ("graph",), 6, (), level=1)],
                centroids=centroids,
                assignments=[TopicAssignment(f"2503.{i:05d}", 1 + i % 3, 0.9) for i in range(1, 6)],
                lineage=[],
                weeks={},
                next_id=10,
            )
        )
    finally:
        store.close()
    after = _cli("--data-dir", str(data), "stats")
    text = " ".join(after.stdout.split())
    assert f"with a vector │ 6 of 6 (100%), model {MODEL}" in text
    assert (
        f"topics │ 3 in 1 group, built 2026-11-02 05:00 UTC from 5 papers (kmeans k=3 seed=0, model {MODEL})"
        in (text)
    )
    row = orjson.loads(_cli("--data-dir", str(data), "stats", "--json").stdout)
    assert row["vectors"] == {MODEL: 6}
    assert row["topics"]["topics"] == 3
    assert row["topics"]["papers"] == 5
    assert row["topics"]["built_at"] == "2026-11-02T05:00:00+00:00"
    assert row["papers"] == 6  # the store's counts are still there
