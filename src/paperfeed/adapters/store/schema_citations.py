"""Tables of the paper graph (issue #16): works, the citations between them, and the harvest ledger; the
aliases and the ledger of bulk imports (issue #33).

A *work* is keyed by :func:`paperfeed.domain.paper_graph.work_key` (an arXiv id for papers of the store,
``doi:…`` / ``s2:…`` / ``openalex:…`` otherwise); "in the store" means the key is an id in ``papers``.
No foreign keys: a work outside the store has no paper row, and the harvester writes works before edges
in one transaction anyway.

Two figures are kept on the rows so the pages never aggregate a long cited-by list to sort it:

* ``sort_day``: the work's date as an integer ``yyyymmdd`` (``yyyymm00`` when only the month of its arXiv
  id is known, ``yyyy0000`` when only the year is, ``0`` when nothing is). ``citations.citing_day``
  repeats the citing work's ``sort_day``, so "newest citers of X" and "citers of X in the last 12
  months" are ranges of the ``(cited, citing_day)`` index; it is rewritten whenever the citing work's
  date changes. An integer with ``0`` for "unknown" sorts unknown dates last in descending order on both
  dialects (a NULL would sort first on PostgreSQL).
* ``cited_edges``: how many stored edges cite the work, raised as edges are added (edges are never
  removed), so "most cited" sorts by ``max(cited_edges, citation_count)`` without counting.
"""

from __future__ import annotations

from sqlalchemy import JSON, BigInteger, Boolean, Column, Date, Index, Integer, String, Table, Text

from .columns import UtcDateTime
from .schema import metadata

__all__ = ["citation_harvests", "citation_imports", "citations", "metadata", "work_aliases", "works"]

KEY = 300  # work keys: "doi:" + a DOI (DOIs are rarely past 200 characters)

works = Table(
    "works",
    metadata,
    Column("key", String(KEY), primary_key=True),
    Column("title", Text),
    Column("year", Integer),
    Column("published", Date),
    Column("arxiv_id", String(64)),
    Column("doi", String(500)),
    Column("s2_id", String(64)),
    Column("openalex_id", String(32)),
    Column("citation_count", Integer),  # as the source reports it (the largest seen)
    Column("reference_count", Integer),
    Column("cited_edges", Integer, nullable=False),  # stored edges citing it
    Column("sort_day", Integer, nullable=False),  # yyyymmdd, yyyy0000, 0 = unknown
    Column("updated_at", UtcDateTime(), nullable=False),
)

# ``citing`` cites ``cited``; one row per pair whichever sources reported it.
citations = Table(
    "citations",
    metadata,
    Column("citing", String(KEY), primary_key=True),
    Column("cited", String(KEY), primary_key=True),
    Column("citing_day", Integer, nullable=False),  # the citing work's sort_day
    Column("is_influential", Boolean),
    Column("contexts", JSON, nullable=False),  # list of strings
    Column("intents", JSON, nullable=False),  # list of strings
    Column("sources", JSON, nullable=False),  # list of source names, e.g. ["openalex", "s2"]
    Column("first_seen", UtcDateTime(), nullable=False),
    # cited-by lists newest first, and the 12-month window (references use the primary key)
    Index("ix_citations_cited_day", "cited", "citing_day", "citing"),
    # SQLite: the rows live in the primary key's b-tree, so a reference list is one contiguous range
    # and the table holds no second copy of the keys (PostgreSQL ignores this option).
    sqlite_with_rowid=False,
)

# One row per paper of the store and source asked: when, whether the source knew it, and whether its
# lists were complete (a cited-by list is cut at the harvest's limit).
citation_harvests = Table(
    "citation_harvests",
    metadata,
    Column("paper_id", String(64), primary_key=True),
    Column("source", String(32), primary_key=True),
    Column("harvested_at", UtcDateTime(), nullable=False),
    Column("known", Boolean, nullable=False),
    Column("references_complete", Boolean, nullable=False),
    Column("citations_complete", Boolean, nullable=False),
    Index("ix_citation_harvests_source_at", "source", "harvested_at"),
    Index("ix_citation_harvests_at", "harvested_at"),  # the newest harvest moves the data version
)

# Another name of a work, learned from a bulk import's records: ``s2corpus:<n>`` (a Semantic Scholar corpus
# id), ``openalex:W<n>``, or a ``doi:…`` that a record ties to an arXiv id, each pointing at the work's key
# (``domain/citation_import.py``). Always the final key: when a key becomes an alias itself, the aliases
# pointing at it move on (hence the index on ``key``).
work_aliases = Table(
    "work_aliases",
    metadata,
    Column("alias", String(KEY), primary_key=True),
    Column("key", String(KEY), nullable=False),
    Index("ix_work_aliases_key", "key"),
    sqlite_with_rowid=False,
)

# One row per file ever imported (``paperfeed citations import``), keyed by its fingerprint (size and first
# megabyte): where the import stands (bytes of the decompressed text and lines saved, written with each
# batch, so a killed import resumes there) and what it added in its current pass.
citation_imports = Table(
    "citation_imports",
    metadata,
    Column("fingerprint", String(64), primary_key=True),
    Column("name", Text, nullable=False),
    Column("format", String(32), nullable=False),
    Column("source", Text, nullable=False),  # the provenance its edges carry, e.g. "file:edges.tsv.gz"
    Column("byte_offset", BigInteger, nullable=False),
    Column("line", BigInteger, nullable=False),
    Column("done", Boolean, nullable=False),
    Column("edges_added", BigInteger, nullable=False),
    Column("rejected", BigInteger, nullable=False),
    Column("started_at", UtcDateTime(), nullable=False),
    Column("updated_at", UtcDateTime(), nullable=False),  # the newest import moves the data version
    Column("finished_at", UtcDateTime()),
)
