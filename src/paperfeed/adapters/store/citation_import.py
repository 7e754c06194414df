"""Bulk imports of citations into the paper graph
(:class:`~paperfeed.domain.citation_import.CitationImportRecords`), SQLite and PostgreSQL alike.

One batch is one transaction: the aliases it teaches (and the works stored under an alias, moved to their
key), the works its edges name, its edges, and the file's row of the import ledger. The edges and works
are the harvest's (``citations``, ``works``), written the way :class:`~.citations.SqlCitationRecords` writes
them: a new pair is inserted with the file's provenance as its one source and raises its cited work's
``cited_edges``; a pair already stored (a harvest, another file) unions its sources, contexts and intents
and ORs its influence, so a second import of a file finds every pair unchanged and writes nothing.

Speed: the batch's keys and pairs are looked up with one statement per batch (PostgreSQL: ``= ANY`` /
``unnest`` of arrays; SQLite: a join over ``json_each`` of one JSON array parameter) and written on the
DB-API cursor of the transaction (``executemany`` on SQLite, ``unnest`` of arrays on PostgreSQL), because
SQLAlchemy's per-row parameter processing cost more than SQLite's own insert; ``bench/citation_import.py``
has the figures. Works a batch *describes* (records of a papers or works file) go through the harvest's
merging writer, field by field.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from itertools import chain
from typing import Any

import orjson
from sqlalchemy import select, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Connection, Engine

from paperfeed.domain.citation_import import BatchSaved, EdgeBatch, FileMark, ImportPoint, ImportState
from paperfeed.domain.paper_graph import WorkRef, arxiv_month_day

from .citations import _WORK_FIELDS, SqlCitationRecords, _Edge
from .columns import UtcDateTime
from .schema_citations import citation_imports

__all__ = ["SqlCitationImport", "key_rank"]


def key_rank(key: str) -> int:
    """How good a key is, as :func:`~paperfeed.domain.paper_graph.work_key` ranks ids: an arXiv id 0, a
    DOI 1, a Semantic Scholar paper id 2, anything else (a corpus id, an OpenAlex id) 3. An alias only ever
    points at a better key, so aliases never form a cycle."""
    if ":" not in key:
        return 0
    if key.startswith("doi:"):
        return 1
    if key.startswith("s2:"):
        return 2
    return 3


def _json_list(value: Any) -> list[Any]:
    """A JSON column's list, read as SQLite (text) or psycopg (parsed already) hands it back."""
    if value is None:
        return []
    if isinstance(value, list):
        return value
    parsed = orjson.loads(value)
    return parsed if isinstance(parsed, list) else []


@dataclass(frozen=True, slots=True)
class _Dialect:
    """The few statements whose shape differs between SQLite and PostgreSQL, on the DB-API cursor."""

    pg: bool

    def keys_in(self, cur: Any, select_sql: str, join_col: str, keys: Sequence[str]) -> list[tuple[Any, ...]]:
        """Rows of ``select_sql`` (``SELECT … FROM <table> t``) whose ``t.<join_col>`` is one of ``keys``."""
        if not keys:
            return []
        if self.pg:
            cur.execute(f"{select_sql} WHERE t.{join_col} = ANY(%s)", (list(keys),))
        else:
            # CROSS JOIN: SQLite keeps the array as the outer loop and probes the table's index per key
            head, _, tail = select_sql.partition(" FROM ")
            cur.execute(
                f"{head} FROM json_each(?) AS j CROSS JOIN {tail} ON t.{join_col} = j.value",
                (orjson.dumps(list(keys)).decode(),),
            )
        return list(cur.fetchall())

    def pairs_in(self, cur: Any, pairs: Sequence[tuple[str, str]]) -> list[tuple[Any, ...]]:
        """Stored edges among ``pairs``: (citing, cited, is_influential, contexts, intents, sources)."""
        if not pairs:
            return []
        # the lists as text: parsed with orjson only where needed (psycopg's JSON loader doubled the time)
        columns = (
            "c.citing, c.cited, c.is_influential, CAST(c.contexts AS TEXT), CAST(c.intents AS TEXT), "
            "CAST(c.sources AS TEXT)"
        )
        if self.pg:
            cur.execute(
                f"SELECT {columns} FROM unnest(%s::text[], %s::text[]) AS j(citing, cited) "
                "JOIN citations c ON c.citing = j.citing AND c.cited = j.cited",
                ([p[0] for p in pairs], [p[1] for p in pairs]),
            )
        else:
            cur.execute(
                f"SELECT {columns} FROM json_each(?) AS j CROSS JOIN citations c "
                "ON c.citing = json_extract(j.value, '$[0]') AND c.cited = json_extract(j.value, '$[1]')",
                (orjson.dumps(pairs).decode(),),
            )
        return list(cur.fetchall())

    def insert_works(self, cur: Any, rows: Sequence[tuple[str, int, Any]]) -> None:
        """Bare works (a key, its ``sort_day``, ``updated_at``): nothing known but the key."""
        if not rows:
            return
        if self.pg:
            cur.execute(
                "INSERT INTO works (key, cited_edges, sort_day, updated_at) "
                "SELECT k, 0, d, %s FROM unnest(%s::text[], %s::int[]) AS t(k, d) "
                "ON CONFLICT (key) DO NOTHING",
                (rows[0][2], [r[0] for r in rows], [r[1] for r in rows]),
            )
        else:
            cur.executemany(
                "INSERT INTO works (key, cited_edges, sort_day, updated_at) VALUES (?, 0, ?, ?) "
                "ON CONFLICT (key) DO NOTHING",
                rows,
            )

    def insert_edges(self, cur: Any, rows: Sequence[tuple[Any, ...]]) -> None:
        """New edges: (citing, cited, citing_day, is_influential, contexts, intents, sources, first_seen),
        the three lists as JSON text."""
        if not rows:
            return
        if not self.pg:
            cur.executemany(
                "INSERT INTO citations "
                "(citing, cited, citing_day, is_influential, contexts, intents, sources, first_seen) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (citing, cited) DO NOTHING",
                rows,
            )
            return
        # PostgreSQL: one statement per batch, arrays unnested. Rows that share everything but their ends
        # (a pairs file's: no details, one source) send those values once: casting a JSON array per row
        # doubled the insert's time.
        shared: dict[tuple[Any, ...], list[tuple[Any, ...]]] = {}
        for row in rows:
            shared.setdefault(row[3:], []).append(row)
        single = [group[0] for group in shared.values() if len(group) == 1]
        for tail, group in shared.items():
            if len(group) > 1:
                cur.execute(
                    "INSERT INTO citations "
                    "(citing, cited, citing_day, is_influential, contexts, intents, sources, first_seen) "
                    "SELECT a, b, d, %s, %s::json, %s::json, %s::json, %s "
                    "FROM unnest(%s::text[], %s::text[], %s::int[]) AS t(a, b, d) "
                    "ON CONFLICT (citing, cited) DO NOTHING",
                    (*tail, [r[0] for r in group], [r[1] for r in group], [r[2] for r in group]),
                )
        if single:
            columns = list(zip(*single, strict=True))
            cur.execute(
                "INSERT INTO citations "
                "(citing, cited, citing_day, is_influential, contexts, intents, sources, first_seen) "
                "SELECT a, b, d, i, c::json, n::json, s::json, f FROM unnest(%s::text[], %s::text[], "
                "%s::int[], %s::bool[], %s::text[], %s::text[], %s::text[], %s::timestamptz[]"
                ") AS t(a, b, d, i, c, n, s, f) ON CONFLICT (citing, cited) DO NOTHING",
                [list(c) for c in columns],
            )

    def update_edges(self, cur: Any, rows: Sequence[tuple[Any, ...]]) -> None:
        """Merged edges: (is_influential, contexts, intents, sources, citing, cited), lists as JSON text."""
        if not rows:
            return
        mark = "%s" if self.pg else "?"
        cast = "::json" if self.pg else ""
        cur.executemany(
            f"UPDATE citations SET is_influential = {mark}, contexts = {mark}{cast}, intents = {mark}{cast}, "
            f"sources = {mark}{cast} WHERE citing = {mark} AND cited = {mark}",
            rows,
        )

    def update_sources(self, cur: Any, rows: Sequence[tuple[str, str, str]]) -> None:
        """Stored edges that gained a source: (sources as JSON text, citing, cited)."""
        if not rows:
            return
        mark = "%s" if self.pg else "?"
        cast = "::json" if self.pg else ""
        cur.executemany(
            f"UPDATE citations SET sources = {mark}{cast} WHERE citing = {mark} AND cited = {mark}", rows
        )

    def add_cited(self, cur: Any, counts: dict[str, int]) -> None:
        """``cited_edges`` of each key raised (or lowered) by its count."""
        if not counts:
            return
        if self.pg:
            cur.execute(
                "UPDATE works SET cited_edges = works.cited_edges + t.n "
                "FROM unnest(%s::text[], %s::int[]) AS t(k, n) WHERE works.key = t.k",
                (list(counts), list(counts.values())),
            )
        else:
            cur.executemany(
                "UPDATE works SET cited_edges = cited_edges + ? WHERE key = ?",
                [(n, k) for k, n in counts.items()],
            )

    def learn_aliases(self, cur: Any, aliases: dict[str, str]) -> None:
        """Store ``aliases`` (alias -> key), and point the aliases that named an alias at its key."""
        if not aliases:
            return
        mark = "%s" if self.pg else "?"
        rows = list(aliases.items())
        if self.pg:
            cur.execute(
                "INSERT INTO work_aliases (alias, key) "
                "SELECT a, k FROM unnest(%s::text[], %s::text[]) AS t(a, k) "
                "ON CONFLICT (alias) DO UPDATE SET key = excluded.key",
                ([a for a, _ in rows], [k for _, k in rows]),
            )
        else:
            cur.executemany(
                "INSERT INTO work_aliases (alias, key) VALUES (?, ?) "
                "ON CONFLICT (alias) DO UPDATE SET key = excluded.key",
                rows,
            )
        cur.executemany(f"UPDATE work_aliases SET key = {mark} WHERE key = {mark}", [(k, a) for a, k in rows])


class SqlCitationImport:
    """The import side of the paper graph; knows tables, not files."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self._sql = _Dialect(engine.dialect.name == "postgresql")
        self.graph = SqlCitationRecords(engine)
        self._insert: Any = postgresql.insert if self._sql.pg else sqlite.insert
        # the driver's value of a timestamp, as SQLAlchemy would bind it (SQLite: its text format)
        bind = UtcDateTime().dialect_impl(engine.dialect).bind_processor(engine.dialect)
        self.stamp: Callable[[datetime], Any] = bind if bind is not None else (lambda v: v)

    # -- the ledger ---------------------------------------------------------------------------------

    def state(self, fingerprint: str) -> ImportState | None:
        query = select(
            citation_imports.c.byte_offset,
            citation_imports.c.line,
            citation_imports.c.done,
            citation_imports.c.edges_added,
            citation_imports.c.rejected,
        ).where(citation_imports.c.fingerprint == fingerprint)
        with self.engine.connect() as conn:
            row = conn.execute(query).first()
        if row is None:
            return None
        return ImportState(
            ImportPoint(int(row.byte_offset), int(row.line)),
            bool(row.done),
            int(row.edges_added),
            int(row.rejected),
        )

    def restart(self, mark: FileMark) -> None:
        with self.engine.begin() as conn:
            self._ledger(conn, mark, ImportPoint(0, 0), added=0, rejected=0, fresh=True)

    def finish(self, mark: FileMark) -> None:
        now = datetime.now(UTC)
        with self.engine.begin() as conn:
            conn.execute(
                update(citation_imports)
                .where(citation_imports.c.fingerprint == mark.fingerprint)
                .values(done=True, finished_at=now, updated_at=now)
            )

    def _ledger(
        self, conn: Connection, mark: FileMark, point: ImportPoint, *, added: int, rejected: int, fresh: bool
    ) -> None:
        """The file's row: its new place; counts added to the row's (``fresh``: set, a new pass)."""
        now = datetime.now(UTC)
        values = {
            "fingerprint": mark.fingerprint,
            "name": mark.name,
            "format": mark.format.value,
            "source": mark.source,
            "byte_offset": point.offset,
            "line": point.line,
            "done": False,
            "edges_added": added,
            "rejected": rejected,
            "started_at": now,
            "updated_at": now,
            "finished_at": None,
        }
        stmt = self._insert(citation_imports).values(**values)
        t = citation_imports
        kept = {
            "name": stmt.excluded.name,
            "format": stmt.excluded.format,
            "source": stmt.excluded.source,
            "byte_offset": stmt.excluded.byte_offset,
            "line": stmt.excluded.line,
            "done": stmt.excluded.done,
            "updated_at": stmt.excluded.updated_at,
            "finished_at": stmt.excluded.finished_at,
        }
        if fresh:
            kept.update(
                edges_added=stmt.excluded.edges_added,
                rejected=stmt.excluded.rejected,
                started_at=stmt.excluded.started_at,
            )
        else:
            kept.update(
                edges_added=t.c.edges_added + stmt.excluded.edges_added,
                rejected=t.c.rejected + stmt.excluded.rejected,
            )
        conn.execute(stmt.on_conflict_do_update(index_elements=[t.c.fingerprint], set_=kept))

    # -- a batch ------------------------------------------------------------------------------------

    def save_batch(self, batch: EdgeBatch, mark: FileMark, *, touching_store: bool) -> BatchSaved:
        saved = BatchSaved()
        now = datetime.now(UTC)
        with self.engine.begin() as conn:
            cur = conn.connection.cursor()
            try:
                _Save(self, conn, cur, now, mark.source, saved).run(batch, touching_store=touching_store)
            finally:
                cur.close()
            self._ledger(
                conn, mark, batch.point, added=saved.edges_added, rejected=len(batch.rejects), fresh=False
            )
        return saved


class _Save:
    """One batch's transaction, step by step (see :meth:`run`)."""

    def __init__(
        self,
        owner: SqlCitationImport,
        conn: Connection,
        cur: Any,
        now: datetime,
        source: str,
        saved: BatchSaved,
    ) -> None:
        self.owner, self.sql, self.conn, self.cur = owner, owner._sql, conn, cur
        self.now, self.stamp, self.source, self.saved = now, owner.stamp(now), source, saved
        self.plain = _Edge(None, [], [], [source])  # an edge a file names and says nothing more of
        self.plain_sources = orjson.dumps([source]).decode()

    def run(self, batch: EdgeBatch, *, touching_store: bool) -> None:
        """Aliases first (so this batch's edges already meet their works' keys), then the works the edges
        name and the works described, then the edges."""
        aliases = self.learn(batch.aliases)
        refs = dict.fromkeys(chain.from_iterable(batch.edges))  # each end once, in C
        lookup = self.aliases_of([r for r in refs if ":" in r] + [w.key for w in batch.works], aliases)

        def resolve(ref: str) -> str:
            return lookup.get(ref, ref)

        plain = self.plain
        edges: dict[tuple[str, str], _Edge] = {}
        fast = not lookup and not batch.details
        if fast:
            # the common case (pairs files): no alias to follow, no details; one dict built in C
            edges = dict.fromkeys(batch.edges, plain)
            selfs = [p for p in edges if p[0] == p[1]]
            for pair in selfs:
                del edges[pair]
            if selfs:
                self.saved.self_citations += sum(1 for a, b in batch.edges if a == b)
                refs = dict.fromkeys(chain.from_iterable(edges))
        else:
            for citing, cited in batch.edges:
                pair = (resolve(citing), resolve(cited))
                if pair[0] == pair[1]:
                    self.saved.self_citations += 1
                    continue
                detail = batch.details.get((citing, cited))
                if detail is None:
                    edges.setdefault(pair, plain)
                    continue
                edge = _Edge(
                    detail.is_influential, list(detail.contexts), list(detail.intents), [self.source]
                )
                found = edges.get(pair)
                if found is None or found is plain:
                    edges[pair] = edge
                else:
                    found.merge(edge)
        described: dict[str, WorkRef] = {}
        for ref in batch.works:
            key = resolve(ref.key)
            described[key] = _described(described.get(key), ref, key)
        ends = refs if fast else dict.fromkeys(chain.from_iterable(edges))
        keys = [*ends, *(k for k in described if k not in ends)]
        known = dict(self.sql.keys_in(self.cur, "SELECT t.key, t.sort_day FROM works t", "key", keys))
        if touching_store:
            in_store = {
                r[0]
                for r in self.sql.keys_in(
                    self.cur, "SELECT t.id FROM papers t", "id", [k for k in keys if ":" not in k]
                )
            }
            kept = {pair: e for pair, e in edges.items() if pair[0] in in_store or pair[1] in in_store}
            self.saved.outside_store += len(edges) - len(kept)
            edges = kept
            ends = dict.fromkeys(chain.from_iterable(edges))
            described = {k: w for k, w in described.items() if k in ends or k in in_store or k in known}
        days = self.write_works(ends, described, known)
        added, merged, unchanged = self.write_edges(edges, days, plain_only=fast)
        self.saved.edges_added += added
        self.saved.edges_merged += merged
        self.saved.edges_unchanged += unchanged

    # -- aliases -------------------------------------------------------------------------------------

    def learn(self, given: Sequence[tuple[str, str]]) -> dict[str, str]:
        """Store the aliases a batch teaches, each pointing at its final key; move what was stored under
        an alias to its key. Returns them (alias -> key)."""
        if not given:
            return {}
        taught: dict[str, str] = {}
        for alias, key in given:
            if key_rank(alias) > key_rank(key):
                taught[alias] = key
        # an alias's key may itself be an alias already (a DOI tied to an arXiv id): follow it, in the
        # batch (a few hops at most: every hop is to a better key) and then in the store
        for _ in range(3):
            hops = {a: taught[k] for a, k in taught.items() if k in taught}
            if not hops:
                break
            taught.update(hops)
        stored = dict(
            self.sql.keys_in(
                self.cur, "SELECT t.alias, t.key FROM work_aliases t", "alias", list(set(taught.values()))
            )
        )
        taught = {a: stored.get(k, k) for a, k in taught.items()}
        old = dict(
            self.sql.keys_in(self.cur, "SELECT t.alias, t.key FROM work_aliases t", "alias", list(taught))
        )
        fresh = {a: k for a, k in taught.items() if old.get(a) != k}
        self.sql.learn_aliases(self.cur, fresh)
        self.saved.aliases += len(fresh)
        self.move(taught)  # also what a harvest stored under a known alias since
        return taught

    def aliases_of(self, refs: Iterable[str], taught: dict[str, str]) -> dict[str, str]:
        """The key of each ref that is an alias (this batch's or the store's)."""
        found = {r: taught[r] for r in refs if r in taught}
        rest = [r for r in refs if r not in taught and key_rank(r) > 0]
        found.update(self.sql.keys_in(self.cur, "SELECT t.alias, t.key FROM work_aliases t", "alias", rest))
        return found

    def move(self, moves: dict[str, str]) -> None:
        """Works stored under a name that turned out to be an alias move to their key: the work's fields
        fill in the key's, its edges become the key's edges (merging with any the key has)."""
        if not moves:
            return
        fields = ", ".join(f"t.{n}" for n in _WORK_FIELDS)
        rows = self.sql.keys_in(self.cur, f"SELECT t.key, {fields} FROM works t", "key", list(moves))
        if not rows:
            return
        gone = [r[0] for r in rows]
        mark = "%s" if self.sql.pg else "?"
        out = self.sql.keys_in(self.cur, _EDGE_ROWS, "citing", gone)
        inbound = self.sql.keys_in(self.cur, _EDGE_ROWS, "cited", gone)
        self.cur.executemany(f"DELETE FROM citations WHERE citing = {mark}", [(k,) for k in gone])
        self.cur.executemany(f"DELETE FROM citations WHERE cited = {mark}", [(k,) for k in gone])
        lost: dict[str, int] = {}
        leaving = set(gone)
        for row in out:
            if row[1] not in leaving:  # a moved work's own count goes with its row
                lost[row[1]] = lost.get(row[1], 0) - 1
        self.sql.add_cited(self.cur, lost)
        self.cur.executemany(f"DELETE FROM works WHERE key = {mark}", [(k,) for k in gone])
        described: dict[str, WorkRef] = {}
        for r in rows:  # several names of one work may move at once: their fields merge
            key = moves[r[0]]
            ref = WorkRef(key=key, **dict(zip(_WORK_FIELDS, r[1:], strict=True)))
            described[key] = _described(described.get(key), ref, key)
        days = self.owner.graph.write_works(self.conn, described, self.now)[1]
        edges: dict[tuple[str, str], _Edge] = {}
        seen: dict[tuple[str, str], Any] = {}
        for citing, cited, day, influential, contexts, intents, sources, first in {
            (r[0], r[1]): r for r in [*out, *inbound]
        }.values():
            pair = (moves.get(citing, citing), moves.get(cited, cited))
            if pair[0] == pair[1]:
                self.saved.self_citations += 1
                continue
            seen[pair] = first if pair not in seen else min(seen[pair], first)
            edge = _Edge(
                None if influential is None else bool(influential),
                _json_list(contexts),
                _json_list(intents),
                _json_list(sources),
            )
            days.setdefault(pair[0], int(day))
            if pair in edges:
                edges[pair].merge(edge)
            else:
                edges[pair] = edge
        ends = [k for pair in edges for k in pair if k not in days]
        days.update(self.sql.keys_in(self.cur, "SELECT t.key, t.sort_day FROM works t", "key", ends))
        missing = [k for pair in edges for k in pair if k not in days]
        self.sql.insert_works(self.cur, [(k, arxiv_month_day(k), self.stamp) for k in dict.fromkeys(missing)])
        days.update((k, arxiv_month_day(k)) for k in missing)
        self.write_edges(edges, days, seen)  # not counted: these edges were stored already, under the alias
        self.saved.resolved += len(gone)

    # -- works and edges -----------------------------------------------------------------------------

    def write_works(
        self, ends: Iterable[str], described: dict[str, WorkRef], known: dict[str, int]
    ) -> dict[str, int]:
        """Described works merged field by field (the harvest's writer), every other end of an edge
        (``ends``, each once) inserted bare when new; returns each key's ``sort_day``."""
        days: dict[str, int] = {k: int(d) for k, d in known.items()}
        if described:
            added, described_days = self.owner.graph.write_works(self.conn, dict(described), self.now)
            self.saved.works_added += added
            days.update(described_days)
        new = [k for k in ends if k not in days]
        rows = [(k, arxiv_month_day(k), self.stamp) for k in new]
        self.sql.insert_works(self.cur, rows)
        self.saved.works_added += len(rows)
        days.update((k, d) for k, d, _ in rows)
        return days

    def write_edges(
        self,
        edges: dict[tuple[str, str], _Edge],
        days: dict[str, int],
        seen: dict[tuple[str, str], Any] | None = None,
        *,
        plain_only: bool = False,
    ) -> tuple[int, int, int]:
        """New pairs inserted with their provenance; stored pairs merged, rewritten only when that
        changed them; ``cited_edges`` raised by the new ones. ``seen``: when pairs were first seen, for
        edges that move (else now). Returns (inserted, stored pairs that gained a source, stored pairs
        whose sources stayed). ``plain_only``: every edge is :attr:`plain` (a pairs file's batch)."""
        if not edges:
            return 0, 0, 0
        merged_n = unchanged_n = 0
        stored = {(r[0], r[1]): r for r in self.sql.pairs_in(self.cur, list(edges))}
        if plain_only and not stored:  # a batch of new pairs: the rows in one comprehension
            on_day, provenance, now = days.get, self.plain_sources, self.stamp
            rows = [(a, b, on_day(a, 0), None, "[]", "[]", provenance, now) for a, b in edges]
            self.sql.insert_edges(self.cur, rows)
            self.sql.add_cited(self.cur, Counter(b for _, b in edges))
            return len(rows), 0, 0
        inserts: list[tuple[Any, ...]] = []
        updates: list[tuple[Any, ...]] = []
        resourced: list[tuple[str, str, str]] = []
        added: dict[str, int] = {}
        plain, plain_sources, source, stamp, day = (
            self.plain,
            self.plain_sources,
            self.source,
            self.stamp,
            days.get,
        )
        for pair, edge in edges.items():
            row = stored.get(pair)
            citing, cited = pair
            if row is None:
                first = stamp if seen is None else seen.get(pair, stamp)
                if edge is plain:
                    inserts.append((citing, cited, day(citing, 0), None, "[]", "[]", plain_sources, first))
                else:
                    inserts.append(
                        (
                            citing,
                            cited,
                            day(citing, 0),
                            edge.is_influential,
                            orjson.dumps(edge.contexts).decode(),
                            orjson.dumps(edge.intents).decode(),
                            orjson.dumps(sorted(set(edge.sources))).decode(),
                            first,
                        )
                    )
                added[cited] = added.get(cited, 0) + 1
                continue
            sources = _json_list(row[5])
            if edge is plain:  # only the provenance can change
                if source in sources:
                    unchanged_n += 1
                else:
                    merged_n += 1
                    resourced.append((orjson.dumps(sorted({*sources, source})).decode(), citing, cited))
                continue
            before = _Edge(
                None if row[2] is None else bool(row[2]), _json_list(row[3]), _json_list(row[4]), sources
            )
            merged = _Edge(before.is_influential, before.contexts, before.intents, before.sources)
            merged.merge(edge)
            if set(merged.sources) != set(before.sources):
                merged_n += 1
            else:
                unchanged_n += 1
            if merged.same(before):
                continue
            updates.append(
                (
                    merged.is_influential,
                    orjson.dumps(merged.contexts).decode(),
                    orjson.dumps(merged.intents).decode(),
                    orjson.dumps(merged.sources).decode(),
                    citing,
                    cited,
                )
            )
        self.sql.update_sources(self.cur, resourced)
        self.sql.insert_edges(self.cur, inserts)
        self.sql.update_edges(self.cur, updates)
        self.sql.add_cited(self.cur, added)
        return len(inserts), merged_n, unchanged_n


_EDGE_ROWS = (
    "SELECT t.citing, t.cited, t.citing_day, t.is_influential, CAST(t.contexts AS TEXT), "
    "CAST(t.intents AS TEXT), CAST(t.sources AS TEXT), t.first_seen FROM citations t"
)


def _described(prior: WorkRef | None, ref: WorkRef, key: str) -> WorkRef:
    """Two descriptions of one work in a batch: the later's known fields win, the earlier fills the rest."""
    fields = {n: getattr(ref, n) for n in _WORK_FIELDS}
    if prior is not None:
        for name in _WORK_FIELDS:
            if fields[name] is None:
                fields[name] = getattr(prior, name)
    return WorkRef(key=key, **fields)
