"""The stored paper graph (:class:`~paperfeed.domain.paper_graph.CitationRecords`) on SQLAlchemy Core,
SQLite and PostgreSQL alike.

Writes: :meth:`SqlCitationRecords.save_links` is one transaction (works, edges, harvest ledger and the
caller's checkpoint), made of a few bulk statements whatever the batch size: read the works and edges
the batch touches, merge in Python, write back with ``executemany``. It assumes one writer at a time
(the harvest job holds its lease); two concurrent writers of one edge would keep the last merge.

Merging rules: a work's known field is never overwritten with ``None``; source-reported counts keep the
largest figure seen (two sources disagree, counts grow); a duplicate edge (another source, a re-harvest)
unions its ``sources``, ``contexts`` and ``intents`` and ORs ``is_influential``; self-citations are
dropped; cycles (A cites B cites A) are two ordinary edges.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime
from typing import Any

from sqlalchemy import bindparam, select, tuple_, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Connection, Engine

from paperfeed.domain.paper_graph import Citation, PaperLinks, SaveResult, WorkRef

from .columns import as_utc
from .schema_citations import citation_harvests, citations, works
from .sql_store import write_checkpoint

__all__ = ["SqlCitationRecords", "sort_day"]

_CHUNK = 400  # keys (or key pairs) per IN (...): under every SQLite build's variable limit

_WORK_FIELDS = (
    "title",
    "year",
    "published",
    "arxiv_id",
    "doi",
    "s2_id",
    "openalex_id",
    "citation_count",
    "reference_count",
)
_COUNTS = ("citation_count", "reference_count")


def sort_day(published: date | None, year: int | None) -> int:
    """A work's date as ``yyyymmdd`` (``yyyy0000`` with only a year, ``0`` unknown): see the schema."""
    if published is not None:
        return published.year * 10000 + published.month * 100 + published.day
    if year is not None and 0 < year < 10000:
        return year * 10000
    return 0


def _chunks(items: Sequence[Any]) -> Iterable[Sequence[Any]]:
    for start in range(0, len(items), _CHUNK):
        yield items[start : start + _CHUNK]


def _union(first: Sequence[str], second: Iterable[str]) -> list[str]:
    """``first`` then what ``second`` adds, each once, in order."""
    return list(dict.fromkeys([*first, *second]))


def _either(a: bool | None, b: bool | None) -> bool | None:
    """Influence from two reports: true if either says so, unknown only if both are."""
    if a is None:
        return b
    if b is None:
        return a
    return a or b


@dataclass(slots=True)
class _Edge:
    is_influential: bool | None
    contexts: list[str]
    intents: list[str]
    sources: list[str]

    def merge(self, other: _Edge) -> None:
        self.is_influential = _either(self.is_influential, other.is_influential)
        self.contexts = _union(self.contexts, other.contexts)
        self.intents = _union(self.intents, other.intents)
        self.sources = sorted(set(self.sources) | set(other.sources))

    @classmethod
    def of(cls, c: Citation) -> _Edge:
        return cls(c.is_influential, _union(c.contexts, ()), _union(c.intents, ()), [c.source])

    def same(self, other: _Edge) -> bool:
        return (self.is_influential, self.contexts, self.intents, self.sources) == (
            other.is_influential,
            other.contexts,
            other.intents,
            other.sources,
        )


def _merge_work(old: dict[str, Any] | None, new: WorkRef) -> dict[str, Any]:
    """``old`` (a row's fields) with what ``new`` knows: known fields are never set back to ``None``;
    counts keep the larger figure."""
    merged: dict[str, Any] = dict(old) if old else dict.fromkeys(_WORK_FIELDS)
    for name in _WORK_FIELDS:
        value = getattr(new, name)
        if value is None:
            continue
        if name in _COUNTS and merged[name] is not None:
            merged[name] = max(int(merged[name]), int(value))
        else:
            merged[name] = value
    if merged["year"] is None and merged["published"] is not None:
        merged["year"] = merged["published"].year
    return merged


class SqlCitationRecords:
    """The paper graph in the relational store; knows tables, not pages."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self._insert: Any = postgresql.insert if engine.dialect.name == "postgresql" else sqlite.insert
        self._work_upsert = self._upsert(works, [works.c.key], [*_WORK_FIELDS, "sort_day", "updated_at"])
        self._edge_insert = citations.insert()
        self._edge_update = (
            update(citations)
            .where(citations.c.citing == bindparam("b_citing"), citations.c.cited == bindparam("b_cited"))
            .values(
                is_influential=bindparam("b_influential"),
                contexts=bindparam("b_contexts", type_=citations.c.contexts.type),
                intents=bindparam("b_intents", type_=citations.c.intents.type),
                sources=bindparam("b_sources", type_=citations.c.sources.type),
            )
        )
        self._cited_edges_add = (
            update(works)
            .where(works.c.key == bindparam("b_key"))
            .values(cited_edges=works.c.cited_edges + bindparam("b_added"))
        )
        self._citing_day_set = (
            update(citations)
            .where(citations.c.citing == bindparam("b_key"))
            .values(citing_day=bindparam("b_day"))
        )
        self._harvest_upsert = self._upsert(
            citation_harvests,
            [citation_harvests.c.paper_id, citation_harvests.c.source],
            ["harvested_at", "known", "references_complete", "citations_complete"],
        )

    def _upsert(self, table: Any, keys: list[Any], columns: list[str]) -> Any:
        stmt = self._insert(table)
        return stmt.on_conflict_do_update(
            index_elements=keys, set_={name: getattr(stmt.excluded, name) for name in columns}
        )

    # -- writes -------------------------------------------------------------------------------------

    def save_links(
        self,
        links: Sequence[PaperLinks],
        *,
        harvested_at: datetime,
        checkpoint: tuple[str, str] | None = None,
    ) -> SaveResult:
        """Store ``links`` (see :meth:`CitationRecords.save_links`), all of it or nothing."""
        incoming_works: dict[str, WorkRef | None] = {}
        edges: dict[tuple[str, str], _Edge] = {}
        for link in links:
            if link.work is None:
                continue
            for ref in (link.work, *link.works):
                _note_work(incoming_works, ref)
            for edge in link.edges:
                if edge.citing == edge.cited:
                    continue  # a self-citation says nothing about the paper's neighbours
                for key in (edge.citing, edge.cited):
                    incoming_works.setdefault(key, None)  # an endpoint the source did not describe
                pair = (edge.citing, edge.cited)
                found = edges.get(pair)
                if found is None:
                    edges[pair] = _Edge.of(edge)
                else:
                    found.merge(_Edge.of(edge))
        now = datetime.now(UTC)
        with self.engine.begin() as conn:
            works_added, days = self._write_works(conn, incoming_works, now)
            edges_added = self._write_edges(conn, edges, days, now)
            self._write_harvests(conn, links, harvested_at)
            if checkpoint is not None:
                write_checkpoint(conn, *checkpoint)
        return SaveResult(papers=len(links), edges_added=edges_added, works_added=works_added)

    def _write_works(
        self, conn: Connection, incoming: dict[str, WorkRef | None], now: datetime
    ) -> tuple[int, dict[str, int]]:
        """Upsert the works; returns how many are new and every touched work's ``sort_day``."""
        if not incoming:
            return 0, {}
        old = _existing_works(conn, list(incoming))
        rows: list[dict[str, Any]] = []
        days: dict[str, int] = {}
        moved: list[dict[str, Any]] = []
        for key, ref in incoming.items():
            before = old.get(key)
            if ref is None and before is not None:
                days[key] = int(before["sort_day"])
                continue  # a bare endpoint we already know: nothing to write
            fields = _merge_work(before, ref) if ref is not None else dict.fromkeys(_WORK_FIELDS)
            day = sort_day(fields["published"], fields["year"])
            days[key] = day
            if before is not None and all(before[n] == fields[n] for n in _WORK_FIELDS):
                continue
            rows.append({"key": key, **fields, "sort_day": day, "cited_edges": 0, "updated_at": now})
            if before is not None and int(before["sort_day"]) != day:
                moved.append({"b_key": key, "b_day": day})
        if rows:
            conn.execute(self._work_upsert, rows)
        if moved:  # edges from a work whose date changed carry the new date
            conn.execute(self._citing_day_set, moved)
        return sum(1 for key in incoming if key not in old), days

    def _write_edges(
        self, conn: Connection, edges: dict[tuple[str, str], _Edge], days: dict[str, int], now: datetime
    ) -> int:
        if not edges:
            return 0
        pairs = list(edges)
        old: dict[tuple[str, str], _Edge] = {}
        for chunk in _chunks(pairs):
            query = select(
                citations.c.citing,
                citations.c.cited,
                citations.c.is_influential,
                citations.c.contexts,
                citations.c.intents,
                citations.c.sources,
            ).where(tuple_(citations.c.citing, citations.c.cited).in_(chunk))
            for row in conn.execute(query):
                old[(row.citing, row.cited)] = _Edge(
                    row.is_influential, list(row.contexts), list(row.intents), list(row.sources)
                )
        inserts: list[dict[str, Any]] = []
        updates: list[dict[str, Any]] = []
        added: dict[str, int] = {}
        for (citing, cited), edge in edges.items():
            before = old.get((citing, cited))
            if before is None:
                edge.sources = sorted(set(edge.sources))
                inserts.append(
                    {
                        "citing": citing,
                        "cited": cited,
                        "citing_day": days.get(citing, 0),
                        "is_influential": edge.is_influential,
                        "contexts": edge.contexts,
                        "intents": edge.intents,
                        "sources": edge.sources,
                        "first_seen": now,
                    }
                )
                added[cited] = added.get(cited, 0) + 1
                continue
            merged = _Edge(before.is_influential, before.contexts, before.intents, before.sources)
            merged.merge(edge)
            if not merged.same(before):
                updates.append(
                    {
                        "b_citing": citing,
                        "b_cited": cited,
                        "b_influential": merged.is_influential,
                        "b_contexts": merged.contexts,
                        "b_intents": merged.intents,
                        "b_sources": merged.sources,
                    }
                )
        if inserts:
            conn.execute(self._edge_insert, inserts)
        if updates:
            conn.execute(self._edge_update, updates)
        if added:
            conn.execute(self._cited_edges_add, [{"b_key": k, "b_added": n} for k, n in added.items()])
        return len(inserts)

    def _write_harvests(self, conn: Connection, links: Sequence[PaperLinks], at: datetime) -> None:
        rows = {
            (link.paper_id, link.source): {
                "paper_id": link.paper_id,
                "source": link.source,
                "harvested_at": at,
                "known": link.work is not None,
                "references_complete": link.references_complete,
                "citations_complete": link.citations_complete,
            }
            for link in links
        }
        if rows:
            conn.execute(self._harvest_upsert, list(rows.values()))

    # -- reads --------------------------------------------------------------------------------------

    def harvested(self, paper_ids: Sequence[str], source: str) -> dict[str, datetime]:
        """When each of ``paper_ids`` was last harvested from ``source`` (absent: never)."""
        found: dict[str, datetime] = {}
        with self.engine.connect() as conn:
            for chunk in _chunks(list(dict.fromkeys(paper_ids))):
                query = select(citation_harvests.c.paper_id, citation_harvests.c.harvested_at).where(
                    citation_harvests.c.source == source, citation_harvests.c.paper_id.in_(chunk)
                )
                found.update((pid, as_utc(at)) for pid, at in conn.execute(query))
        return found


def _note_work(seen: dict[str, WorkRef | None], ref: WorkRef) -> None:
    """Several descriptions of one work in a batch merge field by field, later known fields winning."""
    prior = seen.get(ref.key)
    if prior is None:
        seen[ref.key] = ref
        return
    merged = _merge_work(
        {n: getattr(prior, n) for n in _WORK_FIELDS},
        ref,
    )
    seen[ref.key] = WorkRef(key=ref.key, **merged)


def _existing_works(conn: Connection, keys: list[str]) -> dict[str, dict[str, Any]]:
    found: dict[str, dict[str, Any]] = {}
    columns = [works.c.key, *(works.c[n] for n in _WORK_FIELDS), works.c.sort_day]
    for chunk in _chunks(keys):
        for row in conn.execute(select(*columns).where(works.c.key.in_(chunk))):
            found[row.key] = dict(row._mapping)
    return found
