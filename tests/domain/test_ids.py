from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from paperfeed.domain.ids import ArxivId, InvalidPaperId, normalize_paper_id, parse_arxiv_id, prefixed_id


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2401.09603", ArxivId("2401.09603")),
        ("2401.09603v2", ArxivId("2401.09603", 2)),
        ("0704.0001", ArxivId("0704.0001")),
        ("1412.9999v10", ArxivId("1412.9999", 10)),
        ("hep-th/9901001", ArxivId("hep-th/9901001")),
        ("hep-th/9901001v3", ArxivId("hep-th/9901001", 3)),
        ("math.AG/0601001", ArxivId("math/0601001")),
        ("cond-mat.supr-con/0011267v1", None),  # subject class with a dash is not an id form
        ("https://arxiv.org/abs/2401.09603v1", ArxivId("2401.09603", 1)),
        ("http://arxiv.org/abs/cond-mat/0011267v1", ArxivId("cond-mat/0011267", 1)),
        ("https://arxiv.org/pdf/2401.09603.pdf", ArxivId("2401.09603")),
        ("arXiv:2401.09603", ArxivId("2401.09603")),
        ("oai:arXiv.org:0801.3673", ArxivId("0801.3673")),
        ("  2401.09603  ", ArxivId("2401.09603")),
    ],
)
def test_parse_arxiv_id_spellings(text: str, expected: ArxivId | None) -> None:
    if expected is None:
        with pytest.raises(InvalidPaperId):
            parse_arxiv_id(text)
    else:
        assert parse_arxiv_id(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "",
        "abc",
        "2413.00001",
        "2401.0960",
        "1401.09603",
        "2401.09603v0",
        "hep-th/9913001",
        "2401.09603v",
        "x" * 300,
    ],
)
def test_invalid_ids_say_why(text: str) -> None:
    with pytest.raises(InvalidPaperId, match="not an arXiv id"):
        parse_arxiv_id(text)


def test_versions_round_trip_to_string() -> None:
    assert str(parse_arxiv_id("hep-th/9901001v2")) == "hep-th/9901001v2"
    assert str(parse_arxiv_id("2401.09603")) == "2401.09603"


def test_prefixed_ids_for_non_arxiv_papers() -> None:
    assert prefixed_id("scifact", "4983") == "scifact:4983"
    assert normalize_paper_id("scifact:4983") == ArxivId("scifact:4983")
    with pytest.raises(InvalidPaperId):
        prefixed_id("scifact", "has space")
    with pytest.raises(InvalidPaperId):
        normalize_paper_id("https://example.org/x")


@given(st.text(max_size=80))
def test_parser_accepts_or_rejects_cleanly(text: str) -> None:
    try:
        parsed = normalize_paper_id(text)
    except InvalidPaperId:
        return
    assert parsed.base
    assert parsed.base == parsed.base.strip()
    assert normalize_paper_id(str(parsed)) == parsed


@given(st.integers(7, 26), st.integers(1, 12), st.integers(1, 9999), st.one_of(st.none(), st.integers(1, 99)))
def test_new_style_ids_round_trip(year: int, month: int, number: int, version: int | None) -> None:
    yymm = f"{year:02d}{month:02d}"
    digits = 5 if int(yymm) >= 1501 else 4
    base = f"{yymm}.{number:0{digits}d}"
    text = base + (f"v{version}" if version else "")
    assert parse_arxiv_id(text) == ArxivId(base, version)
