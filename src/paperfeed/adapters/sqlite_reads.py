"""Reading a SQLite store with Python's own ``sqlite3`` driver: the commands that only look start fast.

``paperfeed stats`` and a keyword search read a few rows; importing SQLAlchemy and declaring the tables
cost them ~0.4 s of CPU before the first query (docs/cli.md, "Start-up time"). This implements
:class:`~paperfeed.domain.ports.StoreReads` on the stdlib driver instead. It reads only: the connection
is ``query_only``, and a store it cannot vouch for (no file yet, a schema older or newer than these
migrations' head) is refused, so the composition root falls back to the SQL store, which creates or
migrates it. The SQL store stays the one writer and the way to PostgreSQL.

Values come back exactly as the SQL store returns them (tests/store/test_sqlite_reads.py compares the
two on the same file): JSON columns decoded with the same codec, date-times as aware UTC.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson

from paperfeed.domain.community import with_local_counts
from paperfeed.domain.indexing_status import INDEXER_REPORT_CHECKPOINT, IndexerReport
from paperfeed.domain.models import Paper
from paperfeed.domain.ports import DerivedStats, StoreStats
from paperfeed.domain.summaries import current_summary
from paperfeed.domain.topics import TopicBuild

from .migration_head import plain_head

__all__ = ["SqliteReads", "open_sqlite_reads", "sqlite_path"]

_CHUNK = 900  # ids per IN (...): under every SQLite build's variable limit
_PREFIXES = ("sqlite:///", "sqlite+pysqlite:///")
_COLUMNS = (
    "id, title, abstract, authors, categories, version, published, updated, comment, journal_ref, doi, "
    "license, github_repo, github_stars, project_page, upvotes, num_comments, organization, ai_summary, "
    "ai_keywords, sources, summary_line, summary_key, content_hash"
)


_HIDDEN_READERS = "SELECT id FROM users WHERE hidden_at IS NOT NULL"
_VISIBLE = (  # the rule of adapters/store/community.py's local_upvotes / local_comments and not_hidden
    "SELECT {columns}, "
    "(SELECT COUNT(*) FROM paper_upvotes v WHERE v.paper_id = papers.id "
    f"AND v.user_id NOT IN ({_HIDDEN_READERS})), "
    "(SELECT COUNT(*) FROM paper_comments c WHERE c.paper_id = papers.id AND c.hidden_at IS NULL "
    f"AND c.user_id NOT IN ({_HIDDEN_READERS})) "
    "FROM papers WHERE id IN ({marks}) "
    "AND NOT EXISTS (SELECT 1 FROM hidden_papers h WHERE h.paper_id = papers.id)"
)


def sqlite_path(url: str) -> Path | None:
    """The file of a plain SQLite URL; None for anything else (PostgreSQL, memory, URL-encoded names or
    query options: those go through SQLAlchemy, which knows how to read them)."""
    for prefix in _PREFIXES:
        if url.startswith(prefix):
            rest = url[len(prefix) :]
            return Path(rest) if rest and not any(c in rest for c in "?%#") else None
    return None


def _moment(value: str | None) -> datetime | None:
    """A stored date-time (SQLite keeps naive UTC text) as the aware UTC value the SQL store returns."""
    return None if value is None else datetime.fromisoformat(value).replace(tzinfo=UTC)


def _stamp(moment: datetime) -> str:
    """``moment`` as SQLAlchemy writes it into SQLite: naive UTC, microseconds always (sorts as text)."""
    utc = moment.astimezone(UTC) if moment.tzinfo is not None else moment
    return utc.strftime("%Y-%m-%d %H:%M:%S.%f")


def _paper(row: tuple[Any, ...]) -> Paper:
    (pid, title, abstract, authors, cats, version, published, updated, comment, journal_ref, doi) = row[:11]
    (license_, repo, stars, page, upvotes, comments, org, summary, keywords, sources) = row[11:21]
    (line, key, text_hash) = row[21:]
    return Paper(
        id=pid,
        title=title,
        abstract=abstract,
        authors=tuple(orjson.loads(authors)),
        categories=tuple(orjson.loads(cats)),
        version=version,
        published=_moment(published),
        updated=_moment(updated),
        comment=comment,
        journal_ref=journal_ref,
        doi=doi,
        license=license_,
        github_repo=repo,
        github_stars=stars,
        project_page=page,
        upvotes=upvotes,
        num_comments=comments,
        organization=org,
        ai_summary=summary,
        ai_keywords=tuple(orjson.loads(keywords)),
        sources=dict(orjson.loads(sources)),
        extracted_summary=current_summary(line, key, text_hash),
    )


class SqliteReads:
    """:class:`~paperfeed.domain.ports.StoreReads` on a SQLite file at the current schema, read-only."""

    def __init__(self, path: Path, location: str) -> None:
        self.location = location  # the store's URL, as stats shows it
        self._conn = sqlite3.connect(path, timeout=30.0, check_same_thread=False)
        self._conn.execute("PRAGMA query_only = ON")

    def schema_revision(self) -> str | None:
        try:
            rows = self._conn.execute("SELECT version_num FROM alembic_version").fetchall()
        except sqlite3.DatabaseError:
            return None
        return rows[0][0] if len(rows) == 1 else None

    def _one(self, sql: str, params: Sequence[Any] = ()) -> Any:
        return self._conn.execute(sql, params).fetchone()[0]

    def stats(self) -> StoreStats:
        # one statement each: SQLite answers a lone min() or max() from the published index
        first, last = (self._one(f"SELECT {f}(published) FROM papers") for f in ("min", "max"))
        rows = self._conn.execute("SELECT source, papers FROM source_counts WHERE papers > 0").fetchall()
        return StoreStats(
            papers=self._one("SELECT count(*) FROM papers"),
            listings=self._one("SELECT count(*) FROM listings"),
            listing_days=self._one("SELECT count(DISTINCT day) FROM listings"),
            by_source=dict(sorted(rows)),
            first_published=None if first is None else str(first)[:10],
            last_published=None if last is None else str(last)[:10],
            location=self.location,
        )

    def count_papers(self) -> int:
        """:class:`~paperfeed.domain.coverage.PaperCount` (``paperfeed search``'s coverage note)."""
        return int(self._one("SELECT COUNT(*) FROM papers"))

    def derived_stats(self) -> DerivedStats:
        # the (model_id, paper_id) index answers the count per model without reading a vector
        rows = self._conn.execute("SELECT model_id, count(*) FROM embeddings GROUP BY model_id").fetchall()
        build = self._conn.execute(
            "SELECT generation, built_at, model_id, method, papers, topics, noise FROM topic_builds "
            "ORDER BY generation DESC LIMIT 1"
        ).fetchone()
        topics = None
        if build is not None:
            coarse = self._one("SELECT count(*) FROM topics WHERE level = 1")
            generation, built_at, model_id, method, papers, fine, noise = build
            when = _moment(built_at)
            assert when is not None
            topics = TopicBuild(generation, when, model_id, method, papers, fine, noise, coarse)
        return DerivedStats(vectors=dict(sorted((str(m), int(n)) for m, n in rows)), topics=topics)

    def indexer_report(self) -> IndexerReport | None:
        """The newest indexer report (:class:`~paperfeed.domain.indexing_status.IndexerReports`), read
        without SQLAlchemy for ``paperfeed search``'s coverage note."""
        row = self._conn.execute(
            "SELECT value FROM checkpoints WHERE name = ?", (INDEXER_REPORT_CHECKPOINT,)
        ).fetchone()
        try:
            found = orjson.loads(row[0]) if row is not None else None
        except orjson.JSONDecodeError:
            return None
        return IndexerReport.from_json(found) if isinstance(found, dict) else None

    def get_paper(self, paper_id: str) -> Paper | None:
        return self.get_papers([paper_id]).get(paper_id)

    def get_papers(self, paper_ids: Sequence[str]) -> dict[str, Paper]:
        found: dict[str, Paper] = {}
        ids = list(paper_ids)
        for start in range(0, len(ids), _CHUNK):
            chunk = ids[start : start + _CHUNK]
            marks = ", ".join("?" * len(chunk))
            for row in self._conn.execute(f"SELECT {_COLUMNS} FROM papers WHERE id IN ({marks})", chunk):
                found[row[0]] = _paper(row)
        return found

    def hidden_paper_ids(self) -> frozenset[str]:
        return frozenset(r[0] for r in self._conn.execute("SELECT paper_id FROM hidden_papers"))

    def visible_papers(self, paper_ids: Sequence[str]) -> dict[str, Paper]:
        """:class:`~paperfeed.domain.visible.VisibleReads` on the stdlib driver: the papers among
        ``paper_ids`` an administrator did not hide, with this instance's votes and comments (of readers
        not hidden; hidden comments left out) added to the imported counts, as the SQL store shows them."""
        found: dict[str, Paper] = {}
        ids = list(dict.fromkeys(paper_ids))
        for start in range(0, len(ids), _CHUNK):
            chunk = ids[start : start + _CHUNK]
            marks = ", ".join("?" * len(chunk))
            for row in self._conn.execute(_VISIBLE.format(columns=_COLUMNS, marks=marks), chunk):
                found[row[0]] = with_local_counts(_paper(row[:-2]), row[-2], row[-1])
        return found

    def changed_after(self, moment: datetime) -> bool:
        row = self._conn.execute("SELECT 1 FROM papers WHERE modified_at > ? LIMIT 1", (_stamp(moment),))
        return row.fetchone() is not None

    def close(self) -> None:
        self._conn.close()


def open_sqlite_reads(url: str) -> SqliteReads | None:
    """A reader of the SQLite store at ``url`` when it exists at the schema these migrations end at;
    None otherwise (then the SQL store must open it: it creates or migrates)."""
    path = sqlite_path(url)
    if path is None or not path.is_file():
        return None
    head = plain_head()
    try:
        reads = SqliteReads(path, url)
    except sqlite3.Error:
        return None
    if head is None or reads.schema_revision() != head:
        reads.close()
        return None
    return reads
