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

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from typing import Any

from sqlalchemy import bindparam, case, func, select, text, true, tuple_, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Connection, Engine

from paperfeed.domain.paper_graph import (
    Citation,
    CitationSort,
    GraphNeighbourhood,
    GraphPage,
    GraphRow,
    LinkCounts,
    PaperLinks,
    RelatedCounts,
    SaveResult,
    WorkRef,
    arxiv_month_day,
)

from .columns import as_utc
from .schema import papers
from .schema_citations import citation_harvests, citations, works
from .sql_store import write_checkpoint

__all__ = [
    "RELATED_CITERS",
    "RELATED_CITERS_PER_REFERENCE",
    "RELATED_PRIOR_CITERS_PER_REFERENCE",
    "RELATED_REFERENCES",
    "SqlCitationRecords",
    "sort_day",
]

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


# -- the read side -----------------------------------------------------------------------------------

# Caps of :meth:`SqlCitationRecords.related_counts` (docs/citations.md repeats them): they bound the
# fan-out through very highly cited works so that one query reads a few thousand index entries at most.
RELATED_REFERENCES = 300  # the paper's references considered (in key order; reference lists are short)
RELATED_CITERS_PER_REFERENCE = 50  # coupling: of each reference, only its 50 most recent citers count
RELATED_PRIOR_CITERS_PER_REFERENCE = 20  # prior: only each reference's 20 most recent citers are read
RELATED_CITERS = 200  # co-citation: of the paper itself, only its 200 most recent citers are read


def sort_day(published: date | None, year: int | None, key: str | None = None) -> int:
    """A work's date as ``yyyymmdd`` (``yyyymm00`` with only an arXiv key's month, ``yyyy0000`` with only
    a year, ``0`` unknown): see the schema. The month of an arXiv key fills in a missing date, or refines
    a year it agrees with."""
    if published is not None:
        return published.year * 10000 + published.month * 100 + published.day
    month = arxiv_month_day(key) if key is not None else 0
    if year is not None and 0 < year < 10000:
        return month if month // 10000 == year else year * 10000
    return month


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
        # Reads on PostgreSQL run in autocommit: each is one statement or a few independent ones (READ
        # COMMITTED gives every statement its own snapshot anyway), so a transaction only added a BEGIN
        # and a ROLLBACK round trip, and psycopg forgets its prepared statements at every ROLLBACK.
        # SQLite's driver begins no transaction for a SELECT, so its engine is used as it is.
        self._reader = (
            engine.execution_options(isolation_level="AUTOCOMMIT")
            if engine.dialect.name == "postgresql"
            else engine
        )
        self._pages = {
            (outgoing, sort, in_store): _page_statement(outgoing, sort, in_store)
            for outgoing in (True, False)
            for sort in CitationSort
            for in_store in (True, False)
        }
        sample = _SAMPLE_PG if engine.dialect.name == "postgresql" else _SAMPLE_SQLITE
        self._related = (text(sample + _COUPLING), text(sample + _PRIOR), text(_CO_CITATION))
        paths = _HOOD_PATHS_PG if engine.dialect.name == "postgresql" else _HOOD_PATHS_SQLITE
        self._hood = (text(_HOOD_SIDES), text(paths))
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
            works_added, days = self.write_works(conn, incoming_works, now)
            edges_added = self._write_edges(conn, edges, days, now)
            self._write_harvests(conn, links, harvested_at)
            if checkpoint is not None:
                write_checkpoint(conn, *checkpoint)
        return SaveResult(papers=len(links), edges_added=edges_added, works_added=works_added)

    def write_works(
        self, conn: Connection, incoming: Mapping[str, WorkRef | None], now: datetime
    ) -> tuple[int, dict[str, int]]:
        """Upsert the works (in the caller's transaction: the harvest's, or a bulk import's); returns how
        many are new and every touched work's ``sort_day``."""
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
            day = sort_day(fields["published"], fields["year"], key)
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

    def links_among(self, paper_ids: Sequence[str]) -> list[tuple[str, str]]:
        """Stored (citing, cited) edges with both ends among ``paper_ids`` (a store paper's work key is
        its id), for ``paperfeed model adapt``'s citing ↔ cited pairs. Read by citing key, in chunks,
        along the primary key."""
        wanted = set(paper_ids)
        found: list[tuple[str, str]] = []
        with self._reader.connect() as conn:
            for chunk in _chunks(sorted(wanted)):
                query = select(citations.c.citing, citations.c.cited).where(citations.c.citing.in_(chunk))
                found.extend((a, b) for a, b in conn.execute(query) if b in wanted and a != b)
        return found

    def harvested(self, paper_ids: Sequence[str], source: str) -> dict[str, datetime]:
        """When each of ``paper_ids`` was last harvested from ``source`` (absent: never)."""
        found: dict[str, datetime] = {}
        with self._reader.connect() as conn:
            for chunk in _chunks(list(dict.fromkeys(paper_ids))):
                query = select(citation_harvests.c.paper_id, citation_harvests.c.harvested_at).where(
                    citation_harvests.c.source == source, citation_harvests.c.paper_id.in_(chunk)
                )
                found.update((pid, as_utc(at)) for pid, at in conn.execute(query))
        return found

    def references(
        self, key: str, *, sort: CitationSort, in_store_only: bool, offset: int, limit: int
    ) -> GraphPage:
        """What ``key`` cites: one page and the total."""
        return self._page(
            key, outgoing=True, sort=sort, in_store_only=in_store_only, offset=offset, limit=limit
        )

    def citations(
        self, key: str, *, sort: CitationSort, in_store_only: bool, offset: int, limit: int
    ) -> GraphPage:
        """What cites ``key``: one page and the total. Newest first is a range of the
        ``(cited, citing_day, citing)`` index, so a page costs the same for a paper cited 10 or 100,000 times;
        most cited first has to look at every citer (a cited-by list of 50,000 costs tens of ms)."""
        return self._page(
            key, outgoing=False, sort=sort, in_store_only=in_store_only, offset=offset, limit=limit
        )

    def _page(
        self,
        key: str,
        *,
        outgoing: bool,
        sort: CitationSort,
        in_store_only: bool,
        offset: int,
        limit: int,
    ) -> GraphPage:
        if offset < 0 or limit < 0:
            raise ValueError(f"offset and limit must not be negative (got offset={offset}, limit={limit})")
        query = self._pages[(outgoing, sort, in_store_only)]
        with self._reader.connect() as conn:
            rows = conn.execute(query, {"key": key, "offset": offset, "limit": limit}).all()
        # one row at least: the total, with the page's columns NULL when the page is empty
        return GraphPage(rows=tuple(_graph_row(r) for r in rows if r[1] is not None), total=int(rows[0][0]))

    def counts(self, keys: Sequence[str], *, as_of: date) -> dict[str, LinkCounts]:
        """References, citations (the larger of edges and the source's figure) and citations dated
        within the 365 days up to ``as_of`` (a citer known only by its year does not count there) for
        each of ``keys`` with an edge or a harvest record."""
        window = (sort_day(as_of - timedelta(days=365), None), sort_day(as_of, None))
        refs: dict[str, int] = {}
        cited: dict[str, tuple[int, int]] = {}
        reported: dict[str, int] = {}
        harvested: dict[str, datetime] = {}
        recent = func.sum(case((citations.c.citing_day.between(*window), 1), else_=0))
        with self._reader.connect() as conn:
            for chunk in _chunks(list(dict.fromkeys(keys))):
                query = (
                    select(citations.c.citing, func.count())
                    .where(citations.c.citing.in_(chunk))
                    .group_by(citations.c.citing)
                )
                refs.update((k, int(n)) for k, n in conn.execute(query))
                query = (
                    select(citations.c.cited, func.count(), recent)
                    .where(citations.c.cited.in_(chunk))
                    .group_by(citations.c.cited)
                )
                cited.update((k, (int(n), int(m or 0))) for k, n, m in conn.execute(query))
                query = select(works.c.key, works.c.citation_count).where(
                    works.c.key.in_(chunk), works.c.citation_count.is_not(None)
                )
                reported.update((k, int(n)) for k, n in conn.execute(query))
                query = (
                    select(citation_harvests.c.paper_id, func.max(citation_harvests.c.harvested_at))
                    .where(citation_harvests.c.paper_id.in_(chunk))
                    .group_by(citation_harvests.c.paper_id)
                )
                harvested.update((k, as_utc(at)) for k, at in conn.execute(query))
        out: dict[str, LinkCounts] = {}
        for key in dict.fromkeys(keys):
            if key not in refs and key not in cited and key not in harvested:
                continue
            edges, last_year = cited.get(key, (0, 0))
            out[key] = LinkCounts(
                references=refs.get(key, 0),
                citations=max(edges, reported.get(key, 0)),
                citations_last_12_months=last_year,
                harvested_at=harvested.get(key),
            )
        return out

    def related_counts(self, key: str, *, limit: int) -> RelatedCounts:
        """Coupling, co-citation and prior counts around ``key``, each its ``limit`` largest (ties by key).

        The fan-out is capped (module constants, repeated in docs/citations.md):

        * of the paper's references, the first :data:`RELATED_REFERENCES` (in key order) are used;
        * each reference contributes only its :data:`RELATED_CITERS_PER_REFERENCE` (50) most recent
          citers to ``coupling`` and only its :data:`RELATED_PRIOR_CITERS_PER_REFERENCE` (20) most
          recent citers' reference lists to ``prior`` (by ``citing_day``; on SQLite a tie at the
          boundary day lets the whole day in): a reference cited 100,000 times costs as much as one
          cited 50 times, and its older citers are not counted. ``prior`` reads every sampled
          citer's whole reference list, hence its smaller sample;
        * ``co_citation`` reads only the reference lists of the paper's own :data:`RELATED_CITERS` (200)
          most recent citers (a paper cited 50,000 times costs as much as one cited 200 times).

        So ``coupling[w]`` is the number of the paper's references among whose 50 newest citers ``w``
        is (exact when each reference has at most 50 citers); ``prior[r]``, for each reference ``r``
        of the paper, the number of its other references that one of ``r``'s 20 newest citers (not
        the paper) cites as well (prior works are the most co-cited among the references: restricting
        ``prior`` to them keeps it to one pass over the sampled citers' reference lists, where any
        work would mean grouping tens of thousands of keys); ``co_citation[w]`` the number of the
        paper's newest citers that also cite ``w``. ``cites_paper``
        is exact: every returned key that cites the paper, however old the citation.
        """
        if limit < 1:
            return RelatedCounts()
        params = {
            "key": key,
            "refs": RELATED_REFERENCES,
            "n": RELATED_CITERS_PER_REFERENCE,
            "n_before": RELATED_CITERS_PER_REFERENCE - 1,
            "citers": RELATED_CITERS,
            "limit": limit,
        }
        coupling_sql, prior_sql, co_citation_sql = self._related
        with self._reader.connect() as conn:
            coupling = _counted(conn, coupling_sql, params)
            prior = _counted(
                conn,
                prior_sql,
                {
                    **params,
                    "n": RELATED_PRIOR_CITERS_PER_REFERENCE,
                    "n_before": RELATED_PRIOR_CITERS_PER_REFERENCE - 1,
                },
            )
            co_citation = _counted(conn, co_citation_sql, params)
            keys = list(dict.fromkeys([*coupling, *co_citation, *prior]))
            cites: set[str] = set()
            found: dict[str, WorkRef] = {}
            in_store: set[str] = set()
            for chunk in _chunks(keys):
                query = select(citations.c.citing).where(
                    citations.c.cited == key, citations.c.citing.in_(chunk)
                )
                cites.update(conn.execute(query).scalars())
                query = (
                    select(
                        *_WORK_COLUMNS,
                        papers.c.id.label("paper_id"),
                        papers.c.title.label("paper_title"),
                        papers.c.published.label("paper_published"),
                    )
                    .select_from(works.outerjoin(papers, papers.c.id == works.c.key))
                    .where(works.c.key.in_(chunk))
                )
                for row in conn.execute(query):
                    found[row.key] = _work_of(row)
                    if row.paper_id is not None:
                        in_store.add(row.key)
        return RelatedCounts(
            coupling=coupling,
            co_citation=co_citation,
            prior=prior,
            cites_paper=frozenset(cites),
            works=found,
            in_store=frozenset(in_store),
        )

    def neighbourhood(self, key: str) -> GraphNeighbourhood:
        """``key``'s neighbours and the papers of the store linked to them (see
        :class:`~paperfeed.domain.paper_graph.GraphNeighbourhood`).

        Capped like :meth:`related_counts` (module constants, repeated in docs/citations.md): the first
        :data:`RELATED_REFERENCES` references by key, the :data:`RELATED_CITERS` newest citers; of each
        of those neighbours every paper of the store it cites, and those of the store among its
        :data:`RELATED_CITERS_PER_REFERENCE` newest citers (on SQLite a tie at the boundary day lets the
        whole day in). Degrees are exact: every stored edge of the neighbour, or a source's larger
        reported citation total; so are the candidates' citations.
        """
        params = {
            "key": key,
            "refs": RELATED_REFERENCES,
            "citers": RELATED_CITERS,
            "n": RELATED_CITERS_PER_REFERENCE,
            "n_before": RELATED_CITERS_PER_REFERENCE - 1,
        }
        sides_sql, paths_sql = self._hood
        with self._reader.connect() as conn:
            refs: set[str] = set()
            citers: set[str] = set()
            for side, x in conn.execute(sides_sql, params):
                (citers if side else refs).add(str(x))
            if not refs and not citers:
                return GraphNeighbourhood()
            cited_by: dict[str, list[str]] = {}
            cites: dict[str, list[str]] = {}
            cited_counts: dict[str, int] = {}
            for x, direction, other, count in conn.execute(paths_sql, params):
                (cites if direction else cited_by).setdefault(str(x), []).append(str(other))
                cited_counts[str(other)] = int(count)
            hood = sorted(refs | citers)
            degrees: dict[str, int] = {}
            cited: dict[str, int] = {}
            in_store: set[str] = set()
            for chunk in _chunks(hood):
                query = (
                    select(citations.c.citing, func.count())
                    .where(citations.c.citing.in_(chunk))
                    .group_by(citations.c.citing)
                )
                degrees.update((k, int(n)) for k, n in conn.execute(query))
                query = select(works.c.key, works.c.cited_edges, works.c.citation_count).where(
                    works.c.key.in_(chunk)
                )
                cited.update((k, max(int(n), int(r or 0))) for k, n, r in conn.execute(query))
                in_store.update(conn.execute(select(papers.c.id).where(papers.c.id.in_(chunk))).scalars())
        for x in in_store:  # a neighbour that is a paper of the store is a candidate too (a direct link)
            cited_counts[x] = cited.get(x, 0)
        return GraphNeighbourhood(
            references=frozenset(refs),
            citers=frozenset(citers),
            cited_by={x: tuple(found) for x, found in cited_by.items()},
            cites={x: tuple(found) for x, found in cites.items()},
            degrees={x: degrees.get(x, 0) + cited.get(x, 0) for x in hood},
            in_store=frozenset(in_store),
            citations=cited_counts,
        )


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


# "Cited by" for sorting: the stored edges, or the source's figure when it is larger.
_cited_by = case(
    (func.coalesce(works.c.citation_count, 0) > works.c.cited_edges, works.c.citation_count),
    else_=works.c.cited_edges,
)
_WORK_COLUMNS = [works.c.key, *(works.c[n] for n in _WORK_FIELDS)]
_AFTER_FIELDS = 2 + len(_WORK_FIELDS)  # a page row: total, key, the work's fields, then the edge's


def _work_of(row: Any) -> WorkRef:
    """A work from a ``works`` row joined to ``papers``: a paper of the store fills in what the source
    left out."""
    return _work(
        row.key,
        tuple(getattr(row, n) for n in _WORK_FIELDS),
        row.paper_id,
        row.paper_title,
        row.paper_published,
    )


def _work(
    key: str, fields: Sequence[Any], paper_id: str | None, paper_title: str | None, paper_published: Any
) -> WorkRef:
    """:func:`_work_of` from the row's values: ``fields`` in the order of ``_WORK_FIELDS``."""
    title, year, published, arxiv_id, doi, s2_id, openalex_id, citation_count, reference_count = fields
    if paper_id is not None:
        if title is None:
            title = paper_title
        if published is None and paper_published is not None:
            published = as_utc(paper_published).date()
        if year is None and published is not None:
            year = published.year
        if arxiv_id is None:
            arxiv_id = paper_id
    return WorkRef(
        key=key,
        title=title,
        year=year,
        published=published,
        arxiv_id=arxiv_id,
        doi=doi,
        s2_id=s2_id,
        openalex_id=openalex_id,
        citation_count=citation_count,
        reference_count=reference_count,
    )


def _graph_row(r: Sequence[Any]) -> GraphRow:
    """A list entry from a row of :func:`_page_statement` (read by position: a page's rows are the hot
    path, and a name lookup per field cost as much as the rest of the conversion)."""
    fields = r[2:_AFTER_FIELDS]
    cited_by, is_influential, contexts, intents, sources, paper_id, paper_title, paper_published = r[
        _AFTER_FIELDS:
    ]
    return GraphRow(
        work=_work(r[1], fields, paper_id, paper_title, paper_published),
        in_store=paper_id is not None,
        citation_count=int(cited_by),
        is_influential=is_influential,
        contexts=tuple(contexts),
        intents=tuple(intents),
        sources=tuple(sources),
    )


def _page_statement(outgoing: bool, sort: CitationSort, in_store_only: bool) -> Any:
    """One page of one list, direction and filter together with the list's total, as one statement
    built once with bound parameters (building and cache-keying a statement per call cost as much as
    running it).

    ``total LEFT JOIN page``: the one-row count joined to the page's rows, so a page past the end still
    answers its total (one row, the page's columns NULL) and a page costs one round trip. The outer
    ``ORDER BY`` repeats the page's order (a join keeps no order by itself); it sorts at most ``limit``
    rows, and ``key`` breaks every tie, as it does inside."""
    here, there = (
        (citations.c.citing, citations.c.cited) if outgoing else (citations.c.cited, citations.c.citing)
    )
    where = [here == bindparam("key")]
    if in_store_only:
        where.append(papers.c.id.is_not(None))
    rank: Any = _cited_by
    if sort is CitationSort.DATE:  # newest first: for cited-by lists a range of ix_citations_cited_day
        rank = works.c.sort_day if outgoing else citations.c.citing_day
    page = (
        select(
            *_WORK_COLUMNS,
            _cited_by.label("cited_by"),
            rank.label("rank"),
            citations.c.is_influential,
            citations.c.contexts,
            citations.c.intents,
            citations.c.sources,
            papers.c.id.label("paper_id"),
            papers.c.title.label("paper_title"),
            papers.c.published.label("paper_published"),
        )
        .select_from(citations.join(works, works.c.key == there).outerjoin(papers, papers.c.id == there))
        .where(*where)
        .order_by(rank.desc(), there.desc())
        .offset(bindparam("offset"))
        .limit(bindparam("limit"))
        .subquery("page")
    )
    total = (
        select(func.count().label("total"))
        .select_from(citations.outerjoin(papers, papers.c.id == there) if in_store_only else citations)
        .where(*where)
        .subquery("total")
    )
    query = (
        select(total.c.total, *(c for c in page.c if c.name != "rank"))
        .select_from(total.outerjoin(page, true()))
        .order_by(page.c.rank.desc(), page.c.key.desc())
    )
    names = [c.name for c in query.selected_columns]
    if names[:_AFTER_FIELDS] != ["total", "key", *_WORK_FIELDS] or names[_AFTER_FIELDS:] != _EDGE_NAMES:
        raise RuntimeError(f"page columns out of the order _graph_row reads: {names}")
    return query


_EDGE_NAMES = [
    "cited_by",
    "is_influential",
    "contexts",
    "intents",
    "sources",
    "paper_id",
    "paper_title",
    "paper_published",
]


# A paper's neighbourhood, for its graph list of similar papers (:meth:`SqlCitationRecords.neighbourhood`):
# its references (the first :refs by key) and its :citers newest citers, then for each of those
# neighbours the papers of the store it cites (all) and its :n newest citers that are papers of the store
# (sampled among all its citers, as the coupling sample above: a neighbour cited 100,000 times costs
# as much as one cited 50 times). Rows: (neighbour, 0, store paper citing it, its citations) and
# (neighbour, 1, store paper it cites, its citations), a paper's citations being the larger of its stored
# citing edges and a source's reported total.
_HOOD = """
WITH refs AS (
    SELECT cited AS x FROM citations WHERE citing = :key AND cited <> :key ORDER BY cited LIMIT :refs
), citers AS (
    SELECT citing AS x FROM citations WHERE cited = :key AND citing <> :key
    ORDER BY citing_day DESC, citing DESC LIMIT :citers
), hood AS (
    SELECT x FROM refs UNION SELECT x FROM citers
)
"""
_HOOD_SIDES = (
    _HOOD
    + """
SELECT 0, x FROM refs UNION ALL SELECT 1, x FROM citers
"""
)
_HOOD_PATHS_PG = (
    _HOOD
    + """
SELECT h.x, 0, s.citing, greatest(w.cited_edges, coalesce(w.citation_count, 0)) FROM hood h
CROSS JOIN LATERAL (
    SELECT c.citing FROM citations c WHERE c.cited = h.x AND c.citing <> :key
    ORDER BY c.citing_day DESC, c.citing DESC LIMIT :n
) s JOIN papers p ON p.id = s.citing JOIN works w ON w.key = s.citing
UNION ALL
SELECT h.x, 1, c.cited, greatest(w.cited_edges, coalesce(w.citation_count, 0)) FROM hood h
JOIN citations c ON c.citing = h.x JOIN papers p ON p.id = c.cited JOIN works w ON w.key = c.cited
WHERE c.cited <> :key
"""
)
_HOOD_PATHS_SQLITE = (
    _HOOD
    + """, bounds AS MATERIALIZED (
    SELECT h.x, coalesce((
        SELECT c.citing_day FROM citations c WHERE c.cited = h.x AND c.citing <> :key
        ORDER BY c.citing_day DESC LIMIT 1 OFFSET :n_before
    ), -1) AS low FROM hood h
)
SELECT b.x, 0, c.citing, max(w.cited_edges, coalesce(w.citation_count, 0))
FROM bounds b JOIN citations c ON c.cited = b.x AND c.citing_day >= b.low
JOIN papers p ON p.id = c.citing JOIN works w ON w.key = c.citing WHERE c.citing <> :key
UNION ALL
SELECT h.x, 1, c.cited, max(w.cited_edges, coalesce(w.citation_count, 0))
FROM hood h JOIN citations c ON c.citing = h.x JOIN papers p ON p.id = c.cited JOIN works w ON w.key = c.cited
WHERE c.cited <> :key
"""
)


def _counted(conn: Connection, sql: Any, params: dict[str, Any]) -> dict[str, int]:
    return {str(k): int(n) for k, n in conn.execute(sql, params)}


# The sampled citers of the paper's references: (ref, citer) pairs, at most :n per reference (its most
# recent), never the paper itself. PostgreSQL: a LATERAL top-n per reference. SQLite has no LATERAL:
# the :n-th newest day of each reference (a scalar subquery, run once per reference) bounds an index
# range of (cited, citing_day), so a tie on that day lets the whole day in.
_SAMPLE_PG = """
WITH refs AS (
    SELECT cited AS ref FROM citations WHERE citing = :key AND cited <> :key ORDER BY cited LIMIT :refs
), sample AS (
    SELECT r.ref, s.citing FROM refs r CROSS JOIN LATERAL (
        SELECT c.citing FROM citations c WHERE c.cited = r.ref AND c.citing <> :key
        ORDER BY c.citing_day DESC, c.citing DESC LIMIT :n
    ) s
)
"""
_SAMPLE_SQLITE = """
WITH refs AS (
    SELECT cited AS ref FROM citations WHERE citing = :key AND cited <> :key ORDER BY cited LIMIT :refs
), bounds AS MATERIALIZED (
    SELECT r.ref, coalesce((
        SELECT c.citing_day FROM citations c WHERE c.cited = r.ref AND c.citing <> :key
        ORDER BY c.citing_day DESC LIMIT 1 OFFSET :n_before
    ), -1) AS low FROM refs r
), sample AS (
    SELECT b.ref, c.citing FROM bounds b JOIN citations c ON c.cited = b.ref AND c.citing_day >= b.low
    WHERE c.citing <> :key
)
"""
_COUPLING = """
SELECT citing, count(*) AS n FROM sample GROUP BY citing ORDER BY n DESC, citing LIMIT :limit
"""
_PRIOR = """
SELECT c.cited, count(DISTINCT s.ref) AS n
FROM sample s JOIN citations c ON c.citing = s.citing
WHERE c.cited IN (SELECT ref FROM refs) AND c.cited <> s.ref
GROUP BY c.cited ORDER BY n DESC, c.cited LIMIT :limit
"""
_CO_CITATION = """
WITH citers AS (
    SELECT citing FROM citations WHERE cited = :key ORDER BY citing_day DESC, citing DESC LIMIT :citers
)
SELECT c.cited, count(*) AS n FROM citers t JOIN citations c ON c.citing = t.citing
WHERE c.cited <> :key
GROUP BY c.cited ORDER BY n DESC, c.cited LIMIT :limit
"""
