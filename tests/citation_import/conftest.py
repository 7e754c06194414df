"""Files of citations in the real shapes of their sources, written by the tests.

* Pairs: TSV / CSV / JSONL as a lab would write them.
* Semantic Scholar Datasets ``citations`` and ``papers`` records, in the datasets' own field names and
  nesting (docs/citations.md, "Bulk import", says where the shapes are documented), built from the recorded
  Graph API answer of CorpusID:1033682's references (``../shared/fixtures/s2_api``): the same papers,
  ids, contexts and intents as S2 answered them, reshaped into dataset records.
* OpenAlex works snapshot records: the snapshot's records are the API's work objects ("the structure of
  each entity type matches the API response format"), so the recorded answers' ``results`` are written one
  per line as they came.
"""

from __future__ import annotations

import gzip
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import orjson
import pytest

from paperfeed.adapters.sources.citation_files import LocalCitationFiles
from paperfeed.adapters.store import SqlPaperStore
from paperfeed.adapters.store.citation_import import SqlCitationImport
from paperfeed.domain.citation_import import EdgeBatch, ImportPoint
from paperfeed.domain.ingest import Batch
from paperfeed.services.citation_import import CitationImport, FileReport
from tests.citations.conftest import paper

S2_CITING = 1033682  # the paper whose recorded references these are


def write_lines(path: Path, lines: Sequence[str | bytes | dict[str, Any]], *, gz: bool = False) -> Path:
    raw = b"".join(
        (orjson.dumps(x) if isinstance(x, dict) else x if isinstance(x, bytes) else x.encode()) + b"\n"
        for x in lines
    )
    path.write_bytes(gzip.compress(raw) if gz else raw)
    return path


def recorded(fixtures: Path, name: str) -> Any:
    return orjson.loads((fixtures / name).read_bytes())["body"]


_S2_IDS = ("ACL", "DBLP", "ArXiv", "MAG", "CorpusId", "PubMed", "DOI", "PubMedCentral")


def s2_paper_record(api: dict[str, Any]) -> dict[str, Any]:
    """A ``papers`` dataset record for a paper the Graph API described (the datasets write every external
    id key, null when absent, and the corpus id among them as text)."""
    given = api.get("externalIds") or {}
    ids = {k: (str(given[k]) if given.get(k) is not None else None) for k in _S2_IDS}
    return {
        "corpusid": api["corpusId"],
        "externalids": ids,
        "url": api["url"],
        "title": api["title"],
        "authors": [{"authorId": a.get("authorId"), "name": a.get("name")} for a in api.get("authors") or []],
        "venue": api.get("venue") or "",
        "publicationvenueid": (api.get("publicationVenue") or {}).get("id"),
        "year": api.get("year"),
        "referencecount": api.get("referenceCount"),
        "citationcount": api.get("citationCount"),
        "influentialcitationcount": api.get("influentialCitationCount"),
        "isopenaccess": api.get("isOpenAccess"),
        "s2fieldsofstudy": api.get("s2FieldsOfStudy"),
        "publicationtypes": api.get("publicationTypes"),
        "publicationdate": api.get("publicationDate"),
        "journal": api.get("journal"),
    }


def s2_citation_record(n: int, citing: int, cited: int | None, edge: dict[str, Any]) -> dict[str, Any]:
    """A ``citations`` dataset record: newer releases nest ``intents`` one list (or null) per context."""
    contexts = edge.get("contexts") or None
    by_context = edge.get("contextsWithIntent") or []
    intents = [c.get("intents") or None for c in by_context] if by_context else None
    return {
        "citationid": 2_000_000_000 + n,
        "citingcorpusid": citing,
        "citedcorpusid": cited,
        "isinfluential": edge.get("isInfluential"),
        "contexts": contexts,
        "intents": intents,
    }


@pytest.fixture
def s2_references(fixtures_dir: Path) -> list[dict[str, Any]]:
    """CorpusID:1033682's 156 recorded references (both pages): 9 of them unresolved (no paper)."""
    pages = ["references_full_page1_offset0_next100.json", "references_full_page2_offset100_last.json"]
    return [e for p in pages for e in recorded(fixtures_dir / "s2_api", p)["data"]]


@pytest.fixture
def openalex_works(fixtures_dir: Path) -> list[dict[str, Any]]:
    """Real OpenAlex work objects: five works citing one work, the two works it resolves, and one more."""
    folder = fixtures_dir / "openalex_api"
    out = [*recorded(folder, "works_filter_cites_cursor_start.json")["results"]]
    out += recorded(folder, "works_filter_openalex_ids_cursor_start.json")["results"]
    out.append(recorded(folder, "work_single_by_openalex_id.json"))
    return out


STORE_IDS = ("hep-th/9407087", "hep-th/9501001", "2401.00001", "2402.00002")


@pytest.fixture
def importer(store: SqlPaperStore) -> CitationImport:
    """The import service on the test's store (SQLite, then PostgreSQL), which holds four papers."""
    store.apply_batch(Batch(papers=[paper(p, "2024-01-02") for p in STORE_IDS]))
    return CitationImport(LocalCitationFiles(), SqlCitationImport(store.engine))


class Quiet:
    def __init__(self) -> None:
        self.calls: list[tuple[int, int | None]] = []

    def update(self, position: int, total: int | None, added: int, updated: int, rejected: int) -> None:
        self.calls.append((position, total))


def run(importer: CitationImport, path: Path, fmt: Any = None, **kw: Any) -> FileReport:
    return importer.run(importer.open(str(path), fmt, batch_size=kw.pop("batch_size", 3)), Quiet(), **kw)


def batches(
    path: Path, fmt: Any = None, *, size: int = 1000, start: ImportPoint | None = None
) -> list[EdgeBatch]:
    return list(LocalCitationFiles().open(str(path), fmt, batch_size=size).batches(start))


def graph(store: SqlPaperStore) -> dict[str, Any]:
    """Everything the import writes, timestamps left out: the state two imports must agree on."""
    with store.engine.connect() as conn:
        edges = sorted(
            tuple(r)
            for r in conn.exec_driver_sql(
                "SELECT citing, cited, citing_day, is_influential, contexts, intents, sources FROM citations"
            )
        )
        works = sorted(
            tuple(r)
            for r in conn.exec_driver_sql(
                "SELECT key, title, year, published, arxiv_id, doi, s2_id, openalex_id, citation_count, "
                "reference_count, cited_edges, sort_day FROM works"
            )
        )
        aliases = sorted(tuple(r) for r in conn.exec_driver_sql("SELECT alias, key FROM work_aliases"))
    return {"edges": [tuple(map(_plain, e)) for e in edges], "works": works, "aliases": aliases}


def _plain(value: Any) -> Any:
    """A JSON column's value alike on both backends (text on SQLite, parsed on PostgreSQL)."""
    if isinstance(value, str) and value[:1] == "[":
        return tuple(orjson.loads(value))
    if isinstance(value, list):
        return tuple(value)
    if isinstance(value, int) and not isinstance(value, bool) and value in (0, 1):
        return value
    return value


def edge_rows(store: SqlPaperStore) -> dict[tuple[str, str], dict[str, Any]]:
    with store.engine.connect() as conn:
        rows = conn.exec_driver_sql(
            "SELECT citing, cited, citing_day, is_influential, contexts, intents, sources FROM citations"
        )
        return {
            (r[0], r[1]): {
                "day": r[2],
                "influential": None if r[3] is None else bool(r[3]),
                "contexts": list(_plain(r[4])),
                "intents": list(_plain(r[5])),
                "sources": list(_plain(r[6])),
            }
            for r in rows
        }


def work_rows(store: SqlPaperStore) -> dict[str, dict[str, Any]]:
    with store.engine.connect() as conn:
        rows = conn.exec_driver_sql(
            "SELECT key, title, doi, s2_id, openalex_id, cited_edges, sort_day FROM works"
        )
        return {
            r[0]: {
                "title": r[1],
                "doi": r[2],
                "s2_id": r[3],
                "openalex_id": r[4],
                "cited_edges": r[5],
                "day": r[6],
            }
            for r in rows
        }


def cited_edges_agree(store: SqlPaperStore) -> None:
    """Every work's ``cited_edges`` is the number of stored edges citing it."""
    with store.engine.connect() as conn:
        wrong = list(
            conn.exec_driver_sql(
                "SELECT w.key, w.cited_edges, (SELECT count(*) FROM citations c WHERE c.cited = w.key) "
                "FROM works w WHERE w.cited_edges <> (SELECT count(*) FROM citations c WHERE c.cited = w.key)"
            )
        )
    assert wrong == []
