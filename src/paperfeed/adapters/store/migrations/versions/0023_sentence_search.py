"""Evidence search (issue #42): the stored sentences in the order they were stored, and PostgreSQL's
keyword index of sentences.

* ``ix_paper_sentences_stored`` on ``paper_sentences (created_at, paper_id)``: the sentence indexes
  (keyword and vectors) follow the stored sentences by that cursor, a page at a time.
* PostgreSQL only: ``sentence_search``, one row per stored sentence (its paper, its position among the
  paper's sentences, its role) with the sentence's ``tsvector`` (English stemming, accents folded by
  ``paperfeed_fold`` of revision 0009), GIN-indexed; rows go with their paper (``ON DELETE CASCADE``).
  SQLite deployments keep the same index in tantivy (``<data_dir>/sentence-keyword``).

Revision ID: 0023_sentence_search
Revises: 0022_one_file_ledger
Create Date: 2026-12-01
"""

from alembic import op

revision = "0023_sentence_search"
down_revision = "0022_one_file_ledger"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index("ix_paper_sentences_stored", "paper_sentences", ["created_at", "paper_id"])
    if op.get_bind().dialect.name != "postgresql":
        return
    op.execute(
        """CREATE TABLE sentence_search (
            paper_id varchar(64) NOT NULL REFERENCES papers(id) ON DELETE CASCADE,
            position smallint NOT NULL,
            role varchar(16) NOT NULL,
            tsv tsvector NOT NULL,
            PRIMARY KEY (paper_id, position)
        )"""
    )
    op.execute("CREATE INDEX ix_sentence_search_tsv ON sentence_search USING gin (tsv)")


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute("DROP TABLE IF EXISTS sentence_search")
    op.drop_index("ix_paper_sentences_stored", table_name="paper_sentences")
