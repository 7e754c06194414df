"""Recognising arXiv ids in bibliography entries, and detecting formats (pure functions, no I/O)."""

from __future__ import annotations

from pathlib import Path

import pytest

from paperfeed.adapters.sources.bibliography import detect_format, find_arxiv_id, parse_bibliography
from paperfeed.domain.library import BibliographyError


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        ({"eprint": "2401.00001v3", "archiveprefix": "arXiv"}, "2401.00001"),
        ({"eprint": "arXiv:2401.00001"}, "2401.00001"),  # no prefix field: still an arXiv eprint
        ({"eprint": "hep-th/9901001", "eprinttype": "arxiv"}, "hep-th/9901001"),
        ({"eprint": "math.AG/0601001"}, "math/0601001"),  # subject class is not part of the id
        ({"eprint": "12345678", "eprinttype": "pubmed"}, None),
        ({"eprint": "2401.00001", "archiveprefix": "PubMed"}, None),  # another archive's number
        ({"arxivid": "1706.03762"}, "1706.03762"),
        ({"doi": "10.48550/arXiv.2402.00002"}, "2402.00002"),
        ({"doi": "https://doi.org/10.48550/ARXIV.2402.00002"}, "2402.00002"),
        ({"doi": "10.1145/3442188.3445922"}, None),
        ({"url": "https://arxiv.org/pdf/2403.00003v2.pdf"}, "2403.00003"),
        ({"url": "http://export.arxiv.org/abs/astro-ph/0601001"}, "astro-ph/0601001"),
        ({"url": "https://example.org/arxiv.org/abs/not-an-id"}, None),
        ({"journal": "arXiv preprint arXiv:1810.04805"}, "1810.04805"),
        ({"note": "arXiv: 2404.00004 [cs.LG]"}, "2404.00004"),
        ({"journal": "Nature", "volume": "521"}, None),
        ({"eprint": "2415.00001"}, None),  # month 15
    ],
)
def test_find_arxiv_id(fields: dict[str, str], expected: str | None) -> None:
    assert find_arxiv_id(fields) == expected


@pytest.mark.parametrize(
    ("name", "text", "expected"),
    [
        ("refs.bib", "anything", "bibtex"),
        ("zotero.json", "anything", "csl-json"),
        ("list.txt", "@article{x,}", "ids"),
        ("upload", '  [{"id": "x"}]', "csl-json"),
        ("upload", "% comment\n@article{x, title={y}}", "bibtex"),
        ("upload", "2401.00001\n", "ids"),
    ],
)
def test_detect_format(name: str, text: str, expected: str) -> None:
    assert detect_format(Path(name), text) == expected


def test_bibtex_string_macros_and_braces() -> None:
    text = (
        '@string{ax = "arXiv"}\n'
        "@article{k,\n  title = {{BERT}: Pre-training},\n  eprint = {1810.04805},\n  archivePrefix = ax\n}\n"
    )
    [work] = parse_bibliography(text.encode(), "m.bib")
    assert (work.where, work.arxiv_id, work.title) == ("m.bib:2 (k)", "1810.04805", "BERT: Pre-training")


def test_an_empty_or_oversized_file() -> None:
    assert parse_bibliography(b"", "empty.bib") == []
    with pytest.raises(BibliographyError, match=r"huge\.txt: the file is larger than the 20,971,520 bytes"):
        parse_bibliography(b"2401.00001\n" * (2 * 2**20), "huge.txt")


def test_csl_json_that_is_not_a_list() -> None:
    with pytest.raises(BibliographyError, match=r"x\.json: CSL-JSON must be an array of items, got a str"):
        parse_bibliography(b'"hello"', "x.json")
    [work] = parse_bibliography(
        b'{"items": [{"id": "a", "URL": "https://arxiv.org/abs/2401.00001"}]}', "b.json"
    )
    assert work.arxiv_id == "2401.00001"
