"""What a reader waits for reaches cached anonymous pages at once, with the production graces (#30 item 8).

A topics build, the vector index taking in what the indexer embedded, and the end of a job run are rare
events (a build a day; an index save about a minute apart while a backlog is embedded) and each is what
someone is waiting for: the map after ``paperfeed topics build``, meaning search once indexing is done,
a harvest's citations once it has finished. They move the data version's *derived* part, which has no
grace: the next anonymous request gets a page rendered after them. The stream of an import or a harvest
still gets its grace while it writes (``test_grace.py``). And a reader who changed something sees it on
their next request even where everyone else gets the graced copy.

The app is the real one (lifespan, its own App, the fake embedder, a real SQLite store or a throwaway
PostgreSQL database) with the shipped graces (10 s after a vote, 60 s after an import) and the data
version read at every request.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import lxml.html
import pytest
from fastapi.testclient import TestClient

from paperfeed.bootstrap import App, build_app
from paperfeed.domain.ingest import Batch
from paperfeed.domain.models import Listing, Paper
from paperfeed.domain.paper_graph import Citation, PaperLinks, WorkRef
from paperfeed.services.jobs import JobService, Step
from paperfeed.settings import Settings
from tests.community.conftest import add_reader, bearer
from tests.public_cache.tuned import tuned_site
from tests.topics.conftest import GROUPS
from tests.topics.ui_instance import database_url

HTML = {"accept": "text/html"}
JSON = {"accept": "application/json"}
NOW = datetime(2026, 11, 26, 12, tzinfo=UTC)
PAPER = "2611.00001"  # the first paper of the "graph" group


def _papers() -> list[Paper]:
    """40 papers in each of three groups of words, arXiv ids (the page cache keeps canonical ids only)."""
    made = []
    for g, words in enumerate(GROUPS.values()):
        for i in range(40):
            n = g * 40 + i + 1
            made.append(
                Paper(
                    id=f"2611.{n:05d}",
                    title=f"{words.split()[0].title()} study number {n}",
                    abstract=f"We study {words} in depth.",
                    authors=("Ada Lovelace",),
                    categories=("cs.LG",),
                    published=NOW - timedelta(days=i % 20),
                )
            )
    return made


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def settings(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Settings]:
    """A SQLite file (FTS5, a folder vector index), or a fresh PostgreSQL database (its full-text search
    and pgvector)."""
    with database_url(request, request.param) as url:
        yield Settings(
            data_dir=tmp_path / "data",
            database_url=url,
            embedding_backend="fake",
            keyword_engine="fts5" if url is None else "auto",
            topics_min_papers=30,
            topics_k=3,
        )


@pytest.fixture
def app(settings: Settings) -> Iterator[App]:
    """Another process's App on the same data: the CLI, the indexer or the scheduler writing."""
    container = build_app(settings)
    papers = _papers()
    listings = [Listing(NOW.date(), p.id, "hf-daily", upvotes=3, rank=i) for i, p in enumerate(papers[:5])]
    container.core.store.apply_batch(Batch(papers=papers, listings=listings))
    yield container
    container.close()


@pytest.fixture
def site(settings: Settings, app: App) -> Iterator[TestClient]:
    with tuned_site(settings, grace=10.0, import_grace=60.0, refresh=600.0) as client:
        yield client


def _get(site: TestClient, url: str, headers: dict[str, str] = HTML) -> tuple[str, str]:
    answer = site.get(url, headers=headers)
    assert answer.status_code == 200, answer.text
    return answer.text, answer.headers.get("x-paperfeed-cache", "")


def test_a_topics_build_reaches_the_cached_map_and_paper_page_at_once(site: TestClient, app: App) -> None:
    app.indexes.indexer.current().run()
    empty = site.get("/map", headers=HTML)
    assert "No map yet" in empty.text
    assert empty.headers["x-paperfeed-cache"] == "miss"
    assert empty.headers["cache-control"] == "public, max-age=10, stale-while-revalidate=0", (
        "a browser must not keep 'No map yet' for the map's five minutes"
    )
    assert _get(site, "/map")[1] == "hit"
    paper, _ = _get(site, f"/papers/{PAPER}")
    assert "Topic:" not in paper
    assert "On the map" not in paper
    assert _get(site, f"/papers/{PAPER}")[1] == "hit"

    app.catalogue.topics.build()  # `paperfeed topics build` in another process

    page, how = _get(site, "/map")
    assert how == "miss", "the cached 'No map yet' outlived the build"
    assert "No map yet" not in page
    assert 'id="paper-map"' in page
    paper, how = _get(site, f"/papers/{PAPER}")
    assert how == "miss"
    assert "Topic:" in paper
    assert "On the map" in paper


def test_the_index_taking_in_new_vectors_reaches_cached_search_at_once(site: TestClient, app: App) -> None:
    page, how = _get(site, "/search?q=protein+folding")
    assert how == "miss"
    assert "Meaning search covers none of the 120 papers" in " ".join(page.split()), page
    assert _get(site, "/search?q=protein+folding")[1] == "hit"

    app.indexes.indexer.current().run()  # the indexer embeds every paper and saves the vector index

    page, how = _get(site, "/search?q=protein+folding")
    assert how == "miss", "a search rendered before the index took the vectors in outlived it"
    assert "Meaning search covers" not in page


def _cited_links(paper_id: str, n: int) -> PaperLinks:
    me = WorkRef(paper_id, f"Paper {paper_id}", 2026)
    cited = WorkRef(f"doi:10.1000/cited-{n}", f"A cited survey number {n}", 2019, doi=f"10.1000/cited-{n}")
    return PaperLinks(paper_id, "s2", me, (me, cited), (Citation(paper_id, cited.key, "s2"),))


def test_a_harvest_is_graced_while_its_job_runs_and_shown_at_once_when_it_ends(
    site: TestClient, app: App
) -> None:
    url = f"/papers/{PAPER}"
    assert "No citation data yet" in _get(site, url)[0]
    seen_during: list[tuple[str, str]] = []

    def harvest() -> dict[str, int]:
        app.catalogue.citations.save_links([_cited_links(PAPER, 1)], harvested_at=datetime.now(UTC))
        seen_during.append(_get(site, url))  # a reader while the harvest still runs
        return {"papers": 1}

    jobs = JobService(app.core.job_runs, {"citations": lambda: [Step("harvest-citations", harvest)]})
    assert jobs.run("citations").status == "ok"

    ((during, how_during),) = seen_during
    assert how_during == "stale", "a running harvest is graced"
    assert "A cited survey number 1" not in during
    after, how = _get(site, url)
    assert how == "miss", "the harvest's job ended: its citations are shown at once"
    assert "A cited survey number 1" in after


def test_a_reader_sees_their_own_vote_at_once_while_others_get_the_graced_copy(
    site: TestClient, app: App
) -> None:
    ada = add_reader(app, "ada@example.org", "Ada")
    token = {**JSON, **bearer(app, ada)}
    url = f"/api/papers/{PAPER}"
    before = site.get(url, headers=token).json()["upvotes"]  # the anonymous copy: the API never looks
    assert site.get(url, headers=JSON).headers["x-paperfeed-cache"] == "hit"

    voted = site.post(f"/api/papers/{PAPER}/upvote", headers=token)
    assert voted.status_code in (200, 201), voted.text

    own = site.get(url, headers=token)
    assert own.json()["upvotes"] == (before or 0) + 1, "the voter's own next read lost their vote"
    others = site.get(url, headers=JSON)
    assert others.json()["upvotes"] in (before, (before or 0) + 1)  # the voter's render may serve them


def test_the_anonymous_copy_after_a_readers_change_is_graced_for_everyone_else(
    site: TestClient, app: App
) -> None:
    """The grace itself is unchanged: a vote in another process, read anonymously, is served stale."""
    ada = add_reader(app, "ada@example.org", "Ada")
    url = f"/papers/{PAPER}"
    _get(site, url)
    app.readers.community.upvote(ada, PAPER)
    assert _get(site, url)[1] == "stale"
    doc = lxml.html.fromstring(_get(site, url)[0])
    assert doc.cssselect("a.vote-link")


def test_a_readers_own_change_reaches_them_through_another_worker(settings: Settings, app: App) -> None:
    """Two workers of one node (two apps sharing the node's page cache file): a vote posted through one,
    the voter's next read through the other still shows it, because the first told the shared cache."""
    ada = add_reader(app, "ada@example.org", "Ada")
    token = {**JSON, **bearer(app, ada)}
    url = f"/api/papers/{PAPER}"

    def worker() -> TestClient:
        return tuned_site(settings, grace=10.0, import_grace=60.0, refresh=600.0, workers=2)

    with worker() as one, worker() as two:
        before = two.get(url, headers=token).json()["upvotes"] or 0
        assert two.get(url, headers=JSON).headers["x-paperfeed-cache"] == "hit"
        voted = one.post(f"/api/papers/{PAPER}/upvote", headers=token)
        assert voted.status_code in (200, 201), voted.text
        assert two.get(url, headers=token).json()["upvotes"] == before + 1, "the other worker lost the vote"
