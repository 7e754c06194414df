"""Reading files of citations (no store): ids, formats, rejects with file:line, gzip or plain, resuming
from a saved place, a file that breaks off."""

from __future__ import annotations

import gzip
from pathlib import Path
from typing import Any

import pytest

from paperfeed.adapters.sources.citation_files import LocalCitationFiles, detect_format
from paperfeed.adapters.sources.jsonl_file import MAX_LINE_BYTES
from paperfeed.domain.citation_import import (
    EdgeDetail,
    ImportFormat,
    InvalidWorkId,
    UnreadableCitationFile,
    provenance,
    s2_corpus_key,
    work_ref,
)
from paperfeed.domain.paper_graph import arxiv_month_day

from .conftest import S2_CITING, batches, s2_citation_record, s2_paper_record, write_lines


@pytest.mark.parametrize(
    ("given", "key"),
    [
        ("hep-th/9407087", "hep-th/9407087"),
        ("hep-th/9407087v3", "hep-th/9407087"),
        ("math.AG/0601001", "math/0601001"),
        ("2401.12345", "2401.12345"),
        ("2401.12345v2", "2401.12345"),
        ("0704.0001", "0704.0001"),
        ("arXiv:2401.12345", "2401.12345"),
        ("https://arxiv.org/abs/2401.12345v1", "2401.12345"),
        (" 2401.12345 ", "2401.12345"),
        ("10.1103/PhysRevLett.116.061102", "doi:10.1103/physrevlett.116.061102"),
        ("doi:10.1103/PhysRevLett.116.061102", "doi:10.1103/physrevlett.116.061102"),
        ("https://doi.org/10.1038/35002501", "doi:10.1038/35002501"),
        ("http://dx.doi.org/10.1038/35002501", "doi:10.1038/35002501"),
        ("10.48550/arXiv.2401.12345", "2401.12345"),
    ],
)
def test_ids_of_a_pairs_file(given: str, key: str) -> None:
    assert work_ref(given) == key


@pytest.mark.parametrize(
    ("given", "reason"),
    [
        ("10.12/short-prefix", "not a DOI"),
        ("doi:nonsense", "not an arXiv id or a DOI"),
        ("2401.1234", "not an arXiv id or a DOI"),  # 2015 on: five digits
        ("hep-th/9413087", "not an arXiv id or a DOI"),  # month 13
        ("Einstein 1905", "not an arXiv id or a DOI"),
        ("", "empty id"),
    ],
)
def test_ids_that_are_no_ids(given: str, reason: str) -> None:
    with pytest.raises(InvalidWorkId, match=reason):
        work_ref(given)


def test_corpus_ids_and_provenance() -> None:
    assert s2_corpus_key(1138704) == s2_corpus_key("1138704") == "s2corpus:1138704"
    assert [s2_corpus_key(v) for v in (0, -3, True, "12a", 1.5, None, "")] == [None] * 7
    assert provenance(ImportFormat.PAIRS, "edges.tsv.gz") == "file:edges.tsv.gz"
    assert provenance(ImportFormat.S2_CITATIONS, "c-0.gz") == "s2-datasets:c-0.gz"
    assert provenance(ImportFormat.OPENALEX, "part_000.gz") == "openalex-snapshot:part_000.gz"


def test_an_arxiv_key_names_its_month() -> None:
    assert arxiv_month_day("hep-th/9407087") == 19940700
    assert arxiv_month_day("math/0601001") == 20060100
    assert arxiv_month_day("2401.12345") == 20240100
    assert arxiv_month_day("0704.0001") == 20070400
    assert arxiv_month_day("doi:10.1/x") == arxiv_month_day("openalex:W1") == 0


def test_the_format_is_told_by_the_first_record() -> None:
    assert detect_format(b"hep-th/9407087\thep-th/9501001") is ImportFormat.PAIRS
    assert detect_format(b"citing_id,cited_id") is ImportFormat.PAIRS
    assert detect_format(b'{"citing": "2401.00001", "cited": "2402.00002"}') is ImportFormat.PAIRS
    assert (
        detect_format(b'{"citationid": 1, "citingcorpusid": 2, "citedcorpusid": 3}')
        is ImportFormat.S2_CITATIONS
    )
    assert detect_format(b'{"corpusid": 2, "externalids": {}}') is ImportFormat.S2_PAPERS
    assert (
        detect_format(b'{"id": "https://openalex.org/W1", "referenced_works": []}') is ImportFormat.OPENALEX
    )
    assert detect_format(None) is ImportFormat.PAIRS
    with pytest.raises(UnreadableCitationFile, match=r"its keys: a, b"):
        detect_format(b'{"a": 1, "b": 2}')
    with pytest.raises(UnreadableCitationFile, match="expected two ids"):
        detect_format(b"just one word")


def _edges(path: Path, fmt: Any = None, size: int = 1000) -> list[tuple[str, str]]:
    return [e for b in batches(path, fmt, size=size) for e in b.edges]


def _rejects(path: Path, fmt: Any = None) -> list[str]:
    return [str(r) for b in batches(path, fmt) for r in b.rejects]


def test_a_tsv_with_header_comments_and_bad_lines(tmp_path: Path) -> None:
    f = write_lines(
        tmp_path / "edges.tsv",
        [
            "citing_id\tcited_id",
            "# Paperscape, 1994",
            "hep-th/9407087\thep-th/9501001v2",
            "",
            "hep-th/9407087\t10.1103/PhysRevD.50.1234\textra column ignored",
            "hep-th/9407087",
            "hep-th/9407087\tnot-an-id",
            "Einstein\thep-th/9501001",
            "2401.12345\t10.12/bad",
        ],
    )
    assert _edges(f) == [
        ("hep-th/9407087", "hep-th/9501001"),
        ("hep-th/9407087", "doi:10.1103/physrevd.50.1234"),
    ]
    where = str(f)
    assert _rejects(f) == [
        f"{where}:6: expected two ids (citing, cited) separated by a tab or a comma",
        f"{where}:7: cited: not an arXiv id or a DOI: 'not-an-id'",
        f"{where}:8: citing: not an arXiv id or a DOI: 'Einstein'",
        f"{where}:9: cited: not a DOI (10.<4-9 digits>/<suffix>): '10.12/bad'",
    ]
    assert sum(b.records for b in batches(f)) == 6  # the header, the comment and the blank line are none


def test_csv_quoted_jsonl_crlf_and_a_byte_order_mark(tmp_path: Path) -> None:
    csv_file = tmp_path / "edges.csv"
    csv_file.write_bytes(b'\xef\xbb\xbf2401.00001,"10.1000/a,b"\r\n"2401.00001","arXiv:2402.00002v3"\r\n')
    assert _edges(csv_file) == [("2401.00001", "doi:10.1000/a,b"), ("2401.00001", "2402.00002")]
    jsonl = write_lines(
        tmp_path / "edges.jsonl",
        [
            {"citing": "2401.00001", "cited": "2402.00002"},
            {"citing_id": "2401.00001", "cited_id": "hep-th/9407087"},
            {"citing": "2401.00001", "cited": 7},
            "[1, 2]",
            "{broken",
        ],
    )
    assert _edges(jsonl) == [("2401.00001", "2402.00002"), ("2401.00001", "hep-th/9407087")]
    reasons = [r.split(": ", 1)[1] for r in _rejects(jsonl)]
    assert reasons[:2] == [
        "expected string fields citing and cited (or citing_id, cited_id)",
        "expected a JSON object, got list",
    ]
    assert reasons[2].startswith("bad JSON: ")
    assert len(reasons) == 3


def test_gzip_and_plain_read_alike_and_a_saved_place_gives_the_rest(tmp_path: Path) -> None:
    lines = [f"hep-th/94{m:02d}{n:03d}\thep-th/9401001" for m in range(1, 13) for n in range(2, 60)]
    plain = write_lines(tmp_path / "e.tsv", lines)
    packed = write_lines(tmp_path / "e.tsv.gz", lines, gz=True)
    whole = batches(plain, size=100)
    assert [b.edges for b in whole] == [b.edges for b in batches(packed, size=100)]
    assert [b.point for b in whole] == [b.point for b in batches(packed, size=100)]
    assert whole[-1].point.line == len(lines)
    assert whole[-1].point.offset == plain.stat().st_size
    for path in (plain, packed):
        middle = whole[3].point
        rest = batches(path, size=100, start=middle)
        assert [e for b in rest for e in b.edges] == [e for b in whole[4:] for e in b.edges]
        assert rest[-1].point == whole[-1].point


def test_a_line_over_the_cap_and_a_file_that_breaks_off(tmp_path: Path) -> None:
    big = tmp_path / "big.tsv"
    big.write_bytes(
        b"2401.00001\t2402.00002\n" + b"x" * (MAX_LINE_BYTES + 10) + b"\n2401.00001\t2403.00003\n"
    )
    assert _edges(big) == [("2401.00001", "2402.00002"), ("2401.00001", "2403.00003")]
    assert _rejects(big) == [f"{big}:2: line longer than {MAX_LINE_BYTES:,} bytes"]

    whole = gzip.compress(b"".join(f"2401.00001\t2402.{n:05d}\n".encode() for n in range(1, 20001)))
    cut = tmp_path / "cut.tsv.gz"
    cut.write_bytes(whole[: len(whole) // 2])
    read = batches(cut, size=5000)
    rejects = [r for b in read for r in b.rejects]
    assert len(rejects) == 1
    assert rejects[0].fatal
    assert "file unreadable from here" in rejects[0].reason
    got = [e for b in read for e in b.edges]
    assert 0 < len(got) < 20000
    assert read[-1].point.line == len(got)  # the place after the last whole line read


def _s2_files(tmp_path: Path, references: list[dict[str, Any]]) -> tuple[Path, Path]:
    papers = [s2_paper_record(e["citedPaper"]) for e in references if e["citedPaper"].get("paperId")]
    cites = [
        s2_citation_record(n, S2_CITING, e["citedPaper"].get("corpusId"), e) for n, e in enumerate(references)
    ]
    return (
        write_lines(tmp_path / "citations-0.jsonl.gz", cites, gz=True),
        write_lines(tmp_path / "papers-0.jsonl.gz", papers, gz=True),
    )


@pytest.mark.shared
def test_s2_datasets_records(tmp_path: Path, s2_references: list[dict[str, Any]]) -> None:
    cites, papers = _s2_files(tmp_path, s2_references)
    assert LocalCitationFiles().open(str(cites), None, batch_size=10).mark.format is ImportFormat.S2_CITATIONS
    read = batches(cites)
    edges = [e for b in read for e in b.edges]
    resolved = [e for e in s2_references if e["citedPaper"].get("corpusId")]
    assert len(edges) == len(resolved) == 147
    assert sum(b.unkeyed for b in read) == 9  # S2 matched 9 references to no paper
    assert not [r for b in read for r in b.rejects]
    assert edges[0] == (f"s2corpus:{S2_CITING}", f"s2corpus:{resolved[0]['citedPaper']['corpusId']}")
    details = {k: v for b in read for k, v in b.details.items()}
    with_context = next(e for e in resolved if e["contexts"])
    pair = (f"s2corpus:{S2_CITING}", f"s2corpus:{with_context['citedPaper']['corpusId']}")
    assert details[pair].contexts == tuple(with_context["contexts"])
    assert set(details[pair].intents) == set(with_context["intents"])

    works = [w for b in batches(papers) for w in b.works]
    aliases = dict(a for b in batches(papers) for a in b.aliases)
    arxiv = next(e["citedPaper"] for e in resolved if (e["citedPaper"]["externalIds"] or {}).get("ArXiv"))
    assert aliases[f"s2corpus:{arxiv['corpusId']}"] == arxiv["externalIds"]["ArXiv"]
    work = next(w for w in works if w.key == arxiv["externalIds"]["ArXiv"])
    assert (work.title, work.s2_id, work.year) == (arxiv["title"], arxiv["paperId"], arxiv["year"])
    doi = arxiv["externalIds"].get("DOI")
    if doi and not doi.lower().startswith("10.48550/"):
        assert aliases[f"doi:{doi.lower()}"] == arxiv["externalIds"]["ArXiv"]
    plain = next(e["citedPaper"] for e in resolved if not (e["citedPaper"]["externalIds"] or {}).get("ArXiv"))
    expected = (
        f"doi:{plain['externalIds']['DOI'].lower()}"
        if plain["externalIds"].get("DOI")
        else f"s2:{plain['paperId']}"
    )
    assert aliases[f"s2corpus:{plain['corpusId']}"] == expected


def test_s2_records_of_older_releases_and_bad_ones(tmp_path: Path) -> None:
    f = write_lines(
        tmp_path / "citations.jsonl",
        [
            # the 2023 releases: corpus ids as text, flat intents, an ``updated`` stamp
            '{"citingcorpusid":"17821850","citedcorpusid":"784288","isinfluential":false,'
            '"contexts":["Index Terms"],"intents":["methodology"],"updated":"2020-09-05T19:44:18.575Z"}',
            {
                "citationid": 1,
                "citingcorpusid": 5,
                "citedcorpusid": 6,
                "isinfluential": True,
                "contexts": ["a", "b"],
                "intents": [["background", "result"], None],
            },
            {"citationid": 2, "citingcorpusid": 5, "citedcorpusid": "x7", "isinfluential": False},
            {"citationid": 3, "citingcorpusid": 5, "isinfluential": False},
            {"citationid": 4, "citingcorpusid": 5, "citedcorpusid": 8, "isinfluential": "yes"},
            {"citationid": 5, "citingcorpusid": 5, "citedcorpusid": 8, "contexts": "one"},
            {"citationid": 6, "citingcorpusid": None, "citedcorpusid": 8},
        ],
    )
    read = batches(f, ImportFormat.S2_CITATIONS)
    details = {k: v for b in read for k, v in b.details.items()}
    assert details[("s2corpus:17821850", "s2corpus:784288")] == EdgeDetail(
        False, ("Index Terms",), ("methodology",)
    )
    assert details[("s2corpus:5", "s2corpus:6")] == EdgeDetail(True, ("a", "b"), ("background", "result"))
    assert sum(b.unkeyed for b in read) == 1
    assert [r.split(": ", 1)[1] for r in _rejects(f, ImportFormat.S2_CITATIONS)] == [
        "citedcorpusid: not a corpus id: 'x7'",
        "citedcorpusid: missing",
        "isinfluential: expected true, false or null",
        "contexts: expected a list of strings or null",
    ]


@pytest.mark.shared
def test_openalex_snapshot_records(tmp_path: Path, openalex_works: list[dict[str, Any]]) -> None:
    f = write_lines(tmp_path / "part_000.gz", openalex_works, gz=True)
    read = batches(f)
    assert LocalCitationFiles().open(str(f), None, batch_size=10).mark.format is ImportFormat.OPENALEX
    assert not [r for b in read for r in b.rejects]
    works = [w for b in read for w in b.works]
    assert len(works) == len(openalex_works)
    first = openalex_works[0]
    assert works[0].key == "doi:" + first["doi"].removeprefix("https://doi.org/").lower()
    assert works[0].openalex_id == first["id"].rsplit("/", 1)[1]
    refs = [e for e in read[0].edges if e[0] == works[0].key]
    assert [c for _, c in refs] == [
        f"openalex:{r.rsplit('/', 1)[1]}" for r in dict.fromkeys(first["referenced_works"])
    ]
    aliases = dict(a for b in read for a in b.aliases)
    assert aliases[f"openalex:{works[0].openalex_id}"] == works[0].key

    bad = write_lines(
        tmp_path / "bad.jsonl",
        [
            {"id": "https://openalex.org/A123", "referenced_works": []},
            {"id": "https://openalex.org/W1", "referenced_works": "W2"},
            {"id": "https://openalex.org/W1", "referenced_works": ["https://openalex.org/W2", "nope"]},
            {"id": "https://openalex.org/W3", "doi": None, "ids": {"openalex": "https://openalex.org/W3"}},
        ],
    )
    assert [r.split(": ", 1)[1] for r in _rejects(bad, ImportFormat.OPENALEX)] == [
        "id: not an OpenAlex work id: 'https://openalex.org/A123'",
        "referenced_works: expected a list of OpenAlex ids or null",
        "referenced_works[1]: not an OpenAlex work id: 'nope'",
    ]
    assert [w.key for b in batches(bad, ImportFormat.OPENALEX) for w in b.works] == ["openalex:W3"]


def test_files_that_cannot_be_read_at_all(tmp_path: Path) -> None:
    files = LocalCitationFiles()
    with pytest.raises(UnreadableCitationFile, match="no such file"):
        files.open(str(tmp_path / "missing.tsv"), None, batch_size=10)
    with pytest.raises(UnreadableCitationFile, match="not a file"):
        files.open(str(tmp_path), None, batch_size=10)
    junk = tmp_path / "junk.bin"
    junk.write_bytes(bytes(range(256)) * 10)
    with pytest.raises(UnreadableCitationFile, match="not text"):
        files.open(str(junk), None, batch_size=10)
    fake_gz = tmp_path / "fake.gz"
    fake_gz.write_bytes(b"\x1f\x8b\x08\x00garbage-garbage")
    with pytest.raises(UnreadableCitationFile, match="cannot read it"):
        files.open(str(fake_gz), None, batch_size=10)
