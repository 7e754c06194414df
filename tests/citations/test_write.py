"""Writing the paper graph (``SqlCitationRecords.save_links``) on SQLite and PostgreSQL: merges of
duplicate edges and works, self-citations, cycles, the harvest ledger, and all-or-nothing saves."""

from __future__ import annotations

import dataclasses
from datetime import date, timedelta
from typing import Any

import pytest
from sqlalchemy import func, select
from sqlalchemy.exc import IntegrityError, StatementError

from paperfeed.adapters.store import SqlPaperStore
from paperfeed.adapters.store.citations import SqlCitationRecords, sort_day
from paperfeed.adapters.store.schema_citations import citation_harvests, citations, works
from paperfeed.domain.errors import StoreValueError
from paperfeed.domain.paper_graph import PaperLinks, WorkRef
from tests.support.statements import recorded_statements

from .conftest import HARVESTED, cite, links, work


def edges_of(records: SqlCitationRecords) -> dict[tuple[str, str], dict[str, Any]]:
    with records.engine.connect() as conn:
        rows = conn.execute(select(citations)).all()
    return {(r.citing, r.cited): dict(r._mapping) for r in rows}


def works_of(records: SqlCitationRecords) -> dict[str, dict[str, Any]]:
    with records.engine.connect() as conn:
        rows = conn.execute(select(works)).all()
    return {r.key: dict(r._mapping) for r in rows}


def table_counts(records: SqlCitationRecords) -> tuple[int, int, int]:
    with records.engine.connect() as conn:
        return tuple(  # type: ignore[return-value]
            int(conn.execute(select(func.count()).select_from(t)).scalar_one())
            for t in (works, citations, citation_harvests)
        )


def test_duplicate_edges_from_two_sources_merge(records: SqlCitationRecords) -> None:
    s2 = links(
        "2401.00001",
        [
            cite(
                "2401.00001",
                "doi:10.1/a",
                "s2",
                is_influential=False,
                contexts=("as in [1]",),
                intents=("background",),
            ),
            cite("2402.00002", "2401.00001", "s2", is_influential=None),
        ],
        source="s2",
    )
    first = records.save_links([s2], harvested_at=HARVESTED)
    assert (first.papers, first.edges_added, first.works_added) == (1, 2, 3)

    openalex = links(
        "2401.00001",
        [
            cite(
                "2401.00001", "doi:10.1/a", "openalex", is_influential=True, contexts=("see [1]", "as in [1]")
            ),
            cite("2402.00002", "2401.00001", "openalex"),
        ],
        source="openalex",
    )
    again = records.save_links([openalex], harvested_at=HARVESTED)
    assert (again.edges_added, again.works_added) == (0, 0)

    stored = edges_of(records)
    assert len(stored) == 2
    ref = stored[("2401.00001", "doi:10.1/a")]
    assert ref["sources"] == ["openalex", "s2"]
    assert ref["contexts"] == ["as in [1]", "see [1]"]
    assert ref["intents"] == ["background"]
    assert ref["is_influential"] is True  # OR of False and True
    assert stored[("2402.00002", "2401.00001")]["is_influential"] is None  # nobody said
    assert stored[("2402.00002", "2401.00001")]["sources"] == ["openalex", "s2"]
    # each cited work counts its edge once however many sources reported it
    assert works_of(records)["2401.00001"]["cited_edges"] == 1

    # the same pair twice within one batch merges too, and a re-harvest changes nothing
    twice = links(
        "2403.00003",
        [cite("2403.00003", "2404.00004", "s2"), cite("2403.00003", "2404.00004", "s2", contexts=("x",))],
    )
    assert records.save_links([twice, twice], harvested_at=HARVESTED).edges_added == 1
    assert edges_of(records)[("2403.00003", "2404.00004")]["contexts"] == ["x"]
    assert records.save_links([twice], harvested_at=HARVESTED).edges_added == 0
    assert works_of(records)["2404.00004"]["cited_edges"] == 1


def test_self_citations_are_dropped_and_cycles_kept(records: SqlCitationRecords) -> None:
    result = records.save_links(
        [
            links(
                "2401.00001",
                [
                    cite("2401.00001", "2401.00001"),  # a source's glitch: the paper citing itself
                    cite("2401.00001", "2402.00002"),
                    cite("2402.00002", "2403.00003"),
                    cite("2403.00003", "2401.00001"),  # a cycle of three
                    cite("2402.00002", "2401.00001"),  # and one of two
                ],
            )
        ],
        harvested_at=HARVESTED,
    )
    assert result.edges_added == 4
    assert set(edges_of(records)) == {
        ("2401.00001", "2402.00002"),
        ("2402.00002", "2403.00003"),
        ("2403.00003", "2401.00001"),
        ("2402.00002", "2401.00001"),
    }
    assert works_of(records)["2401.00001"]["cited_edges"] == 2


def test_a_known_field_is_never_overwritten_with_none(records: SqlCitationRecords) -> None:
    full = work(
        "doi:10.1/b", "2020-05-06", doi="10.1/b", s2_id="a" * 40, citation_count=50, reference_count=9
    )
    records.save_links(
        [links("2401.00001", [cite("2401.00001", "doi:10.1/b")], works=[full])], harvested_at=HARVESTED
    )
    bare = WorkRef(key="doi:10.1/b", openalex_id="W123", citation_count=40)
    records.save_links(
        [
            links(
                "2402.00002", [cite("2402.00002", "doi:10.1/b", "openalex")], source="openalex", works=[bare]
            )
        ],
        harvested_at=HARVESTED,
    )
    row = works_of(records)["doi:10.1/b"]
    assert (row["title"], row["published"], row["year"]) == ("Work doi:10.1/b", date(2020, 5, 6), 2020)
    assert (row["doi"], row["s2_id"], row["openalex_id"]) == ("10.1/b", "a" * 40, "W123")
    assert (row["citation_count"], row["reference_count"]) == (50, 9)  # the larger report stays
    assert row["cited_edges"] == 2
    records.save_links(
        [links("2402.00002", [], works=[WorkRef(key="doi:10.1/b", citation_count=70)])],
        harvested_at=HARVESTED,
    )
    assert works_of(records)["doi:10.1/b"]["citation_count"] == 70


def test_edges_carry_the_citing_works_date_even_when_it_is_learnt_later(records: SqlCitationRecords) -> None:
    records.save_links(
        [
            links(
                "2401.00001",
                [cite("doi:10.1/c", "2401.00001"), cite("doi:10.1/d", "2401.00001")],
                works=[work("doi:10.1/d", None, year=2023)],
            )
        ],
        harvested_at=HARVESTED,
    )
    stored = edges_of(records)
    assert stored[("doi:10.1/c", "2401.00001")]["citing_day"] == 0  # unknown
    assert stored[("doi:10.1/d", "2401.00001")]["citing_day"] == 20230000  # the year only
    records.save_links(
        [links("2402.00002", [], works=[work("doi:10.1/c", "2025-07-08")])], harvested_at=HARVESTED
    )
    assert edges_of(records)[("doi:10.1/c", "2401.00001")]["citing_day"] == 20250708
    assert sort_day(date(2025, 7, 8), 1999) == 20250708
    assert sort_day(None, None) == 0


def test_harvest_ledger_and_checkpoint_commit_with_the_edges(
    records: SqlCitationRecords, store: SqlPaperStore
) -> None:
    unknown = PaperLinks(paper_id="2404.00004", source="s2", work=None)
    cut = links("2401.00001", [cite("2402.00002", "2401.00001")])
    cut = dataclasses.replace(cut, citations_complete=False)
    result = records.save_links(
        [cut, unknown], harvested_at=HARVESTED, checkpoint=("harvest:s2", "2404.00004")
    )
    assert result.papers == 2
    assert store.get_checkpoint("harvest:s2") == "2404.00004"
    assert records.harvested(["2401.00001", "2404.00004", "2403.00003"], "s2") == {
        "2401.00001": HARVESTED,
        "2404.00004": HARVESTED,
    }
    assert records.harvested(["2401.00001"], "openalex") == {}
    with records.engine.connect() as conn:
        ledger = {r.paper_id: r for r in conn.execute(select(citation_harvests))}
    assert (ledger["2404.00004"].known, ledger["2401.00001"].known) == (False, True)
    assert (ledger["2401.00001"].references_complete, ledger["2401.00001"].citations_complete) == (
        True,
        False,
    )
    later = HARVESTED + timedelta(days=3)
    records.save_links([unknown], harvested_at=later)
    assert records.harvested(["2404.00004"], "s2") == {"2404.00004": later}
    assert table_counts(records) == (2, 1, 2)  # an unknown paper stores no work


def test_a_failure_mid_save_leaves_nothing(records: SqlCitationRecords, store: SqlPaperStore) -> None:
    """The checkpoint is the last statement of the transaction: a NOT NULL violation there (a real
    constraint of the database, on both backends) must take the works, edges and ledger rows with it."""
    records.save_links([links("2401.00001", [cite("2401.00001", "2402.00002")])], harvested_at=HARVESTED)
    before = (table_counts(records), edges_of(records), works_of(records))
    batch = [
        links(
            "2401.00001", [cite("2401.00001", "2402.00002", "openalex", contexts=("new",))], source="openalex"
        ),
        links("2403.00003", [cite("2403.00003", "doi:10.9/new"), cite("doi:10.9/other", "2403.00003")]),
    ]
    with pytest.raises(IntegrityError):
        records.save_links(batch, harvested_at=HARVESTED, checkpoint=("harvest:s2", None))  # type: ignore[arg-type]
    assert (table_counts(records), edges_of(records), works_of(records)) == before
    assert store.get_checkpoint("harvest:s2") is None
    assert records.harvested(["2403.00003"], "s2") == {}
    # and the same batch then goes through whole
    records.save_links(batch, harvested_at=HARVESTED, checkpoint=("harvest:s2", "2403.00003"))
    assert table_counts(records) == (5, 3, 3)


def test_a_value_the_database_refuses_rolls_back_the_works_already_written(
    records: SqlCitationRecords,
) -> None:
    """A source-reported count beyond the column's range fails in the driver or the server (the store
    says so in the domain's words: ``StoreValueError``), after nothing else; the works of the batch
    written before it must not stay."""
    huge = WorkRef(key="doi:10.1/huge", citation_count=2**63)
    with pytest.raises((OverflowError, StatementError, StoreValueError)):
        records.save_links(
            [
                links(
                    "2401.00001",
                    [cite("2401.00001", "doi:10.1/huge"), cite("2401.00001", "2402.00002")],
                    works=[huge],
                )
            ],
            harvested_at=HARVESTED,
        )
    assert table_counts(records) == (0, 0, 0)


def test_many_papers_are_saved_with_bulk_statements(records: SqlCitationRecords) -> None:
    batch = [
        links(
            f"2401.{i:05d}",
            [cite(f"2401.{i:05d}", f"doi:10.5/{j}") for j in range(30)]
            + [cite(f"doi:10.6/{i}", f"2401.{i:05d}")],
        )
        for i in range(1, 101)
    ]
    with recorded_statements(records.engine) as statements:
        result = records.save_links(batch, harvested_at=HARVESTED)
    assert (result.papers, result.edges_added, result.works_added) == (100, 3100, 230)
    assert len(statements) < 40, len(statements)  # chunked reads and a handful of executemany, not 3,100
    assert works_of(records)["doi:10.5/7"]["cited_edges"] == 100
