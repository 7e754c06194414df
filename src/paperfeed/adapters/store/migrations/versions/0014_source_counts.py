"""Per-source paper counts on SQLite, kept by triggers in the transaction that writes the papers.

``paperfeed stats`` shows how many papers each source has seen. Counting that from ``papers.sources`` (a
JSON object per paper) reads and parses the whole table: about 0.2 s of CPU at 100k papers, on every
``stats``. ``source_counts`` holds the answer instead: one row per source name, its number of papers.

Triggers keep it, not the store's Python code, so every way a paper is written or removed counts the
same: an import or harvest (``apply_batch``), ``paperfeed copy`` into a SQLite file, a repair, a row
deleted by hand. An insert adds one to each of the paper's sources; a delete takes one off; an update
that changes ``sources`` moves the count for the names added or dropped only (a new first-seen time for
a source already there changes nothing). They run inside the statement that changes the paper, so the
count commits or rolls back with it: a failed batch leaves no trace in either. A row may reach 0 (all its
papers deleted); readers show sources with papers only.

PostgreSQL: nothing here. Counters that every writer updates would serialise concurrent writers (web
workers, the scheduler, an import) on their rows; the store asks PostgreSQL for the counts with one
grouped query over ``json_object_keys`` instead (``SqlPaperStore.stats``).

Revision ID: 0014_source_counts
Revises: 0012_topic_levels_picks
Create Date: 2026-11-24
"""

from alembic import op

revision = "0014_source_counts"
down_revision = "0012_topic_levels_picks"
branch_labels = None
depends_on = None

# `WHERE true`: SQLite's parser needs it to tell an upsert's ON CONFLICT from a join's ON after a SELECT.
_STATEMENTS = [
    """CREATE TABLE source_counts (
        source VARCHAR(200) NOT NULL PRIMARY KEY,
        papers INTEGER NOT NULL
    )""",
    """INSERT INTO source_counts (source, papers)
        SELECT j.key, count(*) FROM papers, json_each(papers.sources) AS j WHERE true GROUP BY j.key""",
    """CREATE TRIGGER papers_source_counts_ai AFTER INSERT ON papers
    BEGIN
        INSERT INTO source_counts (source, papers)
            SELECT key, 1 FROM json_each(new.sources) WHERE true
            ON CONFLICT (source) DO UPDATE SET papers = papers + 1;
    END""",
    """CREATE TRIGGER papers_source_counts_ad AFTER DELETE ON papers
    BEGIN
        UPDATE source_counts SET papers = papers - 1
            WHERE source IN (SELECT key FROM json_each(old.sources));
    END""",
    # one statement, each side's keys read once: +1 for a name only the new sources have, -1 for one only
    # the old had; equal key sets (a new first-seen time) sum to 0 everywhere and write nothing
    """CREATE TRIGGER papers_source_counts_au AFTER UPDATE OF sources ON papers
    WHEN old.sources IS NOT new.sources
    BEGIN
        INSERT INTO source_counts (source, papers)
            SELECT key, sum(change) FROM (
                SELECT key, 1 AS change FROM json_each(new.sources)
                UNION ALL SELECT key, -1 FROM json_each(old.sources)
            ) WHERE true GROUP BY key HAVING sum(change) != 0
            ON CONFLICT (source) DO UPDATE SET papers = papers + excluded.papers;
    END""",
]


def upgrade() -> None:
    if op.get_bind().dialect.name != "sqlite":
        return
    for statement in _STATEMENTS:
        op.execute(statement)


def downgrade() -> None:
    if op.get_bind().dialect.name != "sqlite":
        return
    for trigger in ("papers_source_counts_ai", "papers_source_counts_ad", "papers_source_counts_au"):
        op.execute(f"DROP TRIGGER IF EXISTS {trigger}")
    op.execute("DROP TABLE IF EXISTS source_counts")
