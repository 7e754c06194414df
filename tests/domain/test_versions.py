"""arXiv version histories: highest version, v1's date as published, the last version's date as updated."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from paperfeed.domain.versions import VersionSpan, parse_version_label, version_span


@pytest.mark.parametrize(("label", "number"), [("v1", 1), ("v2", 2), ("v10", 10), ("v999", 999), ("v01", 1)])
def test_version_labels(label: str, number: int) -> None:
    assert parse_version_label(label) == number


@pytest.mark.parametrize(
    "label", ["", "v", "1", "V2", "v1000", "v-1", "v1.1", " v1", "v1 ", "version 1", "v²"]
)
def test_anything_else_is_not_a_version_label(label: str) -> None:
    assert parse_version_label(label) is None


def test_an_empty_history_says_nothing() -> None:
    assert version_span([]) is None
    assert version_span(iter(())) is None


def test_one_version_is_both_published_and_updated() -> None:
    assert version_span([(1, "2024-01-02")]) == VersionSpan(1, "2024-01-02", "2024-01-02")


def test_order_of_the_listing_does_not_matter() -> None:
    v1 = datetime(2023, 5, 1, tzinfo=UTC)
    v2 = datetime(2023, 6, 1, tzinfo=UTC)
    v10 = datetime(2024, 1, 1, tzinfo=UTC)
    for history in (
        [(1, v1), (2, v2), (10, v10)],
        [(10, v10), (1, v1), (2, v2)],
        [(2, v2), (10, v10), (1, v1)],
    ):
        # numbers, not label text, decide: v10 comes after v2
        assert version_span(history) == VersionSpan(10, v1, v10)


def test_dates_are_passed_through_not_compared() -> None:
    """A later version with an earlier date (a fixed clock, a bad record) still counts by its number."""
    span = version_span([(2, "2020-01-01"), (1, "2021-01-01")])
    assert span == VersionSpan(2, "2021-01-01", "2020-01-01")


def test_a_history_without_v1_starts_at_its_lowest_version() -> None:
    assert version_span([(3, "c"), (2, "b")]) == VersionSpan(3, "b", "c")


def test_of_repeated_numbers_the_one_listed_first_is_the_earlier() -> None:
    assert version_span([(1, "first"), (1, "second")]) == VersionSpan(1, "first", "second")
