"""Field cleaning: the fast path (printable text) and the regex path must clean alike."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from paperfeed.domain.models import Paper
from paperfeed.domain.validation import InvalidRecord, build_paper, clean_text

SEEN = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)


@pytest.mark.parametrize(
    ("raw", "clean"),
    [
        ("  Plain   title\n", "Plain title"),
        ("Already clean", "Already clean"),
        (" lead", "lead"),
        ("trail ", "trail"),
        ("two  spaces", "two spaces"),
        ("x\x00y", "x y"),  # no whitespace at all: splitting hands back the very same string
        ("tab\tand\r\nnewline", "tab and newline"),
        ("no\u00a0break\u2009thin", "no break thin"),  # Unicode spaces collapse
        ("nul\x00byte", "nul byte"),  # C0 control
        ("bell\x07 and\x1b escape", "bell and escape"),
        ("sep\x1cfile\x85next", "sep file next"),  # control characters that are also whitespace
        ("c1\x90char", "c1 char"),
        ("bidi \u202eevil\u202c text", "bidi evil text"),
        ("\ufeffBOM first", "BOM first"),
        ("isolate\u2066x\u2069", "isolate x"),
        ("soft\u00adhyphen", "soft\u00adhyphen"),  # non-printable, not a control: kept
        ("private \ue000 use", "private \ue000 use"),
        ("Naïve résumé — 東京", "Naïve résumé — 東京"),
    ],
)
def test_clean_text(raw: str, clean: str) -> None:
    assert clean_text(raw, "title", limit=100) == clean


def test_clean_text_rejects() -> None:
    with pytest.raises(InvalidRecord, match="undecodable"):
        clean_text("lone \ud800 surrogate", "title", limit=100)
    with pytest.raises(InvalidRecord, match="too long"):
        clean_text("x" * 101, "title", limit=100)
    with pytest.raises(InvalidRecord, match="expected a string"):
        clean_text(5, "title", limit=100)
    with pytest.raises(InvalidRecord, match="empty"):
        clean_text(" \x00 \n", "title", limit=100, required=True)
    assert clean_text("  \x07 ", "comment", limit=100) is None
    assert clean_text("a" + " " * 300 + "b", "title", limit=100) == "a b"  # limit after collapsing


def _paper(**fields: object) -> Paper:
    return build_paper({"id": "2401.00001", "title": "T", **fields}, source="s", seen_at=SEEN)


def test_lists_are_cleaned_deduplicated_in_order() -> None:
    paper = _paper(authors=[" Ada  Lovelace", "Alan\tTuring", "Ada Lovelace", "", "  ", "Grace\x00Hopper"])
    assert paper.authors == ("Ada Lovelace", "Alan Turing", "Grace Hopper")
    paper = _paper(authors=["B", "A", "B", "C"], categories=["cs.LG", "cs.AI", "cs.LG"])
    assert paper.authors == ("B", "A", "C")
    assert paper.categories == ("cs.LG", "cs.AI")
    assert _paper(authors=["sep\x1cname", "bidi\u202ename"]).authors == (
        "sep name",
        "bidi name",
    )


@pytest.mark.parametrize(
    ("authors", "field", "reason"),
    [
        (["ok", 5], "authors[1]", "expected a string"),
        (["ok", "bad \udc80"], "authors[1]", "undecodable"),
        (["ok", "x" * 2001], "authors[1]", "too long"),
        ("Ada Lovelace", "authors", "expected a list"),
    ],
)
def test_list_rejects_name_the_item(authors: object, field: str, reason: str) -> None:
    with pytest.raises(InvalidRecord) as info:
        _paper(authors=authors)
    assert info.value.field == field
    assert reason in info.value.reason


def test_sources_stamp_is_the_seen_time_in_utc() -> None:
    local = datetime.fromisoformat("2026-01-02T05:04:05+02:00")
    first = build_paper({"id": "2401.00001", "title": "T"}, source="a", seen_at=local)
    second = build_paper({"id": "2401.00002", "title": "T"}, source="b", seen_at=SEEN)
    assert first.sources == {"a": "2026-01-02T03:04:05Z"}
    assert second.sources == {"b": "2026-01-02T03:04:05Z"}


@pytest.mark.parametrize(
    "published",
    [
        "1665-03-06",  # the first issue of the Philosophical Transactions
        "1687-07-05",
        "1905-06-30",
        "1948-07-01T00:00:00Z",
        "1965-04-19",
        "1979-12-31",
        "2026-12-31",  # within a year of the record being seen (SEEN is 2026-01-02)
    ],
)
def test_every_plausible_year_of_a_scholarly_work_is_accepted(published: str) -> None:
    paper = _paper(published=published, updated=published)
    assert paper.published is not None
    assert paper.published.date().isoformat() == published[:10]


@pytest.mark.parametrize(
    ("published", "reason"),
    [
        ("0801-01-01", "year 801 is before 1600"),
        ("1599-12-31", "year 1599 is before 1600"),
        ("0001-01-01T00:00:00+01:00", "year 1 is before 1600"),  # no UTC time exists for it
        ("9999-12-31T23:00:00-05:00", "out of range"),
        ("2027-03-01", "more than a year in the future"),
        ("801-01-01", "not an ISO-8601 date"),
    ],
)
def test_impossible_dates_are_rejected_with_the_reason(published: str, reason: str) -> None:
    with pytest.raises(InvalidRecord) as info:
        _paper(published=published)
    assert info.value.field == "published"
    assert reason in info.value.reason
