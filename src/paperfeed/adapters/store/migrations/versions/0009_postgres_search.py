"""PostgreSQL full-text search: a weighted ``tsvector`` on papers, kept by a trigger, with a GIN index.

PostgreSQL only (SQLite's keyword table is FTS5, revision 0003; this revision does nothing there).

* ``paperfeed_fold(text)`` takes accents off letters ("Naïve résumé" → "Naive resume"), as tantivy's
  ``fold`` does on SQLite, with built-in immutable functions only (``unaccent`` is an optional extension
  that PostgreSQL servers need not have).
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

from alembic import op

revision = "0009_postgres"
down_revision = "0008_digests"
branch_labels = None
depends_on = None

CONFIG = "pg_catalog.english"
STROKES = ("ŁłØøĐđĦħıŦŧ", "LlOoDdHhiTt")  # letters with a stroke have no Unicode decomposition

# Accents off: decompose (NFD), drop the combining diacritics, recompose (NFC), then the stroked letters.
# Only texts with a non-ASCII character pay for it (~1 % of abstracts); a long translate() table would
# cost O(text x table) on every text (8 ms an abstract). normalize() needs a UTF8 database.
FOLD_UTF8 = rf"""CASE WHEN value ~ '[^\x01-\x7f]'
    THEN translate(normalize(regexp_replace(normalize(value, NFD), '[\u0300-\u036f]', '', 'g'), NFC),
                   '{STROKES[0]}', '{STROKES[1]}')
    ELSE value END"""
FOLD_OTHER = f"translate(value, '{STROKES[0]}', '{STROKES[1]}')"


def upgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    utf8 = op.get_bind().exec_driver_sql("SHOW server_encoding").scalar() == "UTF8"
    op.execute(
        f"""CREATE FUNCTION paperfeed_fold(value text) RETURNS text
        LANGUAGE sql IMMUTABLE PARALLEL SAFE STRICT
        AS $$ SELECT {FOLD_UTF8 if utf8 else FOLD_OTHER} $$"""
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
