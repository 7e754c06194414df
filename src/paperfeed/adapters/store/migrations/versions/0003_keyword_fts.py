"""Keyword search on SQLite: an external-content FTS5 index over papers, fed through a change queue.

The FTS5 table reads its text from ``papers`` (no second copy of titles and abstracts). Triggers do not
write to it directly: an FTS5 insert made from a trigger costs ~3x a plain one when the rows come one
statement at a time (as executemany sends them), because each trigger statement flushes FTS5's pending
terms into a new segment. So the triggers only append the row id (and, for an update or delete, the old
text that FTS5 needs to remove the row) to ``papers_fts_queue``, in the same transaction as the change,
and :class:`~paperfeed.adapters.keyword.fts5.Fts5KeywordIndex` applies the queue in one statement per
batch. No change can be lost: the queue commits or rolls back with the papers.

While tantivy is the engine, ``papers_fts_state.live`` is 0: the triggers do nothing and the FTS5 index is
empty, so imports pay nothing for it and no queue grows; opening the FTS5 index (as the engine, or as the
fallback) rebuilds it from ``papers`` and sets ``live`` back to 1. The revision starts with live=0.

PostgreSQL: nothing yet (a later revision adds a tsvector column); the keyword index there is tantivy.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-22
"""

from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None

# Tokenizer chosen on SciFact train (bench/keyword_quality.py): Porter stemming over unicode61 with
# diacritics folded; see docs in adapters/keyword/fts5.py.
TOKENIZE = "porter unicode61 remove_diacritics 2"

_STATEMENTS = [
    f"""CREATE VIRTUAL TABLE papers_fts USING fts5(
        title, abstract, authors,
        content='papers', content_rowid='rowid', tokenize='{TOKENIZE}'
    )""",
    # rid: papers.rowid; indexed=1 means the old_* text may be in the FTS index and must be removed.
    """CREATE TABLE papers_fts_queue (
        seq INTEGER PRIMARY KEY,
        rid INTEGER NOT NULL,
        indexed INTEGER NOT NULL,
        old_title TEXT,
        old_abstract TEXT,
        old_authors TEXT
    )""",
    # live=0: FTS5 is not the engine (tantivy serves) and its index is empty; the triggers then cost
    # nothing, and opening the FTS5 index rebuilds it and sets live=1 again.
    """CREATE TABLE papers_fts_state (
        id INTEGER PRIMARY KEY CHECK (id = 1),
        live INTEGER NOT NULL
    )""",
    "INSERT INTO papers_fts_state(id, live) VALUES (1, 0)",
    """CREATE TRIGGER papers_fts_ai AFTER INSERT ON papers
    WHEN (SELECT live FROM papers_fts_state) = 1
    BEGIN
        INSERT INTO papers_fts_queue(rid, indexed) VALUES (new.rowid, 0);
    END""",
    """CREATE TRIGGER papers_fts_ad AFTER DELETE ON papers
    WHEN (SELECT live FROM papers_fts_state) = 1
    BEGIN
        INSERT INTO papers_fts_queue(rid, indexed, old_title, old_abstract, old_authors)
        VALUES (old.rowid, 1, old.title, old.abstract, old.authors);
    END""",
    """CREATE TRIGGER papers_fts_au AFTER UPDATE ON papers
    WHEN (SELECT live FROM papers_fts_state) = 1 AND (
        old.title IS NOT new.title OR old.abstract IS NOT new.abstract OR old.authors IS NOT new.authors
        OR old.rowid IS NOT new.rowid)
    BEGIN
        INSERT INTO papers_fts_queue(rid, indexed, old_title, old_abstract, old_authors)
        VALUES (old.rowid, 1, old.title, old.abstract, old.authors);
        INSERT INTO papers_fts_queue(rid, indexed) SELECT new.rowid, 0 WHERE new.rowid IS NOT old.rowid;
    END""",
]


def _has_fts5() -> bool:
    bind = op.get_bind()
    if bind.dialect.name != "sqlite":
        return False
    # Python's bundled SQLite has FTS5; a system SQLite built without it gets no keyword table (the
    # keyword index then reports FTS5 as unavailable) rather than a failed upgrade.
    return bool(bind.exec_driver_sql("SELECT sqlite_compileoption_used('ENABLE_FTS5')").scalar())


def upgrade() -> None:
    if not _has_fts5():
        return
    for statement in _STATEMENTS:
        op.execute(statement)


def downgrade() -> None:
    if op.get_bind().dialect.name != "sqlite":
        return
    for name in ("papers_fts_au", "papers_fts_ad", "papers_fts_ai"):
        op.execute(f"DROP TRIGGER IF EXISTS {name}")
    op.execute("DROP TABLE IF EXISTS papers_fts_queue")
    op.execute("DROP TABLE IF EXISTS papers_fts_state")
    op.execute("DROP TABLE IF EXISTS papers_fts")
