"""papers.summary_line / summary_key (issue #33, part 5): the one-line summary extracted from the abstract.

``summary_line`` is the abstract's sentence that best states what the paper does or finds (None when it
has no sentence), written by the indexer's sentence pass; ``summary_key`` is ``<content_hash>/<rule>``,
the text and the selection rule it was chosen for. A paper whose text changed shows no extracted line
until the pass chooses again (reads compare the key with the paper's ``content_hash``). Ingest never
writes these columns.

Revision ID: 0020_paper_summaries
Revises: 0019_paper_sentences
Create Date: 2026-11-28
"""

import sqlalchemy as sa
from alembic import op

revision = "0020_paper_summaries"
down_revision = "0019_paper_sentences"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # plain ADD COLUMN on both SQLite and PostgreSQL: no copy of the papers table
    op.add_column("papers", sa.Column("summary_line", sa.Text, nullable=True))
    op.add_column("papers", sa.Column("summary_key", sa.String(80), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("papers") as batch:
        batch.drop_column("summary_key")
        batch.drop_column("summary_line")
