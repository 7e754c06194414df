"""``paperfeed library export --with-references`` on SQLite and PostgreSQL: a tag's papers and every
work they cite, each once, as BibTeX that parses back with unique keys."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from bibtexparser.entrypoint import parse_string
from fastapi.testclient import TestClient
from sqlalchemy import insert
from typer.testing import CliRunner

from paperfeed.adapters.store.schema_accounts import users
from paperfeed.bootstrap import App, build_app
from paperfeed.cli import cli_app as cli
from paperfeed.domain.ingest import Batch
from paperfeed.domain.models import Paper
from paperfeed.domain.paper_graph import WorkRef
from paperfeed.settings import Settings
from paperfeed.web import create_app
from paperfeed.web.security import SESSION_COOKIE
from tests.support.papers import paper as make_paper

from .conftest import HARVESTED, cite, links

A, B, C = "2401.00001", "2402.00002", "2403.00003"


def paper(pid: str, title: str, author: str) -> Paper:
    return make_paper(pid, title, day="2024-01-02", updated=True, abstract="An abstract.", authors=(author,))


@pytest.fixture
def app(db_url: str, tmp_path: Path) -> Iterator[App]:
    built = build_app(Settings(data_dir=tmp_path / "data", database_url=db_url, embedding_backend="fake"))
    try:
        built.core.store.apply_batch(
            Batch(
                papers=[
                    paper(A, "Sparse attention", "Ada Lovelace"),
                    paper(B, "Dense attention", "Alan Turing"),
                    paper(C, "Graph networks", "Grace Hopper"),
                ]
            )
        )
        with built.core.store.engine.begin() as conn:
            key = conn.execute(
                insert(users).values(email="ada@example.org", display_name="Ada", created_at=HARVESTED)
            ).inserted_primary_key
        assert key is not None
        built.readers.library.save(int(key[0]), A, ["Thesis"])
        built.readers.library.save(int(key[0]), B, ["Thesis"])
        outside = [
            WorkRef(key="doi:10.1/deep", title="Deep nets & friends", year=2017, doi="10.1/DEEP"),
            WorkRef(key="1706.03762", title="Attention Is All You Need", year=2017, arxiv_id="1706.03762"),
            WorkRef(key="s2:" + "ab" * 20, title="A workshop talk"),
        ]
        edges = [cite(A, B), cite(A, C), cite(A, "doi:10.1/deep"), cite(A, "1706.03762")]
        edges += [cite(B, "doi:10.1/deep"), cite(B, "s2:" + "ab" * 20), cite(C, A)]
        built.catalogue.citations.save_links([links(A, edges, works=outside)], harvested_at=HARVESTED)
        yield built
    finally:
        built.close()


def _env(app: App) -> dict[str, str | None]:
    return {
        "PAPERFEED_DATA_DIR": str(app.settings.data_dir),
        "PAPERFEED_DATABASE_URL": app.settings.database_url,
        "PAPERFEED_EMBEDDING_BACKEND": "fake",
    }


def test_export_with_references_writes_each_work_once(app: App, tmp_path: Path) -> None:
    out = tmp_path / "thesis.bib"
    args = ["library", "export", "--user", "ada@example.org", "--tag", "Thesis", "--with-references"]
    result = CliRunner().invoke(cli, [*args, "-o", str(out)], env=_env(app))
    assert result.exit_code == 0, result.output
    assert "wrote 2 papers and 4 references" in " ".join(result.output.split())
    library = parse_string(out.read_text())
    assert not library.failed_blocks
    entries = {e.key: e for e in library.entries}
    assert len(entries) == len(library.entries) == 6  # A, B, then C, the DOI, the arXiv id, the s2 work
    by_title = {e["title"].strip("{}"): e for e in library.entries}
    assert set(by_title) == {
        "Sparse attention",
        "Dense attention",
        "Graph networks",  # a paper of the store: written from the store, with its author
        "Deep nets \\& friends",  # cited by both papers: once
        "Attention Is All You Need",
        "A workshop talk",
    }
    assert by_title["Graph networks"]["author"] == "Grace Hopper"
    assert by_title["Deep nets \\& friends"]["doi"] == "10.1/DEEP"
    assert by_title["Attention Is All You Need"]["eprint"] == "1706.03762"
    assert [e["title"].strip("{}") for e in library.entries][:2] == ["Dense attention", "Sparse attention"]

    plain = CliRunner().invoke(cli, args[:-1], env=_env(app))
    assert plain.exit_code == 0, plain.output
    assert plain.stdout.count("@misc{") == 2  # without the option: the papers only, as before


def test_with_references_needs_bibtex(app: App) -> None:
    args = ["library", "export", "--user", "ada@example.org", "--format", "ids", "--with-references"]
    result = CliRunner().invoke(cli, args, env=_env(app))
    assert result.exit_code != 0
    assert "--with-references needs --format bibtex" in result.output


def test_the_web_and_the_api_export_a_tag_with_its_references(app: App) -> None:
    ada = app.readers.accounts.user_by_email("ada@example.org")
    token = {"authorization": f"Bearer {app.readers.accounts.create_api_token(ada, 'tests')[1]}"}
    with TestClient(create_app(lambda: app)) as client:
        answer = client.get("/api/me/library/export?format=bibtex&references=true", headers=token)
        assert answer.status_code == 200, answer.text
        assert answer.headers["content-type"].startswith("application/x-bibtex")
        assert "with-references" in answer.headers["content-disposition"]
        library = parse_string(answer.text)
        assert not library.failed_blocks
        assert len(library.entries) == len({e.key for e in library.entries}) == 6
        refused = client.get("/api/me/library/export?format=ris&references=true", headers=token)
        assert refused.status_code == 400
        assert "format=bibtex" in refused.text
        client.cookies.set(SESSION_COOKIE, app.readers.accounts.create_session(ada).session)
        page = client.get("/library", headers={"accept": "text/html"})
        assert "/library/export?format=bibtex&amp;references=true" in page.text
        download = client.get("/library/export?format=bibtex&references=true")
        assert download.status_code == 200
        assert download.text.count("@misc{") == 6
