"""The OAI-PMH page parser on every real arXiv OAI fixture, the three formats, errors and retries."""

from __future__ import annotations

import functools
import re
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest

from paperfeed.adapters.sources.http import PoliteClient
from paperfeed.adapters.sources.oai_pmh import (
    OaiPage,
    OaiProtocolError,
    fetch_page,
    list_params,
    parse_page,
    split_author_string,
)
from paperfeed.domain.arxiv_subjects import SUBJECT_CODES, subject_category
from paperfeed.domain.errors import OaiError
from paperfeed.domain.models import Paper
from tests.support.http_server import ReplayServer, Reply

pytestmark = pytest.mark.shared

FILES = [
    "arXivRaw_2014_arxivsync/47001.xml",
    "arXiv_format_2013_arxivsync/2013-05-25T06_45_57+10_00_436115_5001.xml",
    "arXiv_format_2013_arxivsync/406001.xml",
    "oai_dc_2023_SciXHarvester/GetRecord_data.xml",
    "oai_dc_2023_SciXHarvester/ListIdentifiers_data.xml",
    "oai_dc_2023_SciXHarvester/ListRecords_data_0.xml",
    "oai_dc_2023_SciXHarvester/ListRecords_data_1.xml",
    "oai_dc_2023_SciXHarvester/ListRecords_data_2.xml",
]
SEEN = datetime(2026, 1, 1, tzinfo=UTC)


@pytest.fixture
def oai_dir(fixtures_dir: Path) -> Path:
    return fixtures_dir / "oai_pmh"


@functools.cache
def _parse(path: Path) -> OaiPage:
    """Parsed once per test session: the pages are big and the tests only read them."""
    return parse_page(path.read_bytes(), seen_at=SEEN, label=path.name)


def _by_id(page: OaiPage) -> dict[str, Paper]:
    return {p.id: p for p in page.papers}


def test_every_oai_fixture_file_is_covered(oai_dir: Path) -> None:
    assert sorted(str(p.relative_to(oai_dir)) for p in oai_dir.rglob("*.xml")) == sorted(FILES)


@pytest.mark.parametrize("name", FILES)
def test_every_record_is_accounted_for(oai_dir: Path, name: str) -> None:
    """papers + rejects + deleted == <record> elements counted by regex, not by the parser."""
    data = (oai_dir / name).read_bytes()
    page = _parse(oai_dir / name)
    records = len(re.findall(rb"<record>", data))
    deleted = len(re.findall(rb"<header[^>]*status=[\"']deleted[\"']", data))
    assert page.records == records
    assert len(page.papers) + len(page.rejects) + len(page.deleted) == records
    assert len(page.deleted) == deleted
    assert page.rejects == []  # real arXiv data: every record is valid
    header_ids = re.findall(rb"<identifier>oai:arXiv\.org:([^<]+)</identifier>", data)
    if records:
        assert sorted(p.id for p in page.papers) == sorted(i.decode() for i in header_ids)
    else:  # ListIdentifiers: headers only
        assert [h.identifier for h in page.headers] == [f"oai:arXiv.org:{i.decode()}" for i in header_ids]
    assert page.recovered is False


EXPECTED = {  # file -> (verb, records, headers, next token, cursor, completeListSize, max datestamp)
    "arXivRaw_2014_arxivsync/47001.xml": (
        "ListRecords",
        1000,
        0,
        "496549|47001",
        46000,
        907096,
        "2014-01-15",
    ),
    "arXiv_format_2013_arxivsync/2013-05-25T06_45_57+10_00_436115_5001.xml": (
        "ListRecords",
        1000,
        0,
        "436115|5001",
        4000,
        846926,
        "2013-04-03",
    ),
    "arXiv_format_2013_arxivsync/406001.xml": (
        "ListRecords",
        1000,
        0,
        "436115|406001",
        405000,
        846926,
        "2013-05-24",
    ),
    "oai_dc_2023_SciXHarvester/GetRecord_data.xml": ("GetRecord", 1, 0, None, None, None, "2022-06-16"),
    "oai_dc_2023_SciXHarvester/ListIdentifiers_data.xml": (
        "ListIdentifiers",
        0,
        2265,
        None,
        None,
        None,
        "2023-03-07",
    ),
    "oai_dc_2023_SciXHarvester/ListRecords_data_0.xml": (
        "ListRecords",
        1000,
        0,
        "6511260|1001",
        0,
        2265,
        "2023-03-07",
    ),
    "oai_dc_2023_SciXHarvester/ListRecords_data_1.xml": (
        "ListRecords",
        1000,
        0,
        "6511260|2001",
        1000,
        2265,
        "2023-03-07",
    ),
    "oai_dc_2023_SciXHarvester/ListRecords_data_2.xml": (
        "ListRecords",
        265,
        0,
        None,
        2000,
        2265,
        "2023-03-07",
    ),
}


@pytest.mark.parametrize("name", FILES)
def test_page_level_facts(oai_dir: Path, name: str) -> None:
    verb, records, headers, token, cursor, size, stamp = EXPECTED[name]
    page = _parse(oai_dir / name)
    assert (page.verb, page.records, len(page.headers), page.next_token) == (verb, records, headers, token)
    if cursor is not None or size is not None:
        assert page.resumption is not None
        assert (page.resumption.cursor, page.resumption.complete_list_size) == (cursor, size)
    assert page.max_datestamp == stamp


def test_list_identifiers_headers(oai_dir: Path) -> None:
    page = _parse(oai_dir / "oai_dc_2023_SciXHarvester/ListIdentifiers_data.xml")
    first, last = page.headers[0], page.headers[-1]
    assert (first.identifier, first.datestamp, first.sets) == (
        "oai:arXiv.org:0806.4410",
        "2023-03-07",
        ("math",),
    )
    assert last.identifier == "oai:arXiv.org:nlin/0202021"
    assert last.sets == ("physics:nlin",)
    assert any(h.sets == ("cs", "eess") for h in page.headers)
    assert page.papers == []
    assert page.deleted == []
    # The headers are exactly the records of the three ListRecords pages of the same harvest.
    listed = set()
    for n in range(3):
        listed |= {
            p.id for p in _parse(oai_dir / f"oai_dc_2023_SciXHarvester/ListRecords_data_{n}.xml").papers
        }
    assert {h.identifier.removeprefix("oai:arXiv.org:") for h in page.headers} == listed


def test_arxiv_raw_versions_and_flat_authors(oai_dir: Path) -> None:
    papers = _by_id(_parse(oai_dir / "arXivRaw_2014_arxivsync/47001.xml"))
    p = papers["0801.3674"]
    assert p.title == "A Study of Structure Formation and Reheating in the D3/D7 Brane Inflation Model"
    assert p.version == 4
    assert p.published == datetime(2008, 1, 23, 21, 13, 53, tzinfo=UTC)  # v1
    assert p.updated == datetime(2008, 9, 11, 22, 3, 53, tzinfo=UTC)  # v4
    assert p.authors == ("Robert H. Brandenberger", "Keshav Dasgupta", "Anne-Christine Davis")
    assert p.categories == ("hep-th", "astro-ph", "gr-qc", "hep-ph")
    assert p.journal_ref == "Phys.Rev.D78:083502,2008"
    assert p.doi == "10.1103/PhysRevD.78.083502"
    assert p.license == "http://arxiv.org/licenses/nonexclusive-distrib/1.0/"
    assert p.sources == {"arxiv-oai": "2026-01-01T00:00:00Z"}
    q = papers["0801.3679"]  # numbered, nested affiliations
    assert q.authors == ("Peter Anders", "Uta Fritze", "Richard de Grijs")
    assert q.version == 1
    assert q.published == q.updated
    assert q.categories == ("astro-ph",)


def test_arxiv_format_structured_authors(oai_dir: Path) -> None:
    p = _by_id(_parse(oai_dir / "arXiv_format_2013_arxivsync/2013-05-25T06_45_57+10_00_436115_5001.xml"))
    w = p["0704.4001"]
    assert w.title == "Warping and Supersymmetry Breaking"
    assert w.authors == ("Michael R. Douglas", "Jessie Shelton", "Gonzalo Torroba")
    assert w.published == datetime(2007, 4, 30, tzinfo=UTC)  # <created>
    assert w.updated == datetime(2008, 1, 28, tzinfo=UTC)  # <updated>
    assert w.comment == (
        "Latex, 29 pp, 1 figure. Reference added, some typos corrected and minor changes to the content"
    )
    assert w.version is None  # the arXiv format does not say
    s = p["0704.4002"]
    assert s.categories == ("math.AT", "math.GR")
    assert s.journal_ref == "J Topology 2008 1: 747-760"
    assert s.doi == "10.1112/jtopol/jtn021"
    q = _by_id(_parse(oai_dir / "arXiv_format_2013_arxivsync/406001.xml"))
    assert q["1302.0649"].license == "http://creativecommons.org/licenses/by/3.0/"
    assert q["1302.0649"].updated is None
    assert q["1302.0749"].authors == ("Namyoon Lee", "Robert W. Heath Jr")  # <suffix>
    assert q["1302.0749"].categories == ("cs.IT", "math.IT")
    lhcb = q["1302.1072"]
    assert lhcb.authors[:2] == ("LHCb collaboration", "R. Aaij")
    assert len(lhcb.authors) == 622
    assert "A. Pérez-Calero Yzquierdo" in lhcb.authors  # character references decoded


def test_oai_dc_get_record(oai_dir: Path) -> None:
    page = _parse(oai_dir / "oai_dc_2023_SciXHarvester/GetRecord_data.xml")
    (p,) = page.papers
    assert p.id == "2107.10460"
    assert p.title == "Anomalous High-Field Magnetotransport in CaFeAsF due to the Quantum Hall Effect"
    assert p.authors[:3] == ("Taichi Terashima", "Hishiro T. Hirose", "Naoki Kikugawa")
    assert len(p.authors) == 8
    assert p.categories == ("cond-mat.supr-con", "cond-mat.mtrl-sci", "cond-mat.str-el")
    assert p.abstract.startswith("CaFeAsF is an iron-based superconductor parent compound")
    assert p.comment == "18 pages, 1 table, 4 figures"
    assert p.published == datetime(2021, 7, 22, tzinfo=UTC)
    assert p.updated == datetime(2022, 6, 15, tzinfo=UTC)
    assert p.journal_ref == "npj Quantum Materials 7, 62 (2022)"
    assert p.doi == "10.1038/s41535-022-00470-6"


def test_oai_dc_list_records_fields(oai_dir: Path) -> None:
    page0 = _by_id(_parse(oai_dir / "oai_dc_2023_SciXHarvester/ListRecords_data_0.xml"))
    k = page0["0806.4410"]
    assert k.authors == ("Robert Baillie",)
    assert k.categories == ("math.CA", "math.NT")  # the MSC subject "40-01, 65B10" is not a category
    assert k.comment is not None
    assert k.comment.startswith("29 pages, 2 figures, 10 tables.")
    assert (k.published, k.updated) == (datetime(2008, 6, 27, tzinfo=UTC), datetime(2023, 3, 4, tzinfo=UTC))
    assert page0["2203.09894"].authors.count("M. Finger Jr.") == 1  # "Finger, Jr., M."
    assert page0["1905.10248"].authors[-1] == "K. W. West"  # a "." creator is dropped
    page2 = _by_id(_parse(oai_dir / "oai_dc_2023_SciXHarvester/ListRecords_data_2.xml"))
    old = page2["nlin/0202021"]
    assert old.categories == ("nlin.SI", "nlin.PS")
    assert old.published == datetime(2002, 2, 8, tzinfo=UTC)
    assert page2["2303.03124"].categories == ("cs.CL", "cs.AI")
    assert page2["2303.03124"].comment == "ACL Demo 2023 Submission"


def test_every_subject_name_in_the_fixtures_maps(oai_dir: Path) -> None:
    names: set[str] = set()
    for path in (oai_dir / "oai_dc_2023_SciXHarvester").glob("*.xml"):
        names |= {n.decode() for n in re.findall(rb"<dc:subject>([^<]+)</dc:subject>", path.read_bytes())}
    words = {n for n in names if not re.search(r"\d", n) and not re.fullmatch(r"[A-K]\.[a-z]", n)}
    assert len(words) == 141
    assert {n for n in words if subject_category(n) is None} == set()
    assert subject_category("Computer Science - Machine Learning") == "cs.LG"
    assert subject_category("computer science -  learning") == "cs.LG"  # old name, case and spaces
    assert subject_category("Mathematical Physics") == "math-ph"
    assert subject_category("Mathematics - Mathematical Physics") == "math.MP"
    assert subject_category("40-01, 65B10") is None
    assert subject_category("I.2.6") is None
    assert len(set(SUBJECT_CODES.values())) >= 155


# -- synthetic pages: formats' edge cases, deleted records, bad records, errors ---------------------

HEAD = (
    '<?xml version="1.0" encoding="UTF-8"?>\n<OAI-PMH xmlns="http://www.openarchives.org/OAI/2.0/">'
    "<responseDate>2024-01-01T00:00:00Z</responseDate>"
    '<request verb="ListRecords" metadataPrefix="{fmt}">http://x/oai</request><ListRecords>'
)
TAIL = "{token}</ListRecords></OAI-PMH>"


def _page(fmt: str, records: str, token: str = "") -> bytes:
    return (HEAD.format(fmt=fmt) + records + TAIL.format(token=token)).encode()


def _dc(ident: str, subjects: list[str], sets: list[str], extra: str = "") -> str:
    subj = "".join(f"<dc:subject>{s}</dc:subject>" for s in subjects)
    spec = "".join(f"<setSpec>{s}</setSpec>" for s in sets)
    return (
        f"<record><header><identifier>oai:arXiv.org:{ident}</identifier><datestamp>2024-01-0{len(sets)}"
        f"</datestamp>{spec}</header><metadata><oai_dc:dc xmlns:oai_dc="
        '"http://www.openarchives.org/OAI/2.0/oai_dc/" xmlns:dc="http://purl.org/dc/elements/1.1/">'
        f"<dc:title>T {ident}</dc:title><dc:creator>Doe, Jane</dc:creator>{subj}"
        f"<dc:identifier>http://arxiv.org/abs/{ident}</dc:identifier>{extra}</oai_dc:dc></metadata></record>"
    )


def test_oai_dc_unknown_primary_subject_falls_back_to_archive() -> None:
    page = parse_page(
        _page(
            "oai_dc",
            _dc("2401.00001", ["Computer Science - Brand New Field", "Statistics - Machine Learning"], ["cs"])
            + _dc("2401.00002", ["Quantum Gravity Nonsense"], ["physics:gr-qc", "physics:hep-th"])
            + _dc("2401.00003", ["Physics - Optics", "Mystery Subject"], ["physics:physics"])
            + _dc(
                "2401.00004",
                [],
                ["math"],
                "<dc:rights>http://creativecommons.org/licenses/by/4.0/</dc:rights>",
            ),
        )
    )
    got = {p.id: p.categories for p in page.papers}
    assert got == {
        "2401.00001": ("cs", "stat.ML"),  # archive from the subject's own prefix
        "2401.00002": ("gr-qc",),  # from the first setSpec
        "2401.00003": ("physics.optics",),  # unknown secondary subjects are dropped
        "2401.00004": ("math",),  # no subjects at all: the set
    }
    assert _by_id(page)["2401.00004"].license == "http://creativecommons.org/licenses/by/4.0/"


def test_deleted_records_are_skipped_and_counted() -> None:
    deleted = (
        '<record><header status="deleted"><identifier>oai:arXiv.org:2401.00009</identifier>'
        "<datestamp>2024-02-01</datestamp><setSpec>cs</setSpec></header></record>"
    )
    page = parse_page(_page("oai_dc", _dc("2401.00001", ["Computer Science - Robotics"], ["cs"]) + deleted))
    assert [p.id for p in page.papers] == ["2401.00001"]
    assert page.deleted == ["oai:arXiv.org:2401.00009"]
    assert page.records == 2
    assert page.max_datestamp == "2024-02-01"  # deleted records count for the high-water mark


RAW_NS = 'xmlns="http://arxiv.org/OAI/arXivRaw/"'


def _raw(ident: str, body: str) -> str:
    return (
        f"<record><header><identifier>oai:arXiv.org:{ident}</identifier><datestamp>2024-01-01</datestamp>"
        f"</header><metadata><arXivRaw {RAW_NS}><id>{ident}</id>{body}</arXivRaw></metadata></record>"
    )


def test_bad_records_become_rejects_naming_the_oai_id_and_field() -> None:
    ok = "<version version='v1'><date>Mon, 1 Jan 2024 10:00:00 GMT</date></version><title>Fine</title>"
    page = parse_page(
        _page(
            "arXivRaw",
            _raw("2401.00001", ok)
            + _raw("2401.00002", "<version version='v1'><date>Mon, 1 Jan 2024 10:00:00 GMT</date></version>")
            + _raw("2401.00003", "<version version='v1'><date>yesterday-ish</date></version><title>X</title>")
            + _raw(
                "2401.00004", "<version version='vX'><date>Mon, 1 Jan 2024</date></version><title>X</title>"
            )
            + _raw("9999.99999", ok)
            + _raw("2401.00006", ok + "<categories>cs.AI b@d</categories>"),
        )
    )
    assert [p.id for p in page.papers] == ["2401.00001"]
    got = [(r.where, r.field) for r in page.rejects]
    assert got == [
        ("oai:arXiv.org:2401.00002", "title"),
        ("oai:arXiv.org:2401.00003", "version[v1].date"),
        ("oai:arXiv.org:2401.00004", "version"),
        ("oai:arXiv.org:9999.99999", "id"),
        ("oai:arXiv.org:2401.00006", "categories"),
    ]
    assert "missing" in page.rejects[0].reason
    assert str(page.rejects[1]).startswith("oai:arXiv.org:2401.00003: version[v1].date: not an RFC 2822 date")


def test_unknown_metadata_format_is_a_reject_not_a_crash() -> None:
    record = (
        "<record><header><identifier>oai:arXiv.org:2401.00001</identifier></header><metadata>"
        '<mods xmlns="http://www.loc.gov/mods/v3"><title>x</title></mods></metadata></record>'
    )
    page = parse_page(_page("mods", record))
    assert page.papers == []
    assert page.rejects[0].where == "oai:arXiv.org:2401.00001"
    assert "unsupported metadata format" in page.rejects[0].reason


@pytest.mark.parametrize(
    ("text", "names"),
    [
        ("A. One, B. Two and C. Three", ["A. One", "B. Two", "C. Three"]),
        ("A. One, B. Two, and C. Three", ["A. One", "B. Two", "C. Three"]),
        ("A. One (X (Y) Z), B. Two (MIT)", ["A. One", "B. Two"]),
        ("A. One (1), B. Two (2) ((1) MIT, (2) Harvard)", ["A. One", "B. Two"]),
        ("John Smith, Jr., Jane Roe", ["John Smith Jr.", "Jane Roe"]),
        ("A. One; B. Two & C. Three", ["A. One", "B. Two", "C. Three"]),
        ("The ATLAS Collaboration: A. One et al.", ["The ATLAS Collaboration: A. One"]),
        ("A.\n  One (unbalanced, B. Two", ["A. One", "B. Two"]),
        ("  ", []),
    ],
)
def test_split_author_string(text: str, names: list[str]) -> None:
    assert split_author_string(text) == names


def test_malformed_page_is_read_in_recovery_mode_with_a_reject() -> None:
    good = _dc("2401.00001", ["Computer Science - Robotics"], ["cs"])
    broken = _dc("2401.00002", ["Computer Science - Robotics"], ["cs"]).replace("T 2401.00002", "T \x0c bad")
    page = parse_page(_page("oai_dc", good + broken), label="page 7")
    assert page.recovered is True
    assert "2401.00001" in {p.id for p in page.papers}
    assert page.rejects[-1].where == "page 7"
    assert "malformed XML (line" in page.rejects[-1].reason


@pytest.mark.parametrize(
    "body",
    [
        b"",
        b"<html><body>Service Unavailable</body></html>",
        b'{"error": "nope"}',
        b"<OAI-PMH>no namespace</OAI-PMH>",
    ],
)
def test_a_body_that_is_not_oai_pmh_raises(body: bytes) -> None:
    with pytest.raises(OaiProtocolError, match="page 3: not"):
        parse_page(body, label="page 3")


def _error_page(code: str, text: str) -> bytes:
    return (
        '<?xml version="1.0"?><OAI-PMH xmlns="http://www.openarchives.org/OAI/2.0/">'
        f'<responseDate>2024-01-01T00:00:00Z</responseDate><request verb="ListRecords">http://x</request>'
        f'<error code="{code}">{text}</error></OAI-PMH>'
    ).encode()


def _client() -> PoliteClient:
    return PoliteClient(
        user_agent="paperfeed-test", timeout=5.0, retries=2, min_interval={}, backoff_base=0.01
    )


# -- over the real loopback server ------------------------------------------------------------------


def test_fetch_no_records_match_is_an_empty_complete_page(server: ReplayServer) -> None:
    server.add("/oai", Reply(200, _error_page("noRecordsMatch", "No records match")))
    page = fetch_page(
        _client(), f"{server.base_url}/oai", list_params("ListRecords", "arXiv", from_date="2030-01-01")
    )
    assert page.papers == []
    assert page.next_token is None
    assert server.requests[0].params == {
        "verb": "ListRecords",
        "metadataPrefix": "arXiv",
        "from": "2030-01-01",
    }


@pytest.mark.parametrize(
    ("status", "code"), [(200, "badArgument"), (200, "badResumptionToken"), (400, "cannotDisseminateFormat")]
)
def test_fetch_oai_errors_raise_with_code_and_message(server: ReplayServer, status: int, code: str) -> None:
    server.add("/oai", Reply(status, _error_page(code, "the server &amp; its   reasons")))
    with pytest.raises(OaiError) as info:
        fetch_page(_client(), f"{server.base_url}/oai", {"verb": "ListRecords", "resumptionToken": "t|1"})
    assert info.value.code == code
    assert str(info.value) == f"{code}: the server & its reasons"


def test_fetch_html_404_is_a_protocol_error(server: ReplayServer) -> None:
    server.add("/oai", Reply(404, b"<html><title>Not Found</title></html>"))
    with pytest.raises(OaiProtocolError, match=r"HTTP 404: .*not an OAI-PMH response"):
        fetch_page(_client(), f"{server.base_url}/oai", list_params("ListRecords", "arXiv"))


def test_503_retry_after_is_honoured(server: ReplayServer, oai_dir: Path) -> None:
    page = (oai_dir / "oai_dc_2023_SciXHarvester/GetRecord_data.xml").read_bytes()
    server.add("/oai", Reply(503, b"busy", {"Retry-After": "1"}), Reply(200, page))
    started = time.monotonic()
    got = fetch_page(_client(), f"{server.base_url}/oai", {"verb": "GetRecord", "identifier": "x"})
    elapsed = time.monotonic() - started
    assert [p.id for p in got.papers] == ["2107.10460"]
    assert len(server.requests) == 2
    assert elapsed >= 1.0  # waited as told, not the 0.01 s backoff


def test_a_full_page_parses_whole(oai_dir: Path) -> None:
    """A real 2.4 MB page of 1,000 records: every record becomes a paper, a reject or a deletion.

    How fast (far below arXiv's 3 s pacing) is measured by ``python -m bench.oai_parse``, not here.
    """
    data = (oai_dir / "oai_dc_2023_SciXHarvester/ListRecords_data_0.xml").read_bytes()
    page = parse_page(data)
    assert page.records == 1000
    assert len(page.papers) + len(page.rejects) + len(page.deleted) == 1000
    assert len(page.papers) > 900
    assert page.resumption is not None
