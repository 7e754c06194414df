"""A small citation graph around one paper, stored through the real ``CitationRecords.save_links``, for
the reading tests (pages, API, Markdown, related work) in ``tests/citations``.

The paper ``ME`` (2401.00001, in the store) cites 25 works (two of them papers of the store) and is
cited by 23 (four of them papers of the store; ten outside works dated in the last weeks, so they
count among "the last 12 months"). Three more papers of the store were harvested too, so
related work has overlaps to find:

* ``CITER`` (2402.00010, later) cites ME and 7 of its references (R3–R9): a derivative work,
  "cites it and 7 of its references";
* ``EARLIER`` (2301.00004, before ME) cites 9 of its references (R3–R11): "shares 9 references";
* ``THIRD`` (2203.00003, before ME) cites ``PRIOR`` (doi:10.1000/prior, not in the store) together with
  12 of ME's references (R3–R14): THIRD "shares 12 references"; each of R3–R14 is co-cited with the 11
  others, so prior works (chosen among ME's own references, see docs/citations.md) say "co-cited with 11
  of this paper's references", and PRIOR, not a reference of ME, is none of them.

``LONELY`` (2401.00099) is in the store with no edges at all.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

from paperfeed.bootstrap import App, build_app
from paperfeed.domain.ingest import Batch
from paperfeed.domain.models import Paper
from paperfeed.domain.paper_graph import Citation, PaperLinks, WorkRef
from paperfeed.settings import Settings
from tests.support import postgres
from tests.support.papers import paper as make_paper

ME = "2401.00001"
LONELY = "2401.00099"
CITER = "2402.00010"
EARLIER = "2301.00004"
THIRD = "2203.00003"
PRIOR = "doi:10.1000/prior"
STORE_REFS = ("1706.03762", "2312.00002")  # R1, R2: references that are papers of the store
STORE_CITERS = (CITER, "2402.00011", "2403.00012", "2404.00013")
HARVESTED_AT = datetime(2024, 6, 1, tzinfo=UTC)


def _paper(pid: str, title: str, day: str) -> Paper:
    return make_paper(
        pid,
        title,
        day=day,
        abstract=f"The abstract of {title.lower()}.",
        authors=("Ada Lovelace", "Alan Turing"),
        categories=("cs.LG",),
    )


PAPERS = [
    _paper(ME, "Graph reading for paper feeds", "2024-01-10"),
    _paper(LONELY, "A paper nobody has harvested", "2024-01-11"),
    _paper("1706.03762", "Attention is all you need", "2017-06-12"),
    _paper("2312.00002", "A store reference from December", "2023-12-02"),
    _paper(CITER, "Building on graph reading", "2024-02-01"),
    _paper("2402.00011", "Second citer in the store", "2024-02-11"),
    _paper("2403.00012", "Third citer in the store", "2024-03-12"),
    _paper("2404.00013", "Fourth citer in the store", "2024-04-13"),
    _paper(EARLIER, "An earlier paper on the same references", "2023-01-04"),
    _paper(THIRD, "A survey that co-cites the classics", "2022-03-03"),
]


def reference_keys() -> list[str]:
    """R1..R25 in order: two store papers, then outside works by DOI."""
    return [*STORE_REFS, *(f"doi:10.1000/ref{i}" for i in range(3, 26))]


def _ref_work(i: int, key: str) -> WorkRef:
    if key in STORE_REFS:
        paper = next(p for p in PAPERS if p.id == key)
        assert paper.published is not None
        return WorkRef(key, paper.title, paper.published.year, paper.published.date(), arxiv_id=key)
    year = 1990 + i
    return WorkRef(
        key,
        f"Reference number {i}",
        year,
        date(year, 5, 1),
        doi=key.removeprefix("doi:"),
        citation_count=1000 - i * 10,  # R3 the most cited outside work, R25 the least
    )


def citing_keys() -> list[str]:
    """C1..C23: the four store papers, then outside works by Semantic Scholar id, then by OpenAlex id."""
    outside_s2 = [f"s2:{i:040x}" for i in range(5, 15)]
    outside_oa = [f"openalex:W{9000 + i}" for i in range(15, 24)]
    return [*STORE_CITERS, *outside_s2, *outside_oa]


def _citer_work(i: int, key: str) -> WorkRef:
    if key in STORE_CITERS:
        paper = next(p for p in PAPERS if p.id == key)
        assert paper.published is not None
        return WorkRef(key, paper.title, paper.published.year, paper.published.date(), arxiv_id=key)
    if key.startswith("s2:"):  # C5..C14: this month (counted in "the last 12 months")
        day = date.today() - timedelta(days=i)
        return WorkRef(key, f"Citing work {i}", day.year, day, s2_id=key[3:], citation_count=i)
    day = date(2024, 5, i)  # C15..C23: May 2024
    return WorkRef(key, f"Citing work {i}", day.year, day, openalex_id=key.split(":")[1], citation_count=i)


def _work_of(paper_id: str) -> WorkRef:
    paper = next(p for p in PAPERS if p.id == paper_id)
    assert paper.published is not None
    return WorkRef(paper_id, paper.title, paper.published.year, paper.published.date(), arxiv_id=paper_id)


def prior_counts() -> dict[str, int]:
    """For each reference of ME, how many of its other references some third work cites with it."""
    cited: dict[str, set[str]] = {}
    for links in graph_links():
        for edge in links.edges:
            cited.setdefault(edge.citing, set()).add(edge.cited)
    mine = cited[ME]
    return {
        r: len(set().union(*(refs & mine for k, refs in cited.items() if k != ME and r in refs)) - {r})
        for r in mine
    }


def graph_links() -> list[PaperLinks]:
    """What the harvest of ME, CITER, EARLIER and THIRD brought (one source, complete lists)."""
    refs = reference_keys()
    ref_works = [_ref_work(i, k) for i, k in enumerate(refs, start=1)]
    cites = citing_keys()
    cite_works = [_citer_work(i, k) for i, k in enumerate(cites, start=1)]
    me = _work_of(ME)
    edges = [Citation(ME, r, "s2", is_influential=(r == refs[2])) for r in refs]
    edges[0] = Citation(
        ME, refs[0], "s2", contexts=("as the transformer [1] showed",), intents=("background",)
    )
    edges += [Citation(c, ME, "s2") for c in cites]
    links = [PaperLinks(ME, "s2", me, (me, *ref_works, *cite_works), tuple(edges))]
    by_key = {w.key: w for w in ref_works}
    prior = WorkRef(
        PRIOR, "A prior classic", 1985, date(1985, 1, 1), doi="10.1000/prior", citation_count=5000
    )
    for pid, cited, extra in (
        (CITER, [ME, *refs[2:9]], []),
        (EARLIER, refs[2:11], []),
        (THIRD, refs[2:14], [prior]),
    ):
        work = _work_of(pid)
        targets = [*cited, *(w.key for w in extra)]
        works = (work, *(by_key[k] for k in cited if k in by_key), *extra, *([me] if ME in cited else []))
        links.append(PaperLinks(pid, "s2", work, works, tuple(Citation(pid, t, "s2") for t in targets)))
    return links


def settings_for(data_dir: Path, database_url: str | None) -> Settings:
    return Settings(
        data_dir=data_dir, database_url=database_url, embedding_backend="fake", keyword_engine="auto"
    )


def fill(app: App) -> None:
    """The papers through the store, the graph through ``CitationRecords.save_links``."""
    result = app.core.store.apply_batch(Batch(papers=PAPERS))
    app.indexes.keyword.on_papers_changed(result)
    app.indexes.keyword.flush()
    app.catalogue.citations.save_links(graph_links(), harvested_at=HARVESTED_AT)


@contextmanager
def graph_settings(backend: str, data_dir: Path, pg_server: postgres.PgServer | None) -> Iterator[Settings]:
    """Settings of a filled store on ``backend`` ("sqlite" or "postgresql")."""
    if backend == "sqlite":
        settings = settings_for(data_dir, None)
        _fill_once(settings)
        yield settings
        return
    assert pg_server is not None
    with postgres.database(pg_server) as url:
        settings = settings_for(data_dir, url)
        _fill_once(settings)
        yield settings


def _fill_once(settings: Settings) -> None:
    app = build_app(settings)
    try:
        fill(app)
    finally:
        app.close()
