"""``paperfeed search`` / ``similar --format json|jsonl|csv|bibtex|table``: each parses with a real reader."""

from __future__ import annotations

import csv
import io
import os
import sys
from pathlib import Path

import orjson
import pytest
from bibtexparser.entrypoint import parse_string as parse_bibtex
from typer.testing import CliRunner, Result

from paperfeed.cli import cli_app
from paperfeed.cli.formats import CSV_FIELDS
from tests.importing.conftest import rec, write_jsonl
from tests.support.terminal import OnTerminal, run_on_terminal

ENV = {"PAPERFEED_EMBEDDING_BACKEND": "fake"}  # no vectors stored: keyword search, as on a fresh store
PAPERS = [
    rec(
        "2503.00001",
        title='Quokka counting, with "quotes", commas and a {brace}',
        abstract="Quokka populations on islands, counted by drones.",
        authors=["Lovelace, Ada", "Grace Hopper"],
        categories=["cs.CV", "q-bio.PE"],
    ),
    rec("2503.00002", title="Quokka habitats", abstract="Where the quokka lives.", authors=["Ada Lovelace"]),
    rec(
        "2503.00003",
        title="Quokka habitats revisited",
        abstract="Quokka homes again.",
        authors=["Ada Lovelace"],
    ),
    rec("2503.00004", title="Numbat diets", abstract="Termites, mostly.", authors=["Alan Turing"]),
]
QUOKKAS = {"2503.00001", "2503.00002", "2503.00003"}


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("formats")
    source = write_jsonl(folder / "papers.jsonl", PAPERS)
    result = _run(folder / "data", "import", str(source))
    assert result.exit_code == 0, result.output
    return folder / "data"


def _run(data: Path, *args: str) -> Result:
    return CliRunner().invoke(cli_app, ["--data-dir", str(data), *args], env=ENV)


COMMANDS = {"search": ["search", "quokka"], "similar": ["similar", "2503.00002"]}


def _ids(command: str) -> set[str]:
    return QUOKKAS if command == "search" else QUOKKAS - {"2503.00002"}


@pytest.mark.parametrize("command", COMMANDS)
def test_jsonl_is_one_object_per_line_and_json_is_one_array(data: Path, command: str) -> None:
    lines = _run(data, *COMMANDS[command], "--format", "jsonl")
    assert lines.exit_code == 0, lines.output
    rows = [orjson.loads(line) for line in lines.stdout.splitlines()]
    assert {r["id"] for r in rows} == _ids(command)
    assert [r["rank"] for r in rows] == list(range(1, len(rows) + 1))
    assert all(isinstance(r["authors"], list) and isinstance(r["score"], float) for r in rows)
    legacy = _run(data, *COMMANDS[command], "--json")  # --json is --format jsonl, byte for byte
    assert legacy.exit_code == 0
    assert legacy.stdout == lines.stdout
    whole = _run(data, *COMMANDS[command], "--format", "json")
    assert whole.exit_code == 0
    assert whole.stdout.count("\n") == 1
    assert orjson.loads(whole.stdout) == rows


@pytest.mark.parametrize("command", COMMANDS)
def test_csv_parses_with_the_csv_module(data: Path, command: str) -> None:
    result = _run(data, *COMMANDS[command], "--format", "csv")
    assert result.exit_code == 0, result.output
    reader = csv.DictReader(io.StringIO(result.stdout))
    assert tuple(reader.fieldnames or ()) == CSV_FIELDS
    rows = list(reader)
    assert {r["id"] for r in rows} == _ids(command)
    if command == "search":
        first = next(r for r in rows if r["id"] == "2503.00001")
        assert first["title"] == PAPERS[0]["title"]  # quotes and commas survive
        assert first["authors"] == "Lovelace, Ada; Grace Hopper"
        assert first["categories"] == "cs.CV q-bio.PE"


@pytest.mark.parametrize("command", COMMANDS)
def test_bibtex_parses_one_misc_entry_per_result_with_unique_keys(data: Path, command: str) -> None:
    result = _run(data, *COMMANDS[command], "--format", "bibtex")
    assert result.exit_code == 0, result.output
    library = parse_bibtex(result.stdout)
    assert library.failed_blocks == []
    assert {e.entry_type for e in library.entries} == {"misc"}
    assert {e["eprint"] for e in library.entries} == _ids(command)
    keys = [e.key for e in library.entries]
    assert len(keys) == len(set(keys))
    if command == "search":  # 00002 and 00003 make the same key: the second gets a letter
        assert {"lovelace2025quokka", "lovelace2025quokkab"} <= set(keys)


def test_in_a_pipe_each_result_is_one_line_with_columns_as_wide_as_their_content(data: Path) -> None:
    """Piped (``| head``, ``| grep``), the default is one line per result, not an 80-column table whose
    rows wrapped into ~18 lines with a 16-character id column for 10-character ids (issue #40 item 11;
    the table was the default everywhere before). The title line goes to stderr: stdout is results."""
    piped = _run(data, "search", "quokka")
    assert piped.exit_code == 0, piped.output
    lines = piped.stdout.splitlines()
    assert len(lines) == 3, piped.stdout
    assert lines[0] == "1  2503.00002  2025-03-18  Quokka habitats"  # no upvotes known: no column for them
    assert lines[2] == '3  2503.00001  2025-03-18  Quokka counting, with "quotes", commas and a {brace}'
    assert "quokka  (1–3 of 3)" in piped.stderr
    assert _run(data, "search", "quokka", "--format", "lines").stdout == piped.stdout
    similar = _run(data, "similar", "2503.00002")
    assert similar.exit_code == 0, similar.output
    assert {line.split()[1] for line in similar.stdout.splitlines()} == _ids("similar")
    assert "similar to 2503.00002" in similar.stderr


def test_a_table_when_asked_for_and_a_bad_combination_is_refused(data: Path) -> None:
    table = _run(data, "search", "quokka", "--format", "table")
    assert table.exit_code == 0
    assert "Quokka habitats" in table.stdout
    assert "of 3" in table.stdout
    assert "│ 2503.00002 │" in table.stdout  # the id column as wide as the ids
    clash = _run(data, "search", "quokka", "--json", "--format", "csv")
    assert clash.exit_code == 2
    assert "--json means --format jsonl" in clash.output
    unknown = _run(data, "search", "quokka", "--format", "xml")
    assert unknown.exit_code == 2
    assert "xml" in unknown.output


def _on_terminal(data: Path, columns: int, *args: str) -> OnTerminal:
    command = [sys.executable, "-m", "paperfeed", "--data-dir", str(data), *args]
    return run_on_terminal(command, columns=columns, env={**os.environ, **ENV})


def test_on_a_wide_terminal_a_table_sized_to_its_content(data: Path) -> None:
    shown = _on_terminal(data, 120, "search", "quokka")
    assert shown.code == 0, shown.stderr
    rows = shown.text.splitlines()
    assert max(len(r) for r in rows) <= 120
    assert any("│ 2503.00002 │" in r for r in rows), shown.text  # not a 16-character id column
    assert any("│ 2025-03-18 │" in r for r in rows)
    assert "upvotes" not in shown.text  # none known: no column for them
    assert "of 3" in shown.text


def test_on_a_narrow_terminal_one_line_per_result_cut_to_its_width(data: Path) -> None:
    shown = _on_terminal(data, 50, "search", "quokka")
    assert shown.code == 0, shown.stderr
    rows = [r for r in shown.text.splitlines() if r.strip()]
    assert len(rows) == 3, shown.text
    assert all(len(r) <= 50 for r in rows)
    assert rows[0] == "1  2503.00002  2025-03-18  Quokka habitats"
    assert rows[2].startswith("3  2503.00001  2025-03-18  Quokka counting")
    assert rows[2].endswith("…")


def test_no_results_print_nothing_but_the_csv_header(data: Path) -> None:
    assert _run(data, "search", "wombat", "--format", "jsonl").stdout == ""
    assert _run(data, "search", "wombat", "--format", "json").stdout.strip() == "[]"
    assert _run(data, "search", "wombat", "--format", "bibtex").stdout == ""
    assert _run(data, "search", "wombat", "--format", "csv").stdout.strip() == ",".join(CSV_FIELDS)


FORMULAS = [
    rec(
        "2503.00101",
        title='=HYPERLINK("http://evil.example","Platypus")',
        authors=["@SUM(1+1)*cmd|' /C calc'!A0"],
    ),
    rec("2503.00102", title="+Platypus gains", abstract="-2+3 platypus", authors=["-Ada Lovelace"]),
    rec("2503.00103", title="\t=platypus tab", authors=["\r=platypus return"]),
    rec("2503.00104", title="Platypus, plainly", authors=["Plain Name"]),
]


def test_csv_cells_a_spreadsheet_would_run_as_formulas_start_with_a_quote(tmp_path: Path) -> None:
    """OWASP CSV injection: a title or name from an imported paper starting with = + - @ (or a tab or
    carriage return before one) is written with a leading ' so a spreadsheet shows it as text."""
    source = write_jsonl(tmp_path / "papers.jsonl", FORMULAS)
    assert _run(tmp_path / "data", "import", str(source)).exit_code == 0
    result = _run(tmp_path / "data", "search", "platypus", "--format", "csv")
    assert result.exit_code == 0, result.output
    rows = {r["id"]: r for r in csv.DictReader(io.StringIO(result.stdout))}
    assert set(rows) == {p["id"] for p in FORMULAS}
    assert rows["2503.00101"]["title"] == '\'=HYPERLINK("http://evil.example","Platypus")'
    assert rows["2503.00101"]["authors"] == "'@SUM(1+1)*cmd|' /C calc'!A0"
    assert rows["2503.00102"]["title"] == "'+Platypus gains"
    assert rows["2503.00102"]["abstract"] == "'-2+3 platypus"
    assert rows["2503.00102"]["authors"] == "'-Ada Lovelace"
    assert rows["2503.00103"]["title"].startswith("'")
    assert rows["2503.00103"]["authors"].startswith("'")
    assert rows["2503.00104"]["title"] == "Platypus, plainly"  # nothing else changes
    for row in rows.values():
        for field in CSV_FIELDS:
            assert not row[field].startswith(("=", "+", "-", "@", "\t", "\r")), (field, row[field])
        float(row["score"])  # numbers stay numbers
