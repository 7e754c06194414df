"""Imported citations in the paper graph, on SQLite and PostgreSQL (the ``store`` fixture runs each test on
both): edges keyed and stored the harvest's way, provenance beside harvested edges, idempotence, works
known only by a source's id resolved by a later record, the ``--touching-store`` filter."""

from __future__ import annotations

from datetime import date
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import delete

from paperfeed.adapters.store import SqlPaperStore
from paperfeed.adapters.store.citations import SqlCitationRecords
from paperfeed.adapters.store.feed_queries import SqlFeedQueries
from paperfeed.adapters.store.schema_citations import citation_imports, citations, work_aliases, works
from paperfeed.domain.citation_import import ImportFormat
from paperfeed.domain.paper_graph import CitationSort, WorkRef
from paperfeed.services.citation_import import CitationImport
from tests.citations.conftest import HARVESTED, cite, links

from .conftest import (
    S2_CITING,
    cited_edges_agree,
    edge_rows,
    graph,
    run,
    s2_citation_record,
    s2_paper_record,
    work_rows,
    write_lines,
)

A, B = "hep-th/9407087", "hep-th/9501001"  # papers of the store
NEW_A, NEW_B = "2401.00001", "2402.00002"


def _wipe(store: SqlPaperStore) -> None:
    with store.engine.begin() as conn:
        for table in (citations, works, work_aliases, citation_imports):
            conn.execute(delete(table))


def test_pairs_land_in_the_graph_as_the_harvest_keeps_them(
    importer: CitationImport, store: SqlPaperStore, tmp_path: Path
) -> None:
    f = write_lines(
        tmp_path / "edges.tsv",
        [
            "citing_id\tcited_id",
            f"{A}v2\t{B}",
            f"{A}\t10.1103/PhysRevLett.75.1260",
            f"{NEW_A}\t{A}",
            f"{NEW_A}\thep-ph/9605001",  # not a paper of ours: an external work, as harvests keep them
            f"{NEW_A}\t{NEW_A}v2",  # a self-citation: dropped, like the harvest drops it
            f"{NEW_A}\tnonsense",
        ],
    )
    report = run(importer, f)
    assert (report.edges_added, report.self_citations, report.rejected) == (4, 1, 1)
    assert report.works_added == 5
    assert report.lines == 7
    source = "file:edges.tsv"
    edges = edge_rows(store)
    assert set(edges) == {
        (A, B),
        (A, "doi:10.1103/physrevlett.75.1260"),
        (NEW_A, A),
        (NEW_A, "hep-ph/9605001"),
    }
    assert all(e["sources"] == [source] for e in edges.values())
    assert edges[(A, B)]["day"] == 19940700  # the citing work's month, from its arXiv id
    assert edges[(NEW_A, A)]["day"] == 20240100
    cited_edges_agree(store)

    records = SqlCitationRecords(store.engine)
    refs = records.references(NEW_A, sort=CitationSort.DATE, in_store_only=False, offset=0, limit=10)
    assert [(r.work.key, r.in_store, r.sources) for r in refs.rows] == [
        ("hep-ph/9605001", False, (source,)),  # May 1996, then July 1994
        (A, True, (source,)),
    ]
    cited_by = records.citations(A, sort=CitationSort.DATE, in_store_only=True, offset=0, limit=10)
    assert [r.work.key for r in cited_by.rows] == [NEW_A]
    counts = records.counts([A, NEW_A], as_of=date(2024, 6, 1))
    assert (counts[A].references, counts[A].citations, counts[A].citations_last_12_months) == (2, 1, 1)


def test_importing_a_file_twice_adds_nothing(
    importer: CitationImport, store: SqlPaperStore, tmp_path: Path
) -> None:
    lines = [f"{NEW_A}\t{A}", f"{NEW_A}\t{B}", f"{NEW_B}\t{A}", f"{NEW_B}\t10.1000/xyz", f"{NEW_B}\t{A}"]
    f = write_lines(tmp_path / "edges.tsv.gz", lines, gz=True)
    first = run(importer, f)
    before = graph(store)
    second = run(importer, f)
    # batches of 3 lines: the repeated line is in the second batch, so it meets its pair stored
    assert (first.edges_added, first.edges_unchanged) == (4, 1)
    assert (second.edges_added, second.edges_merged, second.edges_unchanged, second.works_added) == (
        0,
        0,
        5,
        0,
    )
    assert second.resumed_at is None  # a finished file is read again from its start
    assert graph(store) == before
    cited_edges_agree(store)


def test_provenance_kept_beside_harvested_edges(
    importer: CitationImport, store: SqlPaperStore, tmp_path: Path
) -> None:
    records = SqlCitationRecords(store.engine)
    harvested = cite(NEW_A, A, contexts=("as [3] showed",), intents=("background",), is_influential=True)
    records.save_links([links(NEW_A, [harvested])], harvested_at=HARVESTED)
    report = run(importer, write_lines(tmp_path / "lab.csv", [f"{NEW_A},{A}", f"{NEW_A},{B}"]))
    assert (report.edges_added, report.edges_merged) == (1, 1)
    edges = edge_rows(store)
    assert edges[(NEW_A, A)] == {
        "day": edges[(NEW_A, A)]["day"],
        "influential": True,
        "contexts": ["as [3] showed"],
        "intents": ["background"],
        "sources": ["file:lab.csv", "s2"],
    }
    # a harvest after the import merges the same way
    records.save_links(
        [links(NEW_A, [cite(NEW_A, B, source="openalex")], source="openalex")], harvested_at=HARVESTED
    )
    assert edge_rows(store)[(NEW_A, B)]["sources"] == ["file:lab.csv", "openalex"]
    page = records.references(NEW_A, sort=CitationSort.CITATIONS, in_store_only=False, offset=0, limit=5)
    assert {r.work.key: r.sources for r in page.rows} == {
        A: ("file:lab.csv", "s2"),
        B: ("file:lab.csv", "openalex"),
    }
    cited_edges_agree(store)


def test_touching_store_keeps_only_edges_with_a_paper_of_this_instance(
    importer: CitationImport, store: SqlPaperStore, tmp_path: Path
) -> None:
    f = write_lines(
        tmp_path / "dump.tsv",
        [f"{A}\thep-ph/9605001", "hep-ph/9605001\thep-ph/9601001", f"10.1000/x\t{B}", "10.1000/x\t10.1000/y"],
    )
    report = run(importer, f, touching_store=True)
    assert (report.edges_added, report.outside_store) == (2, 2)
    assert set(edge_rows(store)) == {(A, "hep-ph/9605001"), ("doi:10.1000/x", B)}
    assert "doi:10.1000/y" not in work_rows(store)


def _s2_files(tmp_path: Path, references: list[dict[str, Any]]) -> tuple[Path, Path]:
    """The recorded references of CorpusID:1033682 as dataset files, with the citing paper's own papers
    record saying it is the store's paper 2401.00001 (the real one is arXiv 1901.00001-like; any id of
    ours shows the join)."""
    cites = [
        s2_citation_record(n, S2_CITING, e["citedPaper"].get("corpusId"), e) for n, e in enumerate(references)
    ]
    papers = [s2_paper_record(e["citedPaper"]) for e in references if e["citedPaper"].get("paperId")]
    citing = {
        "corpusId": S2_CITING,
        "externalIds": {"ArXiv": NEW_A, "CorpusId": S2_CITING},
        "url": "https://www.semanticscholar.org/paper/" + "1" * 40,
        "title": "The citing paper",
        "year": 2024,
    }
    papers.append(s2_paper_record(citing))
    return write_lines(tmp_path / "citations-0.jsonl.gz", cites, gz=True), write_lines(
        tmp_path / "papers-0.jsonl.gz", papers, gz=True
    )


@pytest.mark.shared
def test_s2_datasets_join_through_the_papers_records_in_either_order(
    importer: CitationImport, store: SqlPaperStore, tmp_path: Path, s2_references: list[dict[str, Any]]
) -> None:
    cites, papers = _s2_files(tmp_path, s2_references)
    # citations first: the corpus ids are kept as works until the papers records tell their keys
    report = run(importer, cites, batch_size=40)
    assert (report.edges_added, report.unkeyed, report.rejected) == (147, 9, 0)
    assert {c for c, _ in edge_rows(store)} == {f"s2corpus:{S2_CITING}"}
    first_seen = _first_seen(store)
    report = run(importer, papers, batch_size=40)
    assert report.resolved == 148
    assert report.edges_added == 0
    after_papers = graph(store)
    edges = edge_rows(store)
    assert not [k for pair in edges for k in pair if k.startswith("s2corpus:")]
    assert {c for c, _ in edges} == {NEW_A}
    assert _first_seen(store) == {(NEW_A, _moved(store, k)): t for (_, k), t in first_seen.items()}
    cited_edges_agree(store)

    with_arxiv = next(e for e in s2_references if (e["citedPaper"]["externalIds"] or {}).get("ArXiv"))
    key = with_arxiv["citedPaper"]["externalIds"]["ArXiv"]
    assert work_rows(store)[key]["title"] == with_arxiv["citedPaper"]["title"]
    with_context = next(e for e in s2_references if e["contexts"] and e["citedPaper"].get("corpusId"))
    pair = (NEW_A, _moved(store, f"s2corpus:{with_context['citedPaper']['corpusId']}"))
    assert edges[pair]["contexts"] == with_context["contexts"]
    assert edges[pair]["sources"] == ["s2-datasets:citations-0.jsonl.gz"]
    assert edges[pair]["day"] == 20240100

    # the other order gives the same graph: the papers records first, then the citations meet their keys
    _wipe(store)
    run(importer, papers, batch_size=40)
    report = run(importer, cites, batch_size=40)
    assert (report.edges_added, report.resolved) == (147, 0)
    assert graph(store) == after_papers


def _first_seen(store: SqlPaperStore) -> dict[tuple[str, str], Any]:
    with store.engine.connect() as conn:
        return {
            (r[0], r[1]): r[2]
            for r in conn.exec_driver_sql("SELECT citing, cited, first_seen FROM citations")
        }


def _moved(store: SqlPaperStore, alias: str) -> str:
    with store.engine.connect() as conn:
        found = conn.exec_driver_sql(
            "SELECT key FROM work_aliases WHERE alias = %s"
            if store.engine.dialect.name == "postgresql"
            else "SELECT key FROM work_aliases WHERE alias = ?",
            (alias,),
        ).scalar()
    return str(found) if found is not None else alias


@pytest.mark.shared
def test_openalex_references_resolve_when_the_cited_work_comes_later(
    importer: CitationImport, store: SqlPaperStore, tmp_path: Path, openalex_works: list[dict[str, Any]]
) -> None:
    citing, resolving = openalex_works[:5], openalex_works[5:]
    part1 = write_lines(tmp_path / "part_000.gz", citing, gz=True)
    part2 = write_lines(tmp_path / "part_001.gz", resolving, gz=True)
    report = run(importer, part1)
    refs = {r.rsplit("/", 1)[1] for w in citing for r in w["referenced_works"]}
    assert report.edges_added == sum(len(set(w["referenced_works"])) for w in citing)
    assert "openalex:W3046863325" in work_rows(store)  # cited by all five, known only by its id so far
    cited_by_five = work_rows(store)["openalex:W3046863325"]["cited_edges"]
    report = run(importer, part2)
    rows = work_rows(store)
    assert report.resolved >= 1
    assert "openalex:W3046863325" not in rows
    doi = "doi:10.1145/3383583.3398584"
    assert rows[doi]["cited_edges"] == cited_by_five
    assert rows[doi]["openalex_id"] == "W3046863325"
    assert rows[doi]["title"]
    assert rows["2007.14454"]["openalex_id"] == "W3045921891"  # an arXiv DOI: keyed by its arXiv id
    assert {c for c, d in edge_rows(store) if d == doi} == {
        "doi:" + w["doi"].removeprefix("https://doi.org/").lower()
        for w in citing
        if "https://openalex.org/W3046863325" in w["referenced_works"]
    }
    cited_edges_agree(store)
    assert len(refs) > 100
    two_files = _unsourced(graph(store))
    _wipe(store)
    run(importer, write_lines(tmp_path / "all.jsonl", [*resolving, *citing]))
    assert _unsourced(graph(store)) == two_files  # the same graph, whichever came first


def _unsourced(state: dict[str, Any]) -> dict[str, Any]:
    """The graph without the edges' provenance (file names differ between the two ways)."""
    return {**state, "edges": [e[:6] for e in state["edges"]]}


def test_an_alias_of_an_alias_moves_on(
    importer: CitationImport, store: SqlPaperStore, tmp_path: Path
) -> None:
    """S2 knows a paper only by its DOI; an OpenAlex record later ties that DOI to an arXiv id: the corpus id,
    the DOI and the edges stored under the DOI all end at the arXiv id."""
    papers = write_lines(
        tmp_path / "papers.jsonl",
        [
            {
                "corpusid": 77,
                "externalids": {"ArXiv": None, "DOI": "10.1000/Journal.7", "CorpusId": "77"},
                "url": "https://www.semanticscholar.org/paper/" + "7" * 40,
                "title": "Journal version",
                "year": 2020,
                "publicationdate": None,
            }
        ],
    )
    run(importer, papers)
    run(
        importer,
        write_lines(tmp_path / "c1.jsonl", [{"citationid": 1, "citingcorpusid": 77, "citedcorpusid": 5}]),
    )
    run(importer, write_lines(tmp_path / "lab.tsv", [f"{NEW_A}\t10.1000/journal.7"]))
    assert {c for c, _ in edge_rows(store)} == {"doi:10.1000/journal.7", NEW_A}
    work = {
        "id": "https://openalex.org/W99",
        "doi": "https://doi.org/10.1000/journal.7",
        "title": "Journal version",
        "publication_year": 2020,
        "publication_date": "2020-05-01",
        "ids": {"openalex": "https://openalex.org/W99", "doi": "https://doi.org/10.1000/journal.7"},
        "locations": [{"landing_page_url": "https://arxiv.org/abs/2005.00007v2"}],
        "referenced_works": [],
    }
    report = run(importer, write_lines(tmp_path / "works.jsonl", [work]))
    assert report.resolved == 1
    edges = edge_rows(store)
    assert set(edges) == {("2005.00007", "s2corpus:5"), (NEW_A, "2005.00007")}
    assert edges[("2005.00007", "s2corpus:5")]["day"] == 20200501  # the described date now
    with store.engine.connect() as conn:
        aliases: dict[str, str] = dict(conn.exec_driver_sql("SELECT alias, key FROM work_aliases").all())
    assert aliases == {
        "s2corpus:77": "2005.00007",
        "doi:10.1000/journal.7": "2005.00007",
        "openalex:W99": "2005.00007",
    }
    run(
        importer,
        write_lines(tmp_path / "c2.jsonl", [{"citationid": 2, "citingcorpusid": 6, "citedcorpusid": 77}]),
    )
    assert ("s2corpus:6", "2005.00007") in edge_rows(store)
    cited_edges_agree(store)


def test_a_reference_that_resolves_to_its_citer_is_dropped(
    importer: CitationImport, store: SqlPaperStore, tmp_path: Path
) -> None:
    run(
        importer,
        write_lines(
            tmp_path / "c.jsonl",
            [{"citingcorpusid": 1, "citedcorpusid": 2}, {"citingcorpusid": 1, "citedcorpusid": 3}],
        ),
    )
    papers = [
        {"corpusid": 1, "externalids": {"ArXiv": NEW_A}, "url": None},
        {"corpusid": 2, "externalids": {"ArXiv": f"{NEW_A}v2"}, "url": None},
    ]
    report = run(importer, write_lines(tmp_path / "p.jsonl", papers), ImportFormat.S2_PAPERS)
    assert report.self_citations == 1
    assert set(edge_rows(store)) == {(NEW_A, "s2corpus:3")}
    cited_edges_agree(store)


def test_an_import_moves_the_data_version(
    importer: CitationImport, store: SqlPaperStore, tmp_path: Path
) -> None:
    queries = SqlFeedQueries(store.engine)
    before = queries.data_version()
    run(importer, write_lines(tmp_path / "e.tsv", [f"{NEW_A}\t{A}"]))
    assert queries.data_version() != before


def test_an_arxiv_work_without_a_date_sorts_by_its_month(store: SqlPaperStore) -> None:
    records = SqlCitationRecords(store.engine)
    refs = [cite(NEW_A, "hep-th/9605001"), cite(NEW_A, "hep-th/9606001"), cite(NEW_A, "doi:10.1/z")]
    described = [WorkRef(key="hep-th/9606001", year=1996), WorkRef(key="doi:10.1/z", year=1996)]
    records.save_links([links(NEW_A, refs, works=described)], harvested_at=HARVESTED)
    days = {k: w["day"] for k, w in work_rows(store).items()}
    assert days["hep-th/9605001"] == 19960500
    assert days["hep-th/9606001"] == 19960600  # the year agrees with the id: the id's month refines it
    assert days["doi:10.1/z"] == 19960000


def test_a_work_a_harvest_stored_under_a_known_alias_moves_at_the_next_import(
    importer: CitationImport, store: SqlPaperStore, tmp_path: Path
) -> None:
    work = {
        "id": "https://openalex.org/W42",
        "doi": "https://doi.org/10.1000/j.42",
        "ids": {"openalex": "https://openalex.org/W42", "doi": "https://doi.org/10.1000/j.42"},
        "locations": [{"landing_page_url": "https://arxiv.org/abs/2402.00002"}],
        "referenced_works": [],
    }
    works_file = write_lines(tmp_path / "works.jsonl", [work])
    run(importer, works_file)
    # a harvest knows the work only by its DOI and stores it under it, beside the alias
    SqlCitationRecords(store.engine).save_links(
        [links(NEW_A, [cite(NEW_A, "doi:10.1000/j.42")])], harvested_at=HARVESTED
    )
    assert (NEW_A, "doi:10.1000/j.42") in edge_rows(store)
    report = run(importer, works_file)
    assert report.resolved == 1
    assert set(edge_rows(store)) == {(NEW_A, NEW_B)}
    assert edge_rows(store)[(NEW_A, NEW_B)]["sources"] == ["s2"]
    cited_edges_agree(store)
