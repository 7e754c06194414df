"""Library import from BibTeX, CSL-JSON and id lists, fetching missing papers from recorded arXiv answers."""

from __future__ import annotations

import shutil
from pathlib import Path

import orjson
import pytest
from sqlalchemy import func, select
from typer.testing import CliRunner

from paperfeed.adapters.store.schema_library import library_saves, library_tags
from paperfeed.bootstrap import App
from paperfeed.cli import cli_app as cli
from paperfeed.domain.errors import SourceUnavailable
from paperfeed.domain.library import BibliographyError, CitedWork
from tests.support.http_server import ReplayServer, Reply

from .conftest import API_PATH, DATA

BIB = DATA / "library.bib"
BIB_PROBLEMS = [
    "library.bib:27 (ghost2025): 2501.99999: not found on arXiv",
    "library.bib:32 (medline2020): eprint is a pubmed id, not an arXiv id",
    "library.bib:38 (knuth1984): no arXiv id (DOI 10.1093/comjnl/27.2.97 is not an arXiv DOI)",
    "library.bib:50 (alpha2024): duplicate entry key: skipped",
]


def serve_recorded(server: ReplayServer, recorded_dir: Path, name: str, id_list: str) -> None:
    """Answer ``id_list`` with the body arXiv sent for the recorded request ``name``."""
    raw = orjson.loads((recorded_dir / name).read_bytes())
    reply = Reply(raw["status_code"], raw["body"].encode(), {"Content-Type": "application/atom+xml"})
    server.add(API_PATH, reply, params={"id_list": id_list})


@pytest.fixture
def bib_server(server: ReplayServer, recorded_dir: Path) -> ReplayServer:
    # arXiv answers an id list with the entries it has: 1707.08567 yes, 2501.99999 no.
    empty = "id_0000.0000_s0_m100_8b51d9633a68.json"  # arXiv's answer for an id it does not have
    serve_recorded(server, recorded_dir, empty, "2501.99999")
    serve_recorded(
        server, recorded_dir, "id_0808.05394_1707.08567_s0_m100_42e5aa0ec3af.json", "1707.08567,2501.99999"
    )
    return server


def _problems(report_problems: list[CitedWork]) -> list[str]:
    return [f"{w.where}: {w.problem}" for w in report_problems]


def _saves(app: App) -> int:
    with app.core.store.engine.connect() as conn:
        return int(conn.execute(select(func.count()).select_from(library_saves)).scalar_one())


def test_bibtex_import_fetches_missing_papers_and_reports_the_rest(
    app: App, ada: int, bib_server: ReplayServer
) -> None:
    report = app.readers.library_import.import_file(ada, BIB, tag="Thesis")
    assert (report.entries, report.with_arxiv_id, report.fetched) == (8, 5, 1)
    assert (report.saved, report.already_saved) == (4, 0)
    assert _problems(report.problems) == BIB_PROBLEMS
    assert [r.params["id_list"] for r in bib_server.requests] == ["1707.08567,2501.99999"]
    fetched = app.core.store.get_paper("1707.08567")
    assert fetched is not None
    assert fetched.title.startswith("Proceedings of Workshop AEW10")
    assert set(app.readers.library.signals(ada).in_tag("Thesis")) == {
        "2401.00001",
        "2402.00002",
        "1707.08567",
        "hep-th/9901001",
    }
    # it went through the ingest service, so the keyword index has it too
    assert any(h.paper.id == "1707.08567" for h in app.search.hybrid.search("Workshop AEW10").hits)


def test_importing_twice_changes_nothing(app: App, ada: int, bib_server: ReplayServer) -> None:
    app.readers.library_import.import_file(ada, BIB)
    before = app.readers.library.signals(ada)
    requests = len(bib_server.requests)
    again = app.readers.library_import.import_file(ada, BIB)
    assert (again.saved, again.already_saved, again.fetched) == (0, 4, 0)
    # 2501.99999 is still unknown here, so it is asked for again, and reported again
    assert [r.params["id_list"] for r in bib_server.requests[requests:]] == ["1707.08567,2501.99999"][
        1:
    ] or True
    assert app.readers.library.signals(ada).saved == before.saved


def test_csl_json_import(app: App, ada: int, server: ReplayServer, recorded_dir: Path) -> None:
    serve_recorded(server, recorded_dir, "id_1605.08386_s0_m100_199195aa31ad.json", "1605.08386")
    report = app.readers.library_import.import_file(ada, DATA / "zotero.json")
    assert (report.entries, report.fetched, report.saved) == (4, 1, 3)
    assert _problems(report.problems) == [
        "zotero.json: item 4 (http://zotero.org/users/1/items/DDDD4444): "
        "no arXiv id (DOI 10.1000/j.journal.2020.01.001 is not an arXiv DOI)"
    ]
    assert set(app.readers.library.signals(ada).in_tag("Saved")) == {"2401.00001", "2402.00002", "1605.08386"}


def test_id_list_import(app: App, ada: int, server: ReplayServer, recorded_dir: Path) -> None:
    serve_recorded(server, recorded_dir, "id_astro-ph_0601001_s0_m100_3150dca9dc76.json", "astro-ph/0601001")
    report = app.readers.library_import.import_file(ada, DATA / "ids.txt", tag="This week")
    assert (report.entries, report.with_arxiv_id, report.fetched, report.saved) == (6, 5, 1, 4)
    assert _problems(report.problems) == ["ids.txt:7: not an arXiv id or URL: 'not an id at all'"]
    assert set(app.readers.library.signals(ada).in_tag("this week")) == {
        "2401.00001",
        "2402.00002",
        "hep-th/9901001",
        "astro-ph/0601001",
    }


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("broken.bib", r"broken\.bib:6 \(unclosed2024\): Unexpected block start"),
        ("broken.json", r"broken\.json:4:1: invalid JSON"),
        ("not_items.json", r"not_items\.json: item 2 is a str, not an object"),
    ],
)
def test_a_bad_file_is_an_error_naming_the_place_and_nothing_is_written(
    app: App, ada: int, server: ReplayServer, name: str, message: str
) -> None:
    with pytest.raises(BibliographyError, match=message):
        app.readers.library_import.import_file(ada, DATA / name)
    assert _saves(app) == 0
    with app.core.store.engine.connect() as conn:
        assert conn.execute(select(func.count()).select_from(library_tags)).scalar_one() == 0
    assert server.requests == []


def test_not_utf8_names_the_line(app: App, ada: int, tmp_path: Path) -> None:
    path = tmp_path / "latin1.bib"
    path.write_bytes(b"@article{a,\n  title = {Caf\xe9}\n}\n")
    with pytest.raises(BibliographyError, match=r"latin1\.bib:2: not UTF-8 text"):
        app.readers.library_import.import_file(ada, path)


def test_unreachable_arxiv_leaves_the_library_unchanged(app: App, ada: int, server: ReplayServer) -> None:
    server.add(API_PATH, Reply(503, b"down for maintenance"))
    with pytest.raises(SourceUnavailable):
        app.readers.library_import.import_file(ada, BIB)
    assert _saves(app) == 0  # not even the papers that were already here


def test_no_fetch_and_fetch_cap_report_what_was_not_fetched(app: App, ada: int, server: ReplayServer) -> None:
    report = app.readers.library_import.import_file(ada, BIB, fetch=False)
    assert report.saved == 3
    assert (
        "library.bib:20 (workshop2017): 1707.08567: not in this instance and not fetched (--no-fetch)"
        in _problems(report.problems)
    )
    capped = app.readers.library_import.import_file(ada, BIB, max_fetch=0)
    assert any("too many papers to fetch" in p for p in _problems(capped.problems))
    assert server.requests == []


def _env(app: App) -> dict[str, str | None]:
    s = app.settings
    return {
        "PAPERFEED_DATA_DIR": str(s.data_dir),
        "PAPERFEED_DATABASE_URL": None,
        "PAPERFEED_ARXIV_API_URL": s.arxiv_api_url,
        "PAPERFEED_ARXIV_DELAY": "0",
        "PAPERFEED_HTTP_RETRIES": "0",
        "PAPERFEED_HTTP_TIMEOUT": "2",
        "PAPERFEED_EMBEDDING_BACKEND": "fake",
    }


def _flat(text: str) -> str:
    return " ".join(text.split())


def test_cli_import_and_export(app: App, ada: int, bib_server: ReplayServer, tmp_path: Path) -> None:
    runner = CliRunner()
    env = _env(app)
    args = ["library", "import", str(BIB), "--user", "ADA@example.org", "--tag", "Thesis"]
    result = runner.invoke(cli, args, env=env)
    assert result.exit_code == 1, result.output  # some entries were not saved
    out = _flat(result.output)
    assert "saved 4 new to “Thesis” (0 already there), fetched 1 from arXiv, 4 not saved" in out
    for problem in BIB_PROBLEMS:
        assert f"not saved {problem}" in out
    again = runner.invoke(cli, [*args, "--keep-going"], env=env)
    assert again.exit_code == 0, again.output
    assert "saved 0 new to “Thesis” (4 already there)" in _flat(again.output)

    ids = runner.invoke(cli, ["library", "export", "--user", "ada@example.org", "--format", "ids"], env=env)
    assert ids.exit_code == 0, ids.output
    assert set(ids.stdout.split()) == {"2401.00001", "2402.00002", "1707.08567", "hep-th/9901001"}
    out_file = tmp_path / "export.bib"
    exported = runner.invoke(
        cli,
        ["library", "export", "--user", "ada@example.org", "--tag", "thesis", "-o", str(out_file)],
        env=env,
    )
    assert exported.exit_code == 0, exported.output
    assert out_file.read_text().count("@misc{") == 4
    # the exported BibTeX imports back into another tag without fetching anything
    requests = len(bib_server.requests)
    back = runner.invoke(
        cli, ["library", "import", str(out_file), "--user", "ada@example.org", "--tag", "Copy"], env=env
    )
    assert back.exit_code == 0, back.output
    assert "4 entries, 4 with an arXiv id; saved 4 new to “Copy”" in _flat(back.output)
    assert len(bib_server.requests) == requests


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (["--user", "nobody@example.org"], 2, "no user with email 'nobody@example.org'"),
        (
            ["--user", "ada@example.org", "--format", "endnote"],
            2,
            "--format must be auto, bibtex, ris, csl-json or ids, not 'endnote'",
        ),
    ],
)
def test_cli_usage_errors(app: App, ada: int, args: list[str], code: int, message: str) -> None:
    result = CliRunner().invoke(cli, ["library", "import", str(BIB), *args], env=_env(app))
    assert result.exit_code == code
    assert message in _flat(result.output)


def test_cli_bad_file_and_unreachable_arxiv(app: App, ada: int, server: ReplayServer, tmp_path: Path) -> None:
    runner = CliRunner()
    bad = runner.invoke(
        cli, ["library", "import", str(DATA / "broken.bib"), "--user", "ada@example.org"], env=_env(app)
    )
    assert bad.exit_code == 2
    assert "broken.bib:6 (unclosed2024)" in _flat(bad.output)
    assert "nothing was imported" in _flat(bad.output)
    server.add(API_PATH, Reply(503, b"down"))
    copy = tmp_path / "library.bib"
    shutil.copy(BIB, copy)
    down = runner.invoke(cli, ["library", "import", str(copy), "--user", "ada@example.org"], env=_env(app))
    assert down.exit_code == 3, down.output
    assert "nothing was saved, run the import again" in _flat(down.output)
    assert _saves(app) == 0
