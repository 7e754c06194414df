"""The arXiv API Atom parser against every real response in ../shared and synthetic edge cases."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path

import pytest

from paperfeed.adapters.sources.arxiv_atom import FeedPage, parse_feed
from paperfeed.domain.errors import ArxivApiError, MalformedFeed
from paperfeed.domain.models import Paper

NOW = datetime(2026, 5, 1, 12, 0, tzinfo=UTC)
DATA = Path(__file__).parent / "data"
NEW = "new_format_2026_lukasschwab_arxiv.py_extracted_bodies"
OLD16 = "old_format_2016_lukasschwab_arxiv.py"
OLD17 = "old_format_2017_orijtech_arxiv"
NEW25 = "new_format_2025_meriemnour"

# Every XML response under fixtures/arxiv_atom_api/ (the recorded JSON ones are in test_arxiv_api.py),
# with the number of <entry> elements it holds. The error feed (id_abc) raises instead; see below.
XML_FILES = {
    f"{NEW25}/arwiv_articles.xml": 10,
    f"{NEW}/id_0000.0000_s0_m100_8b51d9633a68.xml": 0,
    f"{NEW}/id_0808.05394_1707.08567_s0_m100_42e5aa0ec3af.xml": 1,
    f"{NEW}/id_0808.05394_s0_m100_7b0c7d0a7cdd.xml": 0,
    f"{NEW}/id_1605.08386_s0_m100_199195aa31ad.xml": 1,
    f"{NEW}/id_1707.08567_s0_m100_6a1afebfc6a3.xml": 1,
    f"{NEW}/id_2104.12255v1_s0_m100_6ae69987ffe1.xml": 1,
    f"{NEW}/id_astro-ph_0601001_s0_m100_3150dca9dc76.xml": 1,
    f"{NEW}/id_quant-ph_0201082v1_s0_m100_86989fe779ef.xml": 1,
    f"{NEW}/q_testing_s0_m100_cfe7536492ca.xml": 100,
    f"{NEW}/q_testing_s0_m10_bc5a6c384fe9.xml": 10,
    f"{NEW}/q_testing_s0_m15_80c242b59d59.xml": 15,
    f"{NEW}/q_testing_s10_m10_34e56e15aaac.xml": 10,
    f"{NEW}/q_testing_s20_m10_348a237fecab.xml": 10,
    f"{NEW}/q_testing_s30_m10_f2e39f0143dc.xml": 10,
    f"{NEW}/q_testing_s40_m10_96dd32eb854c.xml": 10,
    f"{NEW}/q_testing_s50_m10_7f488ab8598c.xml": 10,
    f"{NEW}/q_testing_s5_m10_c0e94a259d4a.xml": 10,
    f"{NEW}/q_testing_s5_m15_bbcf6b23085b.xml": 15,
    f"{NEW}/q_testing_s9_m15_0b78d4b4d476.xml": 15,
    f"{OLD16}/id_list=1111.2011v2.xml": 1,
    f"{OLD16}/search_query=au_del_maestro+AND+ti__quantum+criticality_.xml": 2,
    f"{OLD16}/search_query=au_del_maestro+AND+ti_checkerboard.xml": 1,
    f"{OLD16}/search_query=au_del_maestro+ANDNOT+_28ti_checkerboard+OR+ti_Pyrochlore_29.xml": 10,
    f"{OLD16}/search_query=au_del_maestro.xml": 10,
    f"{OLD17}/deep_dream-0.atom": 10,
    f"{OLD17}/deep_dream-1.atom": 10,
    f"{OLD17}/deep_dream-2.atom": 10,
}
ERROR_FEED = f"{NEW}/id_abc_s0_m100_b79c8dcf6bc3.xml"
_ENTRY = re.compile(rb"<entry[\s>]")


def count_entries(data: bytes) -> int:
    """Independent of the parser: a plain regex count of <entry> start tags."""
    return len(_ENTRY.findall(data))


@pytest.fixture
def atom_dir(fixtures_dir: Path) -> Path:
    return fixtures_dir / "arxiv_atom_api"


def _parse(path: Path) -> FeedPage:
    return parse_feed(path.read_bytes(), seen_at=NOW, where=path.name)


def _by_id(page: FeedPage) -> dict[str, Paper]:
    return {p.id: p for p in page.papers}


def test_every_xml_fixture_is_listed(atom_dir: Path) -> None:
    on_disk = {
        str(p.relative_to(atom_dir))
        for p in atom_dir.rglob("*")
        if p.is_file() and p.suffix in {".xml", ".atom"}
    }
    assert on_disk == set(XML_FILES) | {ERROR_FEED}


@pytest.mark.parametrize(("name", "expected"), sorted(XML_FILES.items()))
def test_fixture_entries_all_become_papers(atom_dir: Path, name: str, expected: int) -> None:
    data = (atom_dir / name).read_bytes()
    assert count_entries(data) == expected
    page = parse_feed(data, seen_at=NOW)
    assert page.entries == expected
    assert len(page.papers) == expected
    assert page.rejects == []
    assert page.placeholders == 0
    assert len({p.id for p in page.papers}) == expected
    for paper in page.papers:
        assert paper.title
        assert paper.abstract
        assert paper.authors
        assert paper.categories
        assert paper.published is not None
        assert paper.updated is not None
        assert paper.version is not None
        assert paper.sources == {"arxiv-api": "2026-05-01T12:00:00Z"}


def test_classic_format_id_list(atom_dir: Path) -> None:
    page = _parse(atom_dir / OLD16 / "id_list=1111.2011v2.xml")
    assert (page.total_results, page.start_index, page.items_per_page) == (1, 0, 10)
    [paper] = page.papers
    assert paper.id == "1111.2011"
    assert paper.version == 2
    assert paper.title == (
        "Quantum Criticality for Extended Nodes on a Bethe Lattice in the Large Connectivity Limit"
    )
    assert paper.abstract.startswith("Theoretical description of anisotropic systems, such as layered ")
    assert paper.abstract.endswith("describing a single node.")
    assert paper.authors == ("James M. Murray", "Adrian Del Maestro", "Zlatko Tesanovic")
    assert paper.categories == ("cond-mat.str-el", "cond-mat.stat-mech")
    assert paper.doi == "10.1103/PhysRevB.85.115117"
    assert paper.comment == "8 pages, 3 figures. Published version"
    assert paper.journal_ref == "Phys. Rev. B 85, 115117 (2012)"
    assert paper.published == datetime(2011, 11, 8, 18, 48, 36, tzinfo=UTC)
    assert paper.updated == datetime(2012, 4, 2, 12, 38, 54, tzinfo=UTC)
    assert paper.license is None


def test_classic_format_paged_search(atom_dir: Path) -> None:
    page = _parse(atom_dir / OLD16 / "search_query=au_del_maestro.xml")
    assert (page.total_results, page.start_index, page.items_per_page) == (31, 0, 10)
    assert all({"Adrian Del Maestro", "A. Del Maestro"} & set(p.authors) for p in page.papers)
    paper = _by_id(page)["cond-mat/0412498"]
    assert paper.version == 1
    assert paper.authors[0] == "Adrian Del Maestro"
    assert paper.doi == "10.1103/PhysRevB.71.184511"


def test_classic_format_drops_msc_classes_from_categories(atom_dir: Path) -> None:
    page = _parse(atom_dir / OLD17 / "deep_dream-0.atom")
    assert (page.total_results, page.start_index, page.items_per_page) == (24617, 0, 10)
    first = page.papers[0]
    assert (first.id, first.version, first.primary_category) == ("1611.09520", 2, "q-bio.NC")
    assert first.authors == ("Tomoyasu Horikawa", "Yukiyasu Kamitani")
    mori = _by_id(page)["1304.8005"]  # lists "14C20, 14M99" (MSC) as a <category>
    assert mori.title == "Examples of Mori dream spaces with Picard number two"
    assert mori.categories == ("math.AG",)


def test_new_format_search(atom_dir: Path) -> None:
    page = _parse(atom_dir / NEW25 / "arwiv_articles.xml")
    assert (page.total_results, page.start_index, page.items_per_page) == (175141, 0, 10)
    papers = _by_id(page)
    cuprates = page.papers[0]
    assert cuprates.id == "cond-mat/0011267"
    assert cuprates.version == 1
    assert cuprates.title == "The electronic structure of cuprates from high energy spectroscopy"
    assert cuprates.authors[0] == "Mark S. Golden"
    assert len(cuprates.authors) == 8
    assert cuprates.categories == ("cond-mat.supr-con", "cond-mat.str-el")
    assert cuprates.journal_ref == "J. Electron Spectr. Relat. Phenom. 117-118, 203 (2001)"
    assert cuprates.doi is None
    assert cuprates.published == cuprates.updated == datetime(2000, 11, 15, 16, 19, 15, tzinfo=UTC)
    arpes = papers["1401.3078"]
    assert arpes.version == 2
    assert arpes.doi == "10.1016/j.elspec.2014.01.005"
    assert arpes.published == datetime(2014, 1, 14, 6, 16, 36, tzinfo=UTC)
    assert arpes.updated == datetime(2014, 2, 6, 18, 56, 13, tzinfo=UTC)
    # The primary category comes first even when it is not the first <category> listed.
    assert papers["1912.06461"].categories == ("quant-ph", "cond-mat.mes-hall", "physics.app-ph")


def test_new_format_id_lookups(atom_dir: Path) -> None:
    [gould] = _parse(atom_dir / NEW / "id_astro-ph_0601001_s0_m100_3150dca9dc76.xml").papers
    assert (gould.id, gould.version, gould.categories) == ("astro-ph/0601001", 1, ("astro-ph",))
    assert gould.authors == ("Andrew Gould", "Susan Dorsher", "B. Scott Gaudi", "Andrzej Udalski")
    assert gould.journal_ref == "ActaAstron.56:1-50,2006"
    assert gould.abstract.startswith("We derive the frequencies of hot Jupiters (HJs)")
    assert "V_max<17.5" in gould.abstract  # entities decoded
    [zero] = _parse(atom_dir / NEW / "id_2104.12255v1_s0_m100_6ae69987ffe1.xml").papers
    assert (zero.id, zero.title, zero.primary_category) == ("2104.12255", "0", "cs.CR")
    [blaha] = _parse(atom_dir / NEW / "id_quant-ph_0201082v1_s0_m100_86989fe779ef.xml").papers
    assert (blaha.id, blaha.categories, blaha.comment) == (
        "quant-ph/0201082",
        ("quant-ph", "cs.PL"),
        "32 pages",
    )
    [testing] = _parse(atom_dir / NEW / "q_testing_s0_m10_bc5a6c384fe9.xml").papers[:1]
    assert testing.id == "2202.12139"
    assert testing.doi == "10.1109/ICSTW55395.2022.00035"
    assert testing.categories == ("cs.SE", "cs.LG")
    aew = _parse(atom_dir / NEW / "id_1707.08567_s0_m100_6a1afebfc6a3.xml").papers[0]
    assert len(aew.authors) == 34
    assert aew.authors[-1] == "Hirosuke Yamamoto"


def test_error_feed_raises_with_arxivs_message(atom_dir: Path) -> None:
    data = (atom_dir / ERROR_FEED).read_bytes()
    assert count_entries(data) == 1
    with pytest.raises(ArxivApiError, match=r"^incorrect id format for abc$") as caught:
        parse_feed(data, seen_at=NOW)
    assert caught.value.error_id == "https://arxiv.org/api/errors#incorrect_id_format_for_abc"


@pytest.mark.parametrize(
    "name", [f"{NEW}/id_0000.0000_s0_m100_8b51d9633a68.xml", f"{NEW}/id_0808.05394_s0_m100_7b0c7d0a7cdd.xml"]
)
def test_empty_feed_gives_nothing(atom_dir: Path, name: str) -> None:
    page = _parse(atom_dir / name)
    assert (page.papers, page.rejects, page.entries, page.total_results) == ([], [], 0, 0)


def test_edge_cases_placeholder_and_rejects() -> None:
    data = (DATA / "arxiv_atom_edge_cases.xml").read_bytes()
    page = parse_feed(data, seen_at=NOW, where="edge.xml")
    assert page.entries == count_entries(data) == 6
    assert page.placeholders == 1  # the old API's title-less entry for an unknown id
    [paper] = page.papers
    assert paper.id == "2401.00001"
    assert paper.version == 3
    assert paper.title == r"A synthetic paper with $\alpha$ in its title"
    assert paper.abstract == "First line of the abstract."
    assert paper.authors == ("Ada Lovelace", "Charles Babbage")
    assert paper.categories == ("cs.DM", "math.CO")  # primary first, deduplicated, MSC/ACM dropped
    assert paper.doi == "10.1234/synthetic.5678"  # from the doi link when <arxiv:doi> is absent
    assert paper.license == "http://creativecommons.org/licenses/by/4.0/"
    rejects = {(r.where, r.field) for r in page.rejects}
    assert rejects == {
        ("http://arxiv.org/abs/2401.00003v1", "published"),
        ("edge.xml: entry 4 (no id)", "id"),
        ("http://arxiv.org/abs/not-an-id", "id"),
        ("http://arxiv.org/abs/2401.00006v1", "title"),
    }
    assert page.entry_ids == ["2401.00001", "2401.00003", "2401.00006"]


def test_arxiv_license_element() -> None:
    data = (
        b'<feed xmlns="http://www.w3.org/2005/Atom" xmlns:arxiv="http://arxiv.org/schemas/atom">'
        b"<entry><id>https://arxiv.org/abs/2501.00001v1</id><title>T</title><summary>S</summary>"
        b"<arxiv:license>http://arxiv.org/licenses/nonexclusive-distrib/1.0/</arxiv:license>"
        b"<arxiv:doi>10.1/x</arxiv:doi>"
        b'<link rel="related" title="doi" href="https://doi.org/10.1/other"/></entry></feed>'
    )
    [paper] = parse_feed(data, seen_at=NOW).papers
    assert paper.license == "http://arxiv.org/licenses/nonexclusive-distrib/1.0/"
    assert paper.doi == "10.1/x"  # <arxiv:doi> wins over the link


def test_truncated_response_is_a_clear_error(atom_dir: Path) -> None:
    data = (atom_dir / NEW / "q_testing_s0_m10_bc5a6c384fe9.xml").read_bytes()
    with pytest.raises(MalformedFeed, match=r"^page\.xml: not well-formed XML \(.*line \d+"):
        parse_feed(data[: len(data) // 2], seen_at=NOW, where="page.xml")


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"", "not well-formed XML"),
        (b"<html><body>Service Unavailable</body></html>", r"not an Atom feed \(root element <html>\)"),
        (b'<rss version="2.0"><channel/></rss>', r"not an Atom feed \(root element <rss>\)"),
        (
            b'<feed xmlns="http://www.w3.org/2005/Atom"><totalResults>many</totalResults></feed>',
            "opensearch:totalResults is not a number: 'many'",
        ),
    ],
)
def test_not_a_feed_is_a_clear_error(data: bytes, message: str) -> None:
    with pytest.raises(MalformedFeed, match=message):
        parse_feed(data, seen_at=NOW)


def test_external_entities_are_not_resolved(tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP SECRET")
    data = (
        f'<?xml version="1.0"?><!DOCTYPE feed [<!ENTITY x SYSTEM "file://{secret}">]>'
        '<feed xmlns="http://www.w3.org/2005/Atom"><entry><id>http://arxiv.org/abs/2501.00001v1</id>'
        "<title>Leak &x;</title><summary>s</summary></entry></feed>"
    ).encode()
    page = parse_feed(data, seen_at=NOW)
    assert all("SECRET" not in p.title for p in page.papers)
