"""citation imports (issue #33): aliases of works, and the ledger of imported files.

``work_aliases`` maps another name of a work (an S2 corpus id, an OpenAlex id, a DOI tied to an arXiv id)
to its key; ``citation_imports`` records where each imported file's import stands, so a killed import
resumes after its last saved batch. See ``schema_citations.py``.

Revision ID: 0016_citation_import
Revises: 0015_embeddings_model_paper
Create Date: 2026-11-28
"""

import sqlalchemy as sa
from alembic import op

revision = "0016_citation_import"
down_revision = "0015_embeddings_model_paper"
branch_labels = None
depends_on = None

_TS = sa.DateTime(timezone=True)
_KEY = 300


def upgrade() -> None:
    op.create_table(
        "work_aliases",
        sa.Column("alias", sa.String(_KEY), primary_key=True),
        sa.Column("key", sa.String(_KEY), nullable=False),
        sqlite_with_rowid=False,
    )
    op.create_index("ix_work_aliases_key", "work_aliases", ["key"])
    op.create_table(
        "citation_imports",
        sa.Column("fingerprint", sa.String(64), primary_key=True),
        sa.Column("name", sa.Text, nullable=False),
        sa.Column("format", sa.String(32), nullable=False),
        sa.Column("source", sa.Text, nullable=False),
        sa.Column("byte_offset", sa.BigInteger, nullable=False),
        sa.Column("line", sa.BigInteger, nullable=False),
        sa.Column("done", sa.Boolean, nullable=False),
        sa.Column("edges_added", sa.BigInteger, nullable=False),
        sa.Column("rejected", sa.BigInteger, nullable=False),
        sa.Column("started_at", _TS, nullable=False),
        sa.Column("updated_at", _TS, nullable=False),
        sa.Column("finished_at", _TS),
    )


def downgrade() -> None:
    op.drop_table("citation_imports")
    op.drop_index("ix_work_aliases_key", "work_aliases")
    op.drop_table("work_aliases")
