"""``paperfeed search`` / ``similar --format json|jsonl|csv|bibtex|table``: each parses with a real reader."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import orjson
import pytest
from bibtexparser.entrypoint import parse_string as parse_bibtex
from typer.testing import CliRunner, Result

from paperfeed.cli import cli_app
from paperfeed.cli.formats import CSV_FIELDS
from tests.importing.conftest import rec, write_jsonl

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


def test_table_is_the_default_and_a_bad_combination_is_refused(data: Path) -> None:
    table = _run(data, "search", "quokka")
    assert table.exit_code == 0
    assert "Quokka habitats" in table.stdout
    assert "of 3" in table.stdout
    assert _run(data, "search", "quokka", "--format", "table").stdout == table.stdout
    clash = _run(data, "search", "quokka", "--json", "--format", "csv")
    assert clash.exit_code == 2
    assert "--json means --format jsonl" in clash.output
    unknown = _run(data, "search", "quokka", "--format", "xml")
    assert unknown.exit_code == 2
    assert "xml" in unknown.output


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
