"""Tables printed to a pipe or a file keep each row on one line (issue #40 item 11): rich draws a table
80 columns wide off a terminal, which broke every row of ``paperfeed users list`` or ``stats`` with a long
address or path into several lines of cut cells; ``grep`` then found half a row."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from paperfeed.cli import cli_app
from tests.importing.conftest import rec, write_jsonl

ENV = {"PAPERFEED_EMBEDDING_BACKEND": "fake"}
READERS = [
    ("a.reader.with.a.rather.long.address@laboratory-of-computational-linguistics.example.org", "Ada"),
    ("another.long.address.for.a.reader@department-of-information-retrieval.example.org", "Grace"),
]


def _run(data: Path, *args: str, stdin: str | None = None) -> Result:
    return CliRunner().invoke(cli_app, ["--data-dir", str(data), *args], env=ENV, input=stdin)


@pytest.fixture
def data(tmp_path: Path) -> Path:
    folder = tmp_path / "data"
    name = "a-file-of-papers-with-a-long-name-from-the-lab-archive-2026.jsonl"
    source = write_jsonl(tmp_path / name, [rec(f"2503.{i:05d}") for i in range(1, 4)])
    assert _run(folder, "import", str(source)).exit_code == 0
    for email, who in READERS:
        added = _run(
            folder, "users", "add", email, "--name", who, "--password-stdin", stdin="correct horse 1\n"
        )
        assert added.exit_code == 0, added.output
    return folder


def test_users_list_in_a_pipe_has_one_line_per_account(data: Path) -> None:
    listed = _run(data, "users", "list")
    assert listed.exit_code == 0, listed.output
    for email, who in READERS:
        rows = [line for line in listed.stdout.splitlines() if email in line]
        assert len(rows) == 1, listed.stdout  # the whole address, on the line with the rest of its row
        assert who in rows[0]
        assert "active" in rows[0]


def test_stats_in_a_pipe_keeps_each_row_whole(data: Path) -> None:
    shown = _run(data, "stats")
    assert shown.exit_code == 0, shown.output
    name = "file:a-file-of-papers-with-a-long-name-from-the-lab-archive-2026.jsonl"
    rows = [line for line in shown.stdout.splitlines() if name in line]
    assert len(rows) == 1, shown.stdout
    assert rows[0].split("│")[2].strip() == "3"
