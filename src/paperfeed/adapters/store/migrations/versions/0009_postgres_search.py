"""PostgreSQL full-text search: a weighted ``tsvector`` on papers, kept by a trigger, with a GIN index.

PostgreSQL only (SQLite's keyword table is FTS5, revision 0003; this revision does nothing there).

* ``paperfeed_fold(text)`` folds accented Latin letters to their base letter, one character for one
  (the same table as tantivy's ``fold``; PostgreSQL's ``unaccent`` is an optional extension, and a
  ``translate`` is immutable, which an index expression needs).
* ``paperfeed_search_document(title, abstract, authors)`` is the document: English stemming, weight A
  for the title, B for the abstract, C for the authors (a JSON array: PostgreSQL leaves a position gap
  between its strings, so a phrase never runs from one author's name into the next). The abstract starts
  after a stop-word, which leaves a gap after the title for the same reason.
* ``papers.search_tsv`` holds it; a BEFORE trigger recomputes it only when title, abstract or authors
  changed (an upvote update costs nothing), in the same transaction as the change.

Revision ID: 0009_postgres
Revises: 0008_digests
Create Date: 2026-11-22
"""

import unicodedata

from alembic import op

revision = "0009_postgres"
down_revision = "0008_digests"
branch_labels = None
depends_on = None

CONFIG = "pg_catalog.english"


def _fold_pairs() -> tuple[str, str]:
    """Latin-1 Supplement, Latin Extended-A and -B letters and their base letters (decompositions are
    fixed by Unicode's stability policy, so this is the same table on every Python)."""
    src, dst = [], []
    for cp in range(0x80, 0x250):
        base = "".join(c for c in unicodedata.normalize("NFKD", chr(cp)) if not unicodedata.combining(c))
        if len(base) == 1 and base.isascii() and base != chr(cp):
            src.append(chr(cp))
            dst.append(base)
    for a, b in zip("ŁłØøĐđĦħıŦŧ", "LlOoDdHhiTt", strict=True):  # strokes: no decomposition
        src.append(a)
        dst.append(b)
    return "".join(src), "".join(dst)


def _literal(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


def upgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    src, dst = _fold_pairs()
    op.execute(
        f"""CREATE FUNCTION paperfeed_fold(value text) RETURNS text
        LANGUAGE sql IMMUTABLE PARALLEL SAFE STRICT
        AS $$ SELECT translate(value, {_literal(src)}, {_literal(dst)}) $$"""
    )
    op.execute(
        f"""CREATE FUNCTION paperfeed_search_document(title text, abstract text, authors json)
        RETURNS tsvector LANGUAGE sql IMMUTABLE PARALLEL SAFE
        AS $$ SELECT
            setweight(to_tsvector('{CONFIG}', paperfeed_fold(coalesce(title, ''))), 'A')
            || setweight(to_tsvector('{CONFIG}', 'the ' || paperfeed_fold(coalesce(abstract, ''))), 'B')
            || setweight(to_tsvector('{CONFIG}', paperfeed_fold(coalesce(authors::text, '[]'))::json), 'C')
        $$"""
    )
    op.execute("ALTER TABLE papers ADD COLUMN search_tsv tsvector")
    op.execute(
        """CREATE FUNCTION paperfeed_papers_search() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            IF TG_OP = 'INSERT' OR NEW.title IS DISTINCT FROM OLD.title
                    OR NEW.abstract IS DISTINCT FROM OLD.abstract
                    OR NEW.authors::text IS DISTINCT FROM OLD.authors::text
                    OR NEW.search_tsv IS NULL THEN
                NEW.search_tsv := paperfeed_search_document(NEW.title, NEW.abstract, NEW.authors);
            END IF;
            RETURN NEW;
        END $$"""
    )
    op.execute(
        """CREATE TRIGGER papers_search BEFORE INSERT OR UPDATE ON papers
        FOR EACH ROW EXECUTE FUNCTION paperfeed_papers_search()"""
    )
    op.execute("UPDATE papers SET search_tsv = paperfeed_search_document(title, abstract, authors)")
    op.execute("CREATE INDEX ix_papers_search ON papers USING gin (search_tsv)")


def downgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    op.execute("DROP INDEX IF EXISTS ix_papers_search")
    op.execute("DROP TRIGGER IF EXISTS papers_search ON papers")
    op.execute("DROP FUNCTION IF EXISTS paperfeed_papers_search()")
    op.execute("ALTER TABLE papers DROP COLUMN IF EXISTS search_tsv")
    op.execute("DROP FUNCTION IF EXISTS paperfeed_search_document(text, text, json)")
    op.execute("DROP FUNCTION IF EXISTS paperfeed_fold(text)")
