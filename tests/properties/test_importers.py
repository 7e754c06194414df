"""Property tests: every importer turns any bytes into valid papers and clean rejects, or refuses the
whole input with its own clear error — never an unexpected exception.

Importers: JSONL (ours and arXiv's snapshot records), OAI-PMH pages, arXiv API Atom feeds, Hugging Face
daily lists, BibTeX / CSL-JSON / id lists. Inputs: random bytes, random JSON, real-looking records with
hostile values, and real recorded pages damaged at random.
"""

from __future__ import annotations

import re
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from paperfeed.adapters.sources.arxiv_atom import parse_feed
from paperfeed.adapters.sources.bibliography import parse_bibliography
from paperfeed.adapters.sources.hf_daily import NotAList, decode_day, parse_day
from paperfeed.adapters.sources.jsonl_file import JsonlFileSource
from paperfeed.adapters.sources.oai_pmh import OaiProtocolError, parse_page
from paperfeed.domain.errors import ArxivFeedError, OaiError
from paperfeed.domain.ids import normalize_paper_id
from paperfeed.domain.library import BibliographyError
from paperfeed.domain.models import Paper
from tests.conftest import SHARED
from tests.support.hostile import BYTES, STRINGS

NOW = datetime(2026, 1, 1, tzinfo=UTC)
SOME = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])

JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=False)
    | st.text(max_size=40),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=6),
    max_leaves=20,
)
HOSTILE = st.sampled_from([v for _n, v in STRINGS if len(v) < 20_000])
VALUE = st.one_of(JSON, HOSTILE)


def valid(paper: Paper) -> None:
    """What every imported paper guarantees, whatever came in."""
    parsed = normalize_paper_id(paper.id)
    assert str(parsed) == paper.id
    assert paper.title.strip()
    for text in (paper.title, paper.abstract, *paper.authors, *paper.categories):
        assert "\x00" not in text
        assert not re.search(r"[\ud800-\udfff]", text)
        text.encode("utf-8")


def record_like() -> st.SearchStrategy[dict[str, Any]]:
    """Our format or arXiv's snapshot, with any value in any field."""
    ours = st.fixed_dictionaries(
        {"id": st.one_of(st.just("2401.00001"), VALUE), "title": VALUE},
        optional=dict.fromkeys(
            ("abstract", "authors", "categories", "published", "version", "upvotes"), VALUE
        ),
    )
    snapshot = st.fixed_dictionaries(
        {"id": st.one_of(st.just("0704.0001"), VALUE), "title": VALUE, "abstract": VALUE},
        optional=dict.fromkeys(
            ("authors", "authors_parsed", "categories", "versions", "update_date", "doi"), VALUE
        ),
    )
    return st.one_of(ours, snapshot)


def run_jsonl(tmp_path: Path, body: bytes) -> tuple[int, int]:
    path = tmp_path / "in.jsonl"
    path.write_bytes(body)
    source = JsonlFileSource(path, batch_size=50)
    counts = [0, 0]
    for batch in source.batches():
        realized = source.realize(batch.raw) if batch.raw else None
        papers = [*batch.papers, *(realized.papers if realized else [])]
        rejects = [*batch.rejects, *(realized.rejects if realized else [])]
        for paper in papers:
            valid(paper)
        for reject in rejects:
            assert reject.where.startswith(str(path))
            assert reject.reason
        counts[0] += len(papers)
        counts[1] += len(rejects)
    return counts[0], counts[1]


@SOME
@given(st.lists(record_like(), min_size=1, max_size=5))
def test_jsonl_records_with_any_values(tmp_path: Path, records: list[dict[str, Any]]) -> None:
    lines = []
    for r in records:
        try:
            lines.append(orjson.dumps(r))
        except TypeError:  # a lone surrogate cannot be JSON-encoded by orjson: write it escaped
            lines.append(repr(r).encode("utf-8", "surrogatepass"))
    run_jsonl(tmp_path, b"\n".join(lines) + b"\n")


def test_the_harness_sees_papers_and_rejects(tmp_path: Path) -> None:
    good = orjson.dumps({"id": "2401.00001", "title": "A title", "published": "2024-01-02"})
    assert run_jsonl(tmp_path, good + b"\n{broken\n" + orjson.dumps({"id": "x", "title": "t"})) == (1, 2)


@SOME
@given(st.binary(max_size=2000))
def test_jsonl_random_bytes(tmp_path: Path, body: bytes) -> None:
    run_jsonl(tmp_path, body)


@pytest.mark.parametrize(("name", "body"), BYTES, ids=[n for n, _ in BYTES])
def test_jsonl_hostile_bytes(tmp_path: Path, name: str, body: bytes) -> None:
    run_jsonl(tmp_path, body + b"\n" + body)


def test_jsonl_hostile_strings_in_every_field(tmp_path: Path) -> None:
    lines = []
    for i, (_name, value) in enumerate(STRINGS):
        for key in ("title", "abstract", "authors", "categories", "published", "id"):
            record: dict[str, Any] = {"id": f"2401.{i:05d}", "title": "T", key: value}
            lines.append(orjson.dumps(record) if "\ud800" not in value and "\udfff" not in value else b"{")
    run_jsonl(tmp_path, b"\n".join(lines))


# -- OAI-PMH ------------------------------------------------------------------------------------------


def oai_pages() -> list[bytes]:
    folder = SHARED / "fixtures" / "oai_pmh"
    if not folder.is_dir():
        return []
    return [p.read_bytes()[:200_000] for p in sorted(folder.rglob("*.xml"))]


def parse_oai(body: bytes) -> None:
    try:
        page = parse_page(body, seen_at=NOW)
    except (OaiProtocolError, OaiError) as exc:
        message = str(exc)  # names what was wrong
        assert message
        return
    for paper in page.papers:
        valid(paper)


@SOME
@given(st.binary(max_size=3000))
def test_oai_random_bytes(body: bytes) -> None:
    parse_oai(body)


@SOME
@given(st.data())
def test_oai_real_pages_damaged_at_random(data: st.DataObject) -> None:
    pages = oai_pages()
    if not pages:
        pytest.skip("../shared/fixtures is not present")
    page = bytearray(data.draw(st.sampled_from(pages)))
    for _ in range(data.draw(st.integers(1, 6))):
        at = data.draw(st.integers(0, len(page) - 1))
        action = data.draw(st.sampled_from(["flip", "cut", "insert"]))
        if action == "flip":
            page[at] = data.draw(st.integers(0, 255))
        elif action == "cut":
            del page[at : at + data.draw(st.integers(1, 500))]
        else:
            page[at:at] = data.draw(st.sampled_from([b"\x00", b"<", b"&", b"]]>", b"\xff", b"<x>"]))
    parse_oai(bytes(page))


@pytest.mark.parametrize(("name", "body"), BYTES, ids=[n for n, _ in BYTES])
def test_oai_hostile_bytes(name: str, body: bytes) -> None:
    parse_oai(body)


# -- arXiv API (Atom) ---------------------------------------------------------------------------------

ATOM = (
    '<?xml version="1.0"?><feed xmlns="http://www.w3.org/2005/Atom" '
    'xmlns:arxiv="http://arxiv.org/schemas/atom"><entry><id>{id}</id><title>{title}</title>'
    "<summary>{summary}</summary><published>{published}</published><author><name>{author}</name></author>"
    '<arxiv:primary_category term="{cat}"/></entry></feed>'
)


def parse_atom(body: bytes) -> None:
    try:
        page = parse_feed(body, seen_at=NOW)
    except ArxivFeedError as exc:
        message = str(exc)  # names what was wrong
        assert message
        return
    for paper in page.papers:
        valid(paper)


@SOME
@given(st.binary(max_size=2000))
def test_atom_random_bytes(body: bytes) -> None:
    parse_atom(body)


@SOME
@given(
    st.fixed_dictionaries(
        {k: HOSTILE | st.text(max_size=30) for k in ("id", "title", "summary", "published", "author", "cat")}
    )
)
def test_atom_entries_with_hostile_values(values: dict[str, str]) -> None:
    from xml.sax.saxutils import escape

    safe = {
        k: escape(v.encode("utf-8", "replace").decode("utf-8"), {'"': "&quot;"}) for k, v in values.items()
    }
    safe["id"] = values["id"] if values["id"].startswith("http") else f"http://arxiv.org/abs/{safe['id']}"
    parse_atom(ATOM.format(**safe).encode("utf-8", "replace"))


@pytest.mark.parametrize(("name", "body"), BYTES, ids=[n for n, _ in BYTES])
def test_atom_hostile_bytes(name: str, body: bytes) -> None:
    parse_atom(body)


# -- Hugging Face daily papers ------------------------------------------------------------------------


def parse_hf(body: bytes) -> None:
    try:
        items = decode_day(body)
    except NotAList as exc:
        message = str(exc)  # names what was wrong
        assert message
        return
    result = parse_day(items, date(2026, 1, 1), seen_at=NOW)
    for paper in result.papers:
        valid(paper)
    assert len(result.listings) <= len(result.papers)


@SOME
@given(st.binary(max_size=1000))
def test_hf_random_bytes(body: bytes) -> None:
    parse_hf(body)


@SOME
@given(
    st.lists(
        st.one_of(
            JSON,
            st.fixed_dictionaries(
                {
                    "paper": st.dictionaries(
                        st.sampled_from(
                            ["id", "title", "summary", "authors", "upvotes", "publishedAt", "githubRepo"]
                        ),
                        VALUE,
                    )
                },
                optional={"title": VALUE, "numComments": VALUE},
            ),
        ),
        max_size=6,
    )
)
def test_hf_items_with_any_values(items: list[Any]) -> None:
    try:
        body = orjson.dumps(items)
    except TypeError:
        return  # lone surrogates cannot travel as JSON bytes
    parse_hf(body)


# -- bibliographies -----------------------------------------------------------------------------------


def parse_bib(body: bytes, name: str) -> None:
    try:
        works = parse_bibliography(body, name)
    except BibliographyError as exc:
        message = str(exc)  # names what was wrong
        assert message
        return
    for work in works:
        if work.arxiv_id:
            assert str(normalize_paper_id(work.arxiv_id)) == work.arxiv_id


@SOME
@given(st.binary(max_size=1500), st.sampled_from(["refs.bib", "refs.json", "ids.txt", "x"]))
def test_bibliography_random_bytes(body: bytes, name: str) -> None:
    parse_bib(body, name)


@SOME
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["article", "misc", "x"]),
            st.dictionaries(
                st.sampled_from(["title", "eprint", "archivePrefix", "url", "doi", "author", "journal"]),
                HOSTILE | st.text(max_size=30),
                max_size=5,
            ),
        ),
        max_size=4,
    )
)
def test_bibtex_entries_with_hostile_values(entries: list[tuple[str, dict[str, str]]]) -> None:
    text = "\n".join(
        "@"
        + kind
        + "{key"
        + str(i)
        + ",\n"
        + ",\n".join(f"  {k} = {{{v}}}" for k, v in fields.items())
        + "\n}"
        for i, (kind, fields) in enumerate(entries)
    )
    parse_bib(text.encode("utf-8", "surrogatepass"), "refs.bib")


@SOME
@given(
    st.lists(
        st.dictionaries(
            st.sampled_from(["title", "id", "DOI", "URL", "number", "arxiv", "type"]), VALUE, max_size=5
        ),
        max_size=4,
    )
)
def test_csl_json_items_with_any_values(items: list[dict[str, Any]]) -> None:
    try:
        body = orjson.dumps(items)
    except TypeError:
        return
    parse_bib(body, "refs.json")


@pytest.mark.parametrize(("name", "body"), BYTES, ids=[n for n, _ in BYTES])
@pytest.mark.parametrize("filename", ["refs.bib", "refs.json", "ids.txt"])
def test_bibliography_hostile_bytes(name: str, body: bytes, filename: str) -> None:
    parse_bib(body, filename)
