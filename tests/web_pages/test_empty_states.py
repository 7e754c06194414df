"""Empty states that point at the right thing (#40 item 8), on a real store behind the real app.

Before: /topics and /map told a reader to run ``paperfeed topics build`` while the running instance builds
them itself; a search on an instance without a single paper said "No papers match diffusion"; trending
said "The top 0 of 0 papers"; and notices showed Markdown's backticks raw ("run `paperfeed index`").
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime

import lxml.html
import pytest
from fastapi.testclient import TestClient

from paperfeed.bootstrap import App, build_app
from paperfeed.domain.indexing_status import IndexerReport
from paperfeed.services.jobs import Lease, process_identity
from paperfeed.settings import Settings
from paperfeed.web import create_app
from tests.accounts.conftest import load_papers
from tests.topics.conftest import add_papers

HTML = {"accept": "text/html"}


@pytest.fixture
def instance(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[TestClient, App]]:
    settings = Settings(
        data_dir=tmp_path_factory.mktemp("empty") / "data",
        embedding_backend="fake",
        topics_min_papers=10,
        jobs_daily_at="05:30",
    )
    app = build_app(settings)
    try:
        with TestClient(create_app(lambda: build_app(settings)), follow_redirects=False) as client:
            yield client, app
    finally:
        app.close()


def _text(client: TestClient, path: str) -> tuple[str, str]:
    """The page's main text (whitespace folded) and its HTML."""
    got = client.get(path, headers=HTML)
    assert got.status_code == 200, got.text[:300]
    main = lxml.html.fromstring(got.text).cssselect("main")[0]
    assert isinstance(main, lxml.html.HtmlElement)
    return " ".join(main.text_content().split()), got.text


def test_an_instance_without_papers_says_so_instead_of_no_match_or_top_0_of_0(
    instance: tuple[TestClient, App],
) -> None:
    client, _ = instance
    text, _ = _text(client, "/search?q=diffusion")
    assert "This instance has no papers yet" in text
    assert "No papers match" not in text
    text, _ = _text(client, "/trending")
    assert "0 of 0" not in text
    assert "No paper with upvotes or stars was first seen in" in text
    text, _ = _text(client, "/trending?sort=cited")
    assert "0 of 0" not in text


@pytest.mark.parametrize("path", ["/topics", "/map"])
def test_with_nothing_running_the_topics_pages_say_what_builds_them_with_commands_as_code(
    instance: tuple[TestClient, App], path: str
) -> None:
    client, _ = instance
    text, page = _text(client, path)
    assert "Topics need at least 10 papers; this instance has 0 so far." in text
    assert "No indexer or scheduler of this instance is running" in text
    assert "<code>paperfeed run</code>" in page
    assert "`" not in text


@pytest.mark.parametrize("path", ["/topics", "/map"])
def test_the_topics_pages_say_the_running_indexer_builds_them_and_when(
    instance: tuple[TestClient, App], path: str
) -> None:
    client, app = instance
    add_papers(app.core.store, 4, embed=False)  # 12 papers, none embedded yet
    app.indexes.embeddings.report_indexer(
        IndexerReport(process_identity(), "embedding", 0, 12, 0.5, datetime.now(UTC))
    )  # an indexer at work: this very process, so it is alive
    text, _ = _text(client, path + "?as=indexer")  # a query of its own: the page cache keeps pages seconds
    assert "indexer builds the topics by itself: 12 papers still to embed, about 24 s at its pace" in text
    assert "paperfeed topics build" not in text


def test_without_an_indexer_a_running_scheduler_builds_them_at_the_daily_hour(
    instance: tuple[TestClient, App],
) -> None:
    client, app = instance
    add_papers(app.core.store, 4, embed=False)
    with Lease(app.core.job_runs, "scheduler"):  # a scheduler at work: this process holds its lease
        text, _ = _text(client, "/topics?as=scheduler")
    assert "The daily job embeds the papers and builds the topics at 05:30 UTC (in " in text
    assert "paperfeed topics build" not in text


def test_notices_show_commands_as_code_not_as_backticks(instance: tuple[TestClient, App]) -> None:
    client, app = instance
    load_papers(app)  # imported, not embedded: search says meaning search covers none of them
    text, page = _text(client, "/search?q=zebrafish")
    assert "Meaning search covers none of the 4 papers yet" in text
    assert "<code>paperfeed index</code>" in page
    assert "`" not in text
