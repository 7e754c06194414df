"""Related work: which list a work lands in, its rank, and the reason it gives (pure, no store)."""

from __future__ import annotations

from datetime import date

from paperfeed.domain.paper_graph import RelatedCounts, WorkRef
from paperfeed.domain.related_work import RelatedKind, RelatedRules, rank_related

ME = "2401.00001"
PUBLISHED = date(2024, 1, 10)


def _work(key: str, published: str | None = None, year: int | None = None) -> WorkRef:
    return WorkRef(
        key=key,
        title=f"Work {key}",
        published=date.fromisoformat(published) if published else None,
        year=year,
    )


def _counts(**kw: object) -> RelatedCounts:
    works = kw.pop("works", [])
    assert isinstance(works, list)
    return RelatedCounts(works={w.key: w for w in works}, **kw)  # type: ignore[arg-type]


def test_a_citing_work_sharing_references_is_derivative_and_says_so() -> None:
    counts = _counts(
        coupling={"2402.00002": 7, "2402.00003": 3},
        cites_paper=frozenset({"2402.00002"}),
        works=[_work("2402.00002", "2024-02-01"), _work("2402.00003", "2024-03-01")],
        in_store=frozenset({"2402.00002"}),
    )
    related = rank_related(ME, counts, published=PUBLISHED)
    assert [e.key for e in related.derivative] == ["2402.00002", "2402.00003"]
    first, second = related.derivative
    assert first.reason == "cites it and 7 of its references"
    assert (first.score, first.shared_references, first.cites_paper, first.in_store) == (8, 7, True, True)
    assert second.reason == "cites 3 of its references"
    assert second.in_store is False
    assert related.prior == related.coupling == ()


def test_citing_the_paper_alone_is_enough_to_be_derivative() -> None:
    related = rank_related(ME, _counts(cites_paper=frozenset({"doi:10.1/x"})), published=PUBLISHED)
    assert [(e.key, e.reason, e.score) for e in related.derivative] == [("doi:10.1/x", "cites it", 1)]


def test_earlier_works_sharing_references_are_coupling_not_derivative() -> None:
    counts = _counts(
        coupling={"2301.00001": 9, "2301.00002": 1, "doi:10.5/undated": 4},
        works=[_work("2301.00001", "2023-01-05"), _work("2301.00002", "2023-01-06")],
    )
    related = rank_related(ME, counts, published=PUBLISHED)
    assert [(e.key, e.reason) for e in related.coupling] == [
        ("2301.00001", "shares 9 references"),
        ("doi:10.5/undated", "shares 4 references"),
    ]  # one shared reference is below min_shared: left out
    assert related.derivative == ()


def test_a_later_year_alone_makes_a_work_later_but_the_same_year_does_not() -> None:
    counts = _counts(
        coupling={"doi:10.1/a": 3, "doi:10.1/b": 3},
        works=[_work("doi:10.1/a", year=2025), _work("doi:10.1/b", year=2024)],
    )
    related = rank_related(ME, counts, published=PUBLISHED)
    assert [e.key for e in related.derivative] == ["doi:10.1/a"]
    assert [e.key for e in related.coupling] == ["doi:10.1/b"]


def test_prior_works_rank_by_references_co_cited_with_and_skip_later_ones() -> None:
    counts = _counts(
        prior={"1706.03762": 12, "1810.04805": 5, "2405.00009": 30, "1409.0473": 1},
        co_citation={"1810.04805": 2},
        works=[
            _work("1706.03762", "2017-06-12"),
            _work("1810.04805", "2018-10-11"),
            _work("2405.00009", "2024-05-01"),
        ],
    )
    related = rank_related(ME, counts, published=PUBLISHED)
    assert [(e.key, e.reason) for e in related.prior] == [
        ("1706.03762", "co-cited with 12 of this paper's references"),
        ("1810.04805", "co-cited with 5 of this paper's references; cited together with it by 2 papers"),
    ]
    assert related.prior[0].co_cited_with_references == 12


def test_a_work_is_listed_once_and_never_the_paper_itself() -> None:
    counts = _counts(
        coupling={ME: 40, "2402.00002": 5},
        prior={ME: 40, "2402.00002": 9},
        cites_paper=frozenset({"2402.00002"}),
    )
    related = rank_related(ME, counts, published=PUBLISHED)
    assert [e.key for e in related.all()] == ["2402.00002"]
    assert related.derivative[0].kind is RelatedKind.DERIVATIVE


def test_ties_break_on_co_citations_then_newest_then_key_and_lists_are_capped() -> None:
    counts = _counts(
        coupling={f"doi:10.1/{c}": 3 for c in "abcde"},
        co_citation={"doi:10.1/e": 1},
        works=[_work("doi:10.1/c", "2020-01-01"), _work("doi:10.1/d", "2021-01-01")],
    )
    related = rank_related(ME, counts, published=PUBLISHED, rules=RelatedRules(per_list=4))
    assert [e.key[-1] for e in related.coupling] == ["e", "d", "c", "a"]


def test_singular_wording_and_no_dates_at_all() -> None:
    counts = _counts(
        coupling={"doi:10.1/a": 1}, cites_paper=frozenset({"doi:10.1/a"}), co_citation={"doi:10.1/a": 1}
    )
    related = rank_related(ME, counts)  # the paper's own date unknown: only citing makes a work later
    assert (
        related.derivative[0].reason == "cites it and 1 of its references; cited together with it by 1 paper"
    )
    assert rank_related(ME, RelatedCounts()).empty
