"""Exporting a library (BibTeX, RIS, CSL-JSON) and importing it back: formats, attacks, round trips,
who may download what."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from paperfeed.adapters.sources.bibliography import parse_bibliography, parse_bibtex, parse_ris
from paperfeed.bootstrap import App, build_app
from paperfeed.cli import cli_app as cli
from paperfeed.domain.ingest import Batch
from paperfeed.domain.library import BibliographyError
from paperfeed.domain.models import Paper
from paperfeed.domain.reference_formats import (
    Reference,
    UnknownExportFormat,
    export_filename,
    export_format,
    render,
    to_bibtex,
    to_csl_json,
    to_ris,
)
from paperfeed.web import create_app
from paperfeed.web.security import SESSION_COOKIE

from .conftest import PAPERS, add_user, make_settings

RUNNER = CliRunner()
HTML = {"accept": "text/html"}
FORMATS = ("bibtex", "ris", "csljson")

ALPHA = replace(
    PAPERS[0], doi="10.48550/arXiv.2401.00001", categories=("cs.LG", "stat.ML"), journal_ref="J. Synth. 1"
)
# A reader's note using what Markdown allows and what could break a file: LaTeX specials, braces, math,
# indentation, trailing spaces (a hard break), lines that look like a RIS tag or a BibTeX entry.
NOTE = (
    "Read _section 3_ & the appendix: 50% of #2 is {important}.\n"
    "Math: $x_1 + y^2$ stays.  \n"
    "\n"
    "  - nested item\n"
    "ER  - \n"
    "TY  - JOUR\n"
    "@misc{evil, title = {injected}}"
)
EVIL_TITLE = "Alpha}\n@misc{evil, title={pwned}}\nER  - \nTY  - JOUR"


def _env(app: App) -> dict[str, str | None]:
    s = app.settings
    return {
        "PAPERFEED_DATA_DIR": str(s.data_dir),
        "PAPERFEED_DATABASE_URL": s.database_url,
        "PAPERFEED_ARXIV_API_URL": s.arxiv_api_url,
        "PAPERFEED_ARXIV_DELAY": "0",
        "PAPERFEED_HTTP_RETRIES": "0",
        "PAPERFEED_HTTP_TIMEOUT": "2",
        "PAPERFEED_EMBEDDING_BACKEND": "fake",
    }


# -- the attacks first: nothing in a value may leave its field -------------------------------------------


def test_a_title_or_note_cannot_add_a_bibtex_entry() -> None:
    paper = replace(ALPHA, title=EVIL_TITLE)
    text = to_bibtex([Reference(paper, ("Tag}, @misc{x",), NOTE)])
    works = parse_bibtex(text, "x.bib")
    assert [w.where for w in works] == ["x.bib:1 (lovelace2024alpha)"]  # one entry, no "evil"
    assert works[0].arxiv_id == "2401.00001"
    assert works[0].note == NOTE  # balanced braces, specials and the "@" line all come back


def test_a_title_or_note_cannot_end_a_ris_record_or_add_a_field() -> None:
    paper = replace(ALPHA, title=EVIL_TITLE, authors=("Ada\nLovelace", "TI  - Injected"))
    text = to_ris([Reference(paper, ("A\nKW  - B",), NOTE), Reference(PAPERS[1])])
    lines = text.splitlines()
    assert sum(line.startswith("TY  - ") for line in lines) == 2
    assert sum(line.startswith("ER  - ") for line in lines) == 2
    assert next(line for line in lines if line.startswith("TI  - ")) == (
        "TI  - Alpha} @misc{evil, title={pwned}} ER - TY - JOUR"
    )
    works = parse_ris(text, "x.ris")
    assert [w.arxiv_id for w in works] == ["2401.00001", "2402.00002"]
    assert works[0].tags == ("A KW - B",)
    assert works[0].note == NOTE


def test_csl_json_carries_any_text_intact() -> None:
    paper = replace(ALPHA, title=EVIL_TITLE)
    items = json.loads(to_csl_json([Reference(paper, ("x, y",), NOTE)]))
    assert items[0]["note"] == "arXiv: 2401.00001\n" + NOTE
    works = parse_bibliography(to_csl_json([Reference(paper, ("Read",), NOTE)]).encode(), "x.json")
    assert works[0].note == NOTE
    assert works[0].tags == ("Read",)


# -- the formats, as reference managers read them ----------------------------------------------------------


def test_bibtex_is_a_zotero_style_misc_entry_with_unique_keys() -> None:
    text = to_bibtex([Reference(ALPHA, ("Reading list", "ML & AI"), "A note"), Reference(ALPHA)])
    first, second = text.split("\n\n")
    assert first.startswith("@misc{lovelace2024alpha,\n")
    assert second.startswith("@misc{lovelace2024alphaa,")
    for field in (
        "eprint        = {2401.00001}",
        "archivePrefix = {arXiv}",
        "primaryClass  = {cs.LG}",
        "url           = {https://arxiv.org/abs/2401.00001}",
        "doi           = {10.48550/arXiv.2401.00001}",
        "keywords      = {Reading list, ML \\& AI}",
        "annote        = {A note}",
    ):
        assert field in first
    assert "keywords" not in second
    assert "annote" not in second


def test_ris_is_a_generic_record_as_zotero_writes_preprints() -> None:
    text = to_ris([Reference(ALPHA, ("Reading list",), "Line one\nline two")])
    assert text.splitlines() == [
        "TY  - GEN",
        "TI  - Alpha: a synthetic paper",
        "AU  - Lovelace, Ada",
        "AU  - Turing, Alan",
        "PY  - 2024",
        "DA  - 2024/01/02",
        "AB  - Alpha: a synthetic paper. A synthetic abstract about graph neural networks and diffusion.",
        "PB  - arXiv",
        "UR  - https://arxiv.org/abs/2401.00001",
        "DO  - 10.48550/arXiv.2401.00001",
        "KW  - Reading list",
        "N1  - Line one",
        "line two",
        "ER  - ",
    ]


def test_csl_json_is_an_arxiv_preprint_as_zotero_expects() -> None:
    [item] = json.loads(to_csl_json([Reference(ALPHA, ("A", "B"), "Mine")]))
    assert item == {
        "id": "lovelace2024alpha",
        "type": "article",
        "title": "Alpha: a synthetic paper",
        "author": [{"family": "Lovelace", "given": "Ada"}, {"family": "Turing", "given": "Alan"}],
        "issued": {"date-parts": [[2024, 1, 2]]},
        "abstract": ALPHA.abstract,
        "URL": "https://arxiv.org/abs/2401.00001",
        "number": "2401.00001",
        "publisher": "arXiv",
        "genre": "Preprint",
        "DOI": "10.48550/arXiv.2401.00001",
        "keyword": "A, B",
        "note": "arXiv: 2401.00001\nMine",
    }


def test_an_empty_export_is_a_valid_empty_file() -> None:
    assert render("bibtex", []) == ""
    assert render("ris", []) == ""
    assert json.loads(render("csljson", [])) == []
    for fmt, name in (("bibtex", "e.bib"), ("ris", "e.ris"), ("csljson", "e.json")):
        assert parse_bibliography(render(fmt, []).encode(), name) == []  # type: ignore[arg-type]


def test_format_names_and_file_names() -> None:
    assert export_format(" CSL-JSON ") == "csljson"
    assert export_format("bib") == "bibtex"
    with pytest.raises(UnknownExportFormat, match="use one of bibtex, ris, csljson"):
        export_format("endnote")
    assert export_filename("paperfeed-Reading list/../é", "ris") == "paperfeed-Reading-list.ris"
    assert export_filename("…", "csljson") == "library.json"


# -- bad RIS: a clear error naming the line, nothing imported ------------------------------------------------


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("TY  - GEN\nTI  - Half\nUR  - https://arxiv.org/abs/2401.00001\n", "x.ris:1: the record starting"),
        ("TY  - GEN\nTI  - A\nER  - \n\nTY  - GEN\nTI  - B\n", "x.ris:5: the record starting here has no"),
        ("TY  - GEN\nTI  - A\nTY  - GEN\nER  - \n", "x.ris:3: a new record starts before the one at line 1"),
        ("Title: not a RIS file\n", "x.ris:1: not RIS"),
        ("TY  - GEN\nER  - \nTI  - stray\n", "x.ris:3: not RIS"),
    ],
)
def test_a_truncated_or_foreign_ris_file_is_an_error_with_its_line(text: str, message: str) -> None:
    with pytest.raises(BibliographyError, match=message.replace("(", r"\(")):
        parse_bibliography(text.encode(), "x.ris")


def test_ris_is_told_by_content_and_imports_nothing_when_broken(app: App, tmp_path: Path) -> None:
    ada = add_user(app, "ada@example.org", "Ada")
    good = to_ris([Reference(PAPERS[0], ("T",))])
    assert parse_bibliography(good.encode(), "download")[0].arxiv_id == "2401.00001"  # by content
    broken = tmp_path / "broken.ris"
    broken.write_text(good + to_ris([Reference(PAPERS[1])])[:40], encoding="utf-8")  # cut mid-record
    with pytest.raises(BibliographyError, match=r"broken\.ris:12: the record starting here has no"):
        app.readers.library_import.import_file(ada, broken, with_tags=True)
    assert app.readers.library.signals(ada).saved == ()
    result = RUNNER.invoke(
        cli, ["library", "import", str(broken), "--user", "ada@example.org"], env=_env(app)
    )
    assert result.exit_code == 2
    assert "broken.ris:12" in result.output
    assert "nothing was imported" in " ".join(result.output.split())


# -- round trips: export, import into an empty library elsewhere, the same papers, tags and notes ----------


def _fill_library(app: App) -> int:
    ada = add_user(app, "ada@example.org", "Ada")
    lib = app.readers.library
    lib.save(ada, "2401.00001", ["Reading list", "ML & AI_1 #x%"])
    lib.save(ada, "2402.00002", ["Ünïcode tag"])
    lib.save(ada, "hep-th/9901001")  # "Saved"
    lib.save(ada, "2403.00003", ["Reading list"])
    lib.set_note(ada, "2401.00001", NOTE)
    lib.set_note(ada, "hep-th/9901001", "Old but *gold*.")
    return ada


def _library_state(app: App, user_id: int) -> set[tuple[str, frozenset[str], str | None]]:
    refs, _ = app.readers.library.references(user_id)
    return {(r.paper.id, frozenset(r.tags), r.note) for r in refs}


@pytest.fixture
def elsewhere(tmp_path: Path) -> Iterator[App]:
    """A second instance on a fresh SQLite store with the same papers and no reader yet."""
    other = build_app(make_settings(tmp_path / "elsewhere"))
    other.core.store.apply_batch(Batch(papers=list(PAPERS)))
    try:
        yield other
    finally:
        other.close()


def _round_trip(source: App, target: App, fmt: str, tmp_path: Path) -> None:
    ada = _fill_library(source)
    out = tmp_path / f"export.{fmt}"
    args = ["library", "export", "--user", "ada@example.org", "--format", fmt, "-o", str(out)]
    exported = RUNNER.invoke(cli, args, env=_env(source))
    assert exported.exit_code == 0, exported.output
    reader = add_user(target, "reader@example.org", "Reader")
    imported = RUNNER.invoke(
        cli,
        ["library", "import", str(out), "--user", "reader@example.org", "--with-tags", "--no-fetch"],
        env=_env(target),
    )
    assert imported.exit_code == 0, imported.output
    said = " ".join(imported.output.split())
    assert "saved 4 new to the file's tags (“Saved” when none) (0 already there)" in said
    assert said.endswith("0 not saved, 2 notes added")
    assert _library_state(target, reader) == _library_state(source, ada)
    assert len(_library_state(target, reader)) == 4
    again = RUNNER.invoke(
        cli, ["library", "import", str(out), "--user", "reader@example.org", "--with-tags"], env=_env(target)
    )
    assert "saved 0 new to the file's tags (“Saved” when none) (4 already there)" in " ".join(
        again.output.split()
    )  # importing again changes nothing


@pytest.mark.parametrize("fmt", FORMATS)
def test_export_then_import_elsewhere_gives_the_same_library(
    app: App, elsewhere: App, fmt: str, tmp_path: Path
) -> None:
    _round_trip(app, elsewhere, fmt, tmp_path)


@pytest.mark.postgres
def test_a_ris_round_trip_into_postgresql(app: App, pg_url: str, tmp_path: Path) -> None:
    settings = make_settings(tmp_path / "pg").model_copy(update={"database_url": pg_url})
    target = build_app(settings)
    try:
        target.core.store.apply_batch(Batch(papers=list(PAPERS)))
        _round_trip(app, target, "ris", tmp_path)
    finally:
        target.close()


def test_without_with_tags_an_import_goes_to_one_tag_and_adds_no_notes(app: App, elsewhere: App) -> None:
    ada = _fill_library(app)
    data = render("ris", app.readers.library.references(ada)[0]).encode()
    reader = add_user(elsewhere, "reader@example.org", "Reader")
    report = elsewhere.readers.library_import.import_bytes(reader, data, "x.ris", tag="Imported", fetch=False)
    assert report.saved == 4
    assert report.notes == 0
    assert {t.name for t in elsewhere.readers.library.tags(reader)} == {"Imported"}


def test_an_import_never_overwrites_a_note(app: App, elsewhere: App) -> None:
    ada = _fill_library(app)
    data = render("bibtex", app.readers.library.references(ada)[0]).encode()
    reader = add_user(elsewhere, "reader@example.org", "Reader")
    elsewhere.readers.library.set_note(reader, "hep-th/9901001", "My own note")
    report = elsewhere.readers.library_import.import_bytes(reader, data, "x.bib", fetch=False, with_tags=True)
    assert report.notes == 1
    assert elsewhere.readers.library.state(reader, "hep-th/9901001").note.body == "My own note"  # type: ignore[union-attr]


# -- the CLI -----------------------------------------------------------------------------------------------


def test_cli_export_of_a_tag_a_search_and_bad_input(app: App, tmp_path: Path) -> None:
    _fill_library(app)
    env = _env(app)
    tag = RUNNER.invoke(
        cli,
        ["library", "export", "--user", "ada@example.org", "--tag", "reading LIST", "--format", "ris"],
        env=env,
    )
    assert tag.exit_code == 0, tag.output
    assert tag.stdout.count("TY  - GEN") == 2
    assert "KW  - ML & AI_1 #x%" in tag.stdout
    search = RUNNER.invoke(
        cli, ["library", "export", "--search", "diffusion", "--format", "csljson"], env=env
    )
    assert search.exit_code == 0, search.output
    titles = {item["title"] for item in json.loads(search.stdout)}
    assert {"Beta diffusion models", "Delta diffusion transformers"} <= titles
    assert all("keyword" not in item for item in json.loads(search.stdout))  # no reader data
    add_user(app, "new@example.org", "New")
    empty = tmp_path / "empty.json"
    none = RUNNER.invoke(
        cli,
        ["library", "export", "--user", "new@example.org", "--format", "csl-json", "-o", str(empty)],
        env=env,
    )
    assert none.exit_code == 0
    assert json.loads(empty.read_text()) == []
    for args, message in (
        (["--user", "ada@example.org", "--tag", "Nope"], "ada@example.org has no tag named 'Nope'"),
        (["--user", "ada@example.org", "--format", "xml"], "--format must be bibtex, ris, csljson or ids"),
        (["--user", "nobody@example.org"], "no user with email 'nobody@example.org'"),
        (["--search", "x", "--tag", "T"], "give it without --user and --tag"),
        ([], "give --user EMAIL"),
    ):
        bad = RUNNER.invoke(cli, ["library", "export", *args], env=env)
        assert bad.exit_code == 2, (args, bad.output)
        assert message in " ".join(bad.output.split()), (args, bad.output)
        assert "Traceback" not in bad.output


# -- the web and the API -----------------------------------------------------------------------------------


@pytest.fixture
def web(app: App) -> Iterator[dict[str, TestClient]]:
    """Clients for ada, bob and an anonymous visitor (with ada's library filled)."""
    ada = _fill_library(app)
    bob = add_user(app, "bob@example.org", "Bob")
    clients: dict[str, TestClient] = {}
    with (
        TestClient(create_app(lambda: build_app(app.settings)), follow_redirects=False) as anonymous,
        TestClient(create_app(lambda: build_app(app.settings)), follow_redirects=False) as as_ada,
        TestClient(create_app(lambda: build_app(app.settings)), follow_redirects=False) as as_bob,
    ):
        for client, user_id in ((as_ada, ada), (as_bob, bob)):
            user = app.readers.accounts.user_by_id(user_id)
            assert user is not None
            client.cookies.set(SESSION_COOKIE, app.readers.accounts.create_session(user).session)
        clients.update(anonymous=anonymous, ada=as_ada, bob=as_bob)
        yield clients


def _tag_id(app: App, name: str) -> int:
    ada = app.readers.library.user_id_for_email("ada@example.org")
    assert ada is not None
    return next(t.id for t in app.readers.library.tags(ada) if t.name == name)


def test_a_private_library_is_exported_only_to_its_owner(app: App, web: dict[str, TestClient]) -> None:
    tag = _tag_id(app, "Reading list")
    own = web["ada"].get(f"/library/export?format=ris&tag={tag}")
    assert own.status_code == 200
    assert own.headers["content-type"] == "application/x-research-info-systems; charset=utf-8"
    assert own.headers["content-disposition"] == 'attachment; filename="paperfeed-Reading-list.ris"'
    assert own.headers["cache-control"] == "no-store"
    assert "N1  - Read _section 3_" in own.text
    assert own.text.count("TY  - GEN") == 2
    private_paths = [
        f"/library/export?tag={tag}",
        f"/api/me/library/export?tag={tag}",
        f"/collections/{tag}/export",
    ]
    for who in ("anonymous", "bob"):
        for path in private_paths:
            got = web[who].get(path, headers=HTML)
            if who == "anonymous" and path.startswith("/library"):
                assert got.status_code == 303, path
                assert got.headers["location"].startswith("/signin"), path
            elif who == "anonymous" and path.startswith("/api/me"):
                assert got.status_code == 401, path
            else:
                assert got.status_code == 404, (who, path)
            assert "section 3" not in got.text
            assert "Alpha" not in got.text
    whole = web["bob"].get("/api/me/library/export?format=csljson")  # bob's own (empty) library
    assert whole.status_code == 200
    assert whole.json() == []
    assert whole.headers["content-type"] == "application/vnd.citationstyles.csl+json; charset=utf-8"


def test_a_public_collection_exports_its_papers_without_the_owners_notes(
    app: App, web: dict[str, TestClient]
) -> None:
    tag = _tag_id(app, "Reading list")
    ada = app.readers.library.user_id_for_email("ada@example.org")
    assert ada is not None
    app.readers.library.update_tag(ada, tag, public=True)
    got = web["anonymous"].get(f"/collections/{tag}/export?format=bibtex")
    assert got.status_code == 200
    assert got.headers["content-type"] == "application/x-bibtex; charset=utf-8"
    assert got.text.count("@misc{") == 2
    assert "keywords      = {Reading list}" in got.text
    assert "annote" not in got.text
    assert "ML" not in got.text
    mine = web["ada"].get(f"/collections/{tag}/export?format=bibtex")
    assert "annote" in mine.text
    assert mine.headers["cache-control"] == "no-store"
    page = web["anonymous"].get(f"/collections/{tag}", headers=HTML)
    assert f'href="/collections/{tag}/export?format=ris"' in page.text


def test_unknown_formats_and_tags_are_clear_errors(app: App, web: dict[str, TestClient]) -> None:
    api = web["ada"].get("/api/me/library/export?format=endnote")
    assert api.status_code == 400
    assert api.json()["error"] == "unknown export format 'endnote': use one of bibtex, ris, csljson"
    page = web["ada"].get("/library/export?format=endnote", headers=HTML)
    assert page.status_code == 400
    assert "use one of bibtex, ris, csljson" in page.text
    assert web["ada"].get("/api/me/library/export?tag=999999").status_code == 404
    assert web["ada"].get("/library/export?tag=999999", headers=HTML).status_code == 404
    assert web["ada"].get("/library/export?tag=abc", headers=HTML).status_code == 404
    assert web["anonymous"].get("/api/papers/search/export?q=x&format=doc").status_code == 400


def test_search_results_download_on_the_page_and_the_api(app: App, web: dict[str, TestClient]) -> None:
    got = web["anonymous"].get("/search/export?q=diffusion&format=ris")
    assert got.status_code == 200
    assert "TI  - Beta diffusion models" in got.text
    assert "KW  -" not in got.text
    assert got.headers["content-disposition"] == 'attachment; filename="paperfeed-search.ris"'
    signed_in = web["ada"].get("/search/export?q=diffusion&format=ris")
    assert "KW  -" not in signed_in.text
    assert "N1  -" not in signed_in.text
    empty = web["anonymous"].get("/search/export?format=csljson")
    assert empty.status_code == 200
    assert empty.json() == []
    api = web["anonymous"].get("/api/papers/search/export?q=diffusion&format=csljson&limit=5")
    assert api.status_code == 200
    assert "Beta diffusion models" in {item["title"] for item in api.json()}
    page = web["anonymous"].get("/search?q=diffusion", headers=HTML)
    assert 'href="/search/export?format=bibtex&amp;q=diffusion"' in page.text
    library = web["ada"].get("/library", headers=HTML)
    assert 'href="/library/export?format=csljson"' in library.text


def test_an_upload_with_tags_restores_them(app: App, web: dict[str, TestClient]) -> None:
    ada = app.readers.library.user_id_for_email("ada@example.org")
    assert ada is not None
    exported = web["ada"].get("/api/me/library/export?format=csljson").content
    bob = app.readers.library.user_id_for_email("bob@example.org")
    assert bob is not None
    token = app.readers.accounts.create_api_token(app.readers.accounts.user_by_id(bob), "tests")[1]  # type: ignore[arg-type]
    got = web["anonymous"].post(
        "/api/me/library/import",
        files={"file": ("library.json", exported, "application/json")},
        data={"with_tags": "true"},
        headers={"authorization": f"Bearer {token}"},
    )
    assert got.status_code == 200, got.text
    assert got.json()["saved"] == 4
    assert got.json()["notesAdded"] == 2
    assert _library_state(app, bob) == _library_state(app, ada)


def test_export_dates_come_from_the_paper() -> None:
    undated = Paper(id="scifact:12", title="No date", authors=("Plato",))
    [item] = json.loads(to_csl_json([Reference(undated)]))
    assert item == {"id": "platono", "type": "article", "title": "No date", "author": [{"literal": "Plato"}]}
    assert "eprint" not in to_bibtex([Reference(undated)])
    dated = replace(ALPHA, published=datetime(2019, 12, 31, 23, 0, tzinfo=UTC))
    assert "DA  - 2019/12/31" in to_ris([Reference(dated)])
