"""Reading the paper graph on SQLite and PostgreSQL: pages (sort, filter, paging, totals), counts with
the 12-month window, and related-work counts on a small graph whose numbers are worked out by hand."""

from __future__ import annotations

from datetime import date, timedelta
from typing import Any

import pytest

from paperfeed.adapters.store import SqlPaperStore
from paperfeed.adapters.store.citations import (
    RELATED_CITERS_PER_REFERENCE,
    RELATED_PRIOR_CITERS_PER_REFERENCE,
    SqlCitationRecords,
)
from paperfeed.domain.ingest import Batch
from paperfeed.domain.paper_graph import CitationRecords, CitationSort, GraphNeighbourhood, GraphPage
from tests.support.statements import recorded_statements

from .conftest import HARVESTED, cite, links, paper, work

P = "2401.00001"
R1, R2, R3 = "doi:10.1/r1", "doi:10.1/r2", "2402.00002"  # R3 is a paper of the store
A, B, C1, C2, C3 = "doi:10.1/a", "doi:10.1/b", "2403.00003", "doi:10.1/c2", "doi:10.1/c3"  # C1: in store
X, Y, Z = "doi:10.1/x", "doi:10.1/y", "doi:10.1/z"

EDGES = [
    (P, R1), (P, R2), (P, R3),
    (A, R1), (A, R2), (A, R3), (A, P),
    (B, R1),
    (C1, P), (C1, R1), (C1, X),
    (C2, P), (C2, X), (C2, R2),
    (C3, P),
    (Y, R2), (Y, Z),
]  # fmt: skip


@pytest.fixture
def graph(records: SqlCitationRecords) -> SqlCitationRecords:
    described = [
        work(P, "2024-01-02", citation_count=7),
        work(R1, "2019-01-01"),
        work(R2, "2020-01-01"),
        work(R3, "2024-02-03", citation_count=100),
        work(A, "2023-01-01", citation_count=10),
        work(C1, "2024-03-05"),
        work(C2, None, citation_count=5),
        work(C3, "2022-06-01"),
    ]
    edges = [cite(a, b) for a, b in EDGES]
    edges[0] = cite(P, R1, is_influential=True, contexts=("following [3]",), intents=("methodology",))
    records.save_links([links(P, edges, works=described)], harvested_at=HARVESTED)
    return records


def keys(page: GraphPage) -> list[str]:
    return [row.work.key for row in page.rows]


def test_cited_by_pages_sort_filter_and_page(graph: SqlCitationRecords) -> None:
    def cited_by(
        sort: CitationSort, *, in_store_only: bool = False, offset: int = 0, limit: int = 10
    ) -> GraphPage:
        return graph.citations(P, sort=sort, in_store_only=in_store_only, offset=offset, limit=limit)

    page = cited_by(CitationSort.DATE)
    assert (keys(page), page.total) == ([C1, A, C3, C2], 4)  # newest first, the undated one last
    # most cited first: A (10 reported), C2 (5), then the uncited by key, descending
    assert keys(cited_by(CitationSort.CITATIONS)) == [A, C2, C3, C1]
    assert [r.citation_count for r in cited_by(CitationSort.CITATIONS).rows] == [10, 5, 0, 0]
    page = cited_by(CitationSort.DATE, offset=1, limit=2)
    assert (keys(page), page.total) == ([A, C3], 4)
    page = cited_by(CitationSort.DATE, in_store_only=True)
    assert (keys(page), page.total) == ([C1], 1)
    assert page.rows[0].in_store is True
    assert page.rows[0].work.title == "Work 2403.00003"
    assert cited_by(CitationSort.DATE, offset=10).rows == ()
    unknown = graph.citations(
        "doi:10.1/nothing", sort=CitationSort.DATE, in_store_only=False, offset=0, limit=5
    )
    assert (unknown.rows, unknown.total) == ((), 0)
    with pytest.raises(ValueError, match="offset and limit"):
        cited_by(CitationSort.DATE, offset=-1)


def test_reference_pages_sort_filter_and_page(graph: SqlCitationRecords) -> None:
    def refs(
        sort: CitationSort, *, in_store_only: bool = False, offset: int = 0, limit: int = 10
    ) -> GraphPage:
        return graph.references(P, sort=sort, in_store_only=in_store_only, offset=offset, limit=limit)

    page = refs(CitationSort.CITATIONS)
    # R3: 100 reported beats its 2 edges; R1 and R2 have 4 edges each, ties by key descending
    assert (keys(page), page.total) == ([R3, R2, R1], 3)
    assert [r.citation_count for r in page.rows] == [100, 4, 4]
    assert keys(refs(CitationSort.DATE)) == [R3, R2, R1]
    assert (keys(refs(CitationSort.DATE, offset=2, limit=1)), refs(CitationSort.DATE, limit=1).total) == (
        [R1],
        3,
    )
    page = refs(CitationSort.DATE, in_store_only=True)
    assert (keys(page), page.total) == ([R3], 1)
    row = refs(CitationSort.DATE).rows[2]
    assert (row.work.key, row.is_influential, row.contexts, row.intents, row.sources, row.in_store) == (
        R1,
        True,
        ("following [3]",),
        ("methodology",),
        ("s2",),
        False,
    )
    assert (row.work.published, row.work.year) == (date(2019, 1, 1), 2019)


def test_counts_with_the_12_month_window(graph: SqlCitationRecords) -> None:
    counts = graph.counts([P, R3, X, "doi:10.1/never"], as_of=date(2024, 6, 1))
    assert set(counts) == {P, R3, X}  # a key with no edge and no harvest record has no counts
    p = counts[P]
    # 3 references; 4 citing edges but the source reports 7; of the citers only C1 (2024-03-05) is
    # within 2023-06-02 .. 2024-06-01 (A 2023-01-01 and C3 2022-06-01 are older, C2 is undated)
    assert (p.references, p.citations, p.citations_last_12_months, p.harvested_at) == (3, 7, 1, HARVESTED)
    assert (counts[R3].references, counts[R3].citations, counts[R3].harvested_at) == (0, 100, None)
    assert (counts[X].citations, counts[X].citations_last_12_months) == (2, 1)  # C1 in, C2 undated
    # the window's edges: exactly 365 days before as_of is in, a day more is out
    assert graph.counts([P], as_of=date(2024, 3, 5) + timedelta(days=365))[P].citations_last_12_months == 1
    assert graph.counts([P], as_of=date(2024, 3, 5) + timedelta(days=366))[P].citations_last_12_months == 0
    assert graph.counts([P], as_of=date(2024, 3, 4))[P].citations_last_12_months == 0


def test_related_counts_on_a_graph_counted_by_hand(graph: SqlCitationRecords) -> None:
    related = graph.related_counts(P, limit=20)
    # coupling: of P's references R1 {A, B, C1}, R2 {A, C2, Y}, R3 {A}: how many each work cites
    assert related.coupling == {A: 3, B: 1, C1: 1, C2: 1, Y: 1}
    # co-citation: P's citers A (R1 R2 R3), C1 (R1 X), C2 (X R2), C3 (nothing else)
    assert related.co_citation == {R1: 2, R2: 2, R3: 1, X: 2}
    # prior: per reference, which of P's other references its citers also cite:
    # R1 -> A: R2 R3 (C1: X is no reference of P);  R2 -> A: R1 R3 (C2: X, Y: Z are not);  R3 -> A: R1 R2
    assert related.prior == {R1: 2, R2: 2, R3: 2}
    assert related.cites_paper == {A, C1, C2}
    assert related.in_store == {C1, R3}
    assert set(related.works) == {A, B, C1, C2, Y, R1, R2, R3, X}
    assert related.works[R3].published == date(2024, 2, 3)

    top = graph.related_counts(P, limit=2)  # the largest first, ties by key ascending
    assert top.coupling == {A: 3, C1: 1}
    assert top.co_citation == {R1: 2, R2: 2}
    assert top.prior == {R3: 2, R1: 2}  # "2402.00002" sorts before "doi:…"
    assert top.cites_paper == {A, C1}
    assert graph.related_counts("doi:10.1/nothing", limit=5).coupling == {}


def test_neighbourhood_on_a_graph_counted_by_hand(graph: SqlCitationRecords) -> None:
    """What the graph list of similar papers reads: P's references R1 R2 R3 and citers A C1 C2 C3; of
    each, the papers of the store (P itself never) citing it and cited by it; exact degrees, a source's
    reported citation total where it is larger than the edges stored."""
    hood = graph.neighbourhood(P)
    assert hood.references == {R1, R2, R3}
    assert hood.citers == {A, C1, C2, C3}
    # store papers: R3 and C1. C1 cites R1; A cites R3 (A's other references and every other link
    # touch no paper of the store but P)
    assert hood.cited_by == {R1: (C1,)}
    assert hood.cites == {A: (R3,)}
    assert hood.degrees == {R1: 4, R2: 4, R3: 100, A: 4 + 10, C1: 3, C2: 3 + 5, C3: 1}
    assert hood.in_store == {R3, C1}
    # the candidates' own citations: R3 is cited by P and A, and reported cited 100 times
    assert hood.citations == {R3: 100, C1: 0}
    assert graph.neighbourhood("doi:10.1/nothing") == GraphNeighbourhood()


def test_a_highly_cited_neighbour_contributes_only_its_newest_citers(
    store: SqlPaperStore, records: SqlCitationRecords
) -> None:
    """The neighbourhood's cap, the same on both backends: of a reference cited by 60 papers of the store,
    only the 50 most recent are read (its degree stays exact); all the papers a citer cites are."""
    hub = "doi:10.1/hub"
    start = date(2020, 1, 1)
    citers = [paper(f"2001.{i:05d}", (start + timedelta(days=i)).isoformat()) for i in range(60)]
    store.apply_batch(Batch(papers=citers))
    ids = [c.id for c in citers]  # oldest first, one day apart
    described = [work(c.id, c.published.date().isoformat()) for c in citers if c.published]
    edges = [cite(P, hub), *[cite(c, hub) for c in ids], cite(ids[0], P), *[cite(ids[0], c) for c in ids[1:]]]
    records.save_links([links(P, edges, works=described)], harvested_at=HARVESTED)
    hood = records.neighbourhood(P)
    assert RELATED_CITERS_PER_REFERENCE == 50
    assert set(hood.cited_by[hub]) == set(ids[10:])
    assert set(hood.cites[ids[0]]) == set(ids[1:])  # a citer's references are read whole
    assert hood.degrees[hub] == 61
    assert hood.degrees[ids[0]] == 61  # the hub, P and 59 papers
    assert hood.citations[ids[59]] == 1  # ids[0] cites it
    assert hood.citations[ids[0]] == 0


def test_the_store_implements_the_port(records: SqlCitationRecords) -> None:
    port: CitationRecords = records  # mypy checks the contract; the other tests check the behaviour
    assert port.related_counts(P, limit=0).coupling == {}
    assert port.neighbourhood(P) == GraphNeighbourhood()


def test_a_highly_cited_reference_contributes_only_its_newest_citers(records: SqlCitationRecords) -> None:
    """The caps that keep related_counts fast, the same on both backends: of a reference with 60
    citers only the 50 most recent count towards coupling, and only the 20 most recent towards prior."""
    hub, other, third, fourth = "doi:10.1/hub", "doi:10.1/other", "doi:10.1/third", "doi:10.1/fourth"
    citers = [f"doi:10.2/{i:03d}" for i in range(60)]  # oldest first, one day apart
    start = date(2020, 1, 1)
    described = [work(c, (start + timedelta(days=i)).isoformat()) for i, c in enumerate(citers)]
    edges = [cite(P, r) for r in (hub, other, third, fourth)]
    edges += [cite(c, hub) for c in citers]
    edges += [cite(c, other) for c in citers[:5]]  # old citers of the hub
    edges += [cite(citers[45], third), cite(citers[35], fourth)]  # among the hub's newest 20 / 50
    records.save_links([links(P, edges, works=described)], harvested_at=HARVESTED)
    related = records.related_counts(P, limit=100)
    assert (RELATED_CITERS_PER_REFERENCE, RELATED_PRIOR_CITERS_PER_REFERENCE) == (50, 20)
    # coupling: the hub's 50 newest (citers[10:]) and the other's 5 (citers[:5]); citers[0] cites the
    # hub too, but is not among its newest 50
    assert set(related.coupling) == set(citers[:5] + citers[10:])
    assert (related.coupling[citers[0]], related.coupling[citers[45]], related.coupling[citers[35]]) == (
        1,
        2,
        2,
    )
    # prior: the hub is co-cited with the other (by citers[:5]), the third (citers[45]) and the fourth
    # (citers[35], which the fourth's own sample holds); from the hub's side only its 20 newest are read,
    # so the third (citers[45]) is co-cited with it and the fourth (citers[35]) is not
    assert related.prior == {hub: 3, third: 1}


def test_a_page_and_its_total_are_one_statement(graph: SqlCitationRecords) -> None:
    """One round trip a page (PostgreSQL pages cost ~6 ms of CPU as two statements in a transaction):
    the total comes with the rows, also for an empty page, whose one row carries only the total."""
    with recorded_statements(graph.engine) as seen:
        for offset in (0, 10):  # a page with rows, and one past the end
            for listed in (graph.references, graph.citations):
                page = listed(P, sort=CitationSort.DATE, in_store_only=False, offset=offset, limit=2)
                assert page.total in (3, 4)
                assert len(page.rows) == (2 if offset == 0 else 0)
    statements = [statement for statement, _ in seen]
    assert len(statements) == 4, statements
    assert not any(s.lstrip().upper().startswith(("BEGIN", "ROLLBACK")) for s in statements)


def test_empty_pages_keep_their_totals(graph: SqlCitationRecords) -> None:
    for sort in CitationSort:
        page = graph.citations(P, sort=sort, in_store_only=True, offset=5, limit=10)
        assert (page.rows, page.total) == ((), 1)  # past the end of the filtered list
        page = graph.references(P, sort=sort, in_store_only=False, offset=0, limit=0)
        assert (page.rows, page.total) == ((), 3)
        page = graph.references(R1, sort=sort, in_store_only=False, offset=0, limit=10)
        assert (page.rows, page.total) == ((), 0)  # cites nothing stored, but is cited


def test_pages_stay_right_when_repeated(graph: SqlCitationRecords) -> None:
    """psycopg prepares a statement from its 5th run on a connection (the reads run in autocommit, so
    no ROLLBACK discards it) and PostgreSQL may then switch to a generic plan: the 12th answer is the
    1st, for every list, sort and filter, whichever key ran before it."""
    first: dict[tuple[Any, ...], tuple[list[str], int]] = {}
    for round_ in range(12):
        for listed in ("references", "citations"):
            for sort in CitationSort:
                for in_store_only in (False, True):
                    for key in (P, A, "doi:10.1/nothing"):
                        page = getattr(graph, listed)(
                            key, sort=sort, in_store_only=in_store_only, offset=round_ % 2, limit=2
                        )
                        got = (keys(page), page.total)
                        where = (listed, sort, in_store_only, key, round_ % 2)
                        assert first.setdefault(where, got) == got, where
    assert first[("citations", CitationSort.DATE, False, P, 1)] == ([A, C3], 4)
    assert first[("references", CitationSort.CITATIONS, True, A, 0)] == ([R3, P], 2)


def test_links_among_a_set_of_papers_are_the_edges_with_both_ends_in_it(graph: SqlCitationRecords) -> None:
    """What ``paperfeed model adapt`` trains on: citing ↔ cited, both ends among its training papers."""
    assert sorted(graph.links_among([P, R3, C1])) == sorted([(C1, P), (P, R3)])
    assert sorted(graph.links_among([P, R3, C1, "2409.99999"])) == sorted([(C1, P), (P, R3)])
    assert graph.links_among([P]) == []  # P's edges all leave the set
    assert sorted(graph.links_among([A, R1, R2, P])) == sorted([(A, P), (A, R1), (A, R2), (P, R1), (P, R2)])
    assert graph.links_among([]) == []
    many = [f"2501.{i:05d}" for i in range(1000)] + [P, R3]  # more ids than one IN (...) chunk
    assert graph.links_among(many) == [(P, R3)]
