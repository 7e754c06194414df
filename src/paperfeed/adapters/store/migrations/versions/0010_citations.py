"""citations: the paper graph (issue #16): works, citations between them, the citation harvest ledger.

Revision ID: 0010_citations
Revises: 0009_postgres
Create Date: 2026-11-24
"""

import sqlalchemy as sa
from alembic import op

revision = "0010_citations"
down_revision = "0009_postgres"
branch_labels = None
depends_on = None

_TS = sa.DateTime(timezone=True)
_KEY = 300


def upgrade() -> None:
    op.create_table(
        "works",
        sa.Column("key", sa.String(_KEY), primary_key=True),
        sa.Column("title", sa.Text),
        sa.Column("year", sa.Integer),
        sa.Column("published", sa.Date),
        sa.Column("arxiv_id", sa.String(64)),
        sa.Column("doi", sa.String(500)),
        sa.Column("s2_id", sa.String(64)),
        sa.Column("openalex_id", sa.String(32)),
        sa.Column("citation_count", sa.Integer),
        sa.Column("reference_count", sa.Integer),
        sa.Column("cited_edges", sa.Integer, nullable=False),
        sa.Column("sort_day", sa.Integer, nullable=False),
        sa.Column("updated_at", _TS, nullable=False),
    )
    op.create_table(
        "citations",
        sa.Column("citing", sa.String(_KEY), primary_key=True),
        sa.Column("cited", sa.String(_KEY), primary_key=True),
        sa.Column("citing_day", sa.Integer, nullable=False),
        sa.Column("is_influential", sa.Boolean),
        sa.Column("contexts", sa.JSON, nullable=False),
        sa.Column("intents", sa.JSON, nullable=False),
        sa.Column("sources", sa.JSON, nullable=False),
        sa.Column("first_seen", _TS, nullable=False),
        sqlite_with_rowid=False,
    )
    op.create_index("ix_citations_cited_day", "citations", ["cited", "citing_day", "citing"])
    op.create_table(
        "citation_harvests",
        sa.Column("paper_id", sa.String(64), primary_key=True),
        sa.Column("source", sa.String(32), primary_key=True),
        sa.Column("harvested_at", _TS, nullable=False),
        sa.Column("known", sa.Boolean, nullable=False),
        sa.Column("references_complete", sa.Boolean, nullable=False),
        sa.Column("citations_complete", sa.Boolean, nullable=False),
    )
    op.create_index("ix_citation_harvests_source_at", "citation_harvests", ["source", "harvested_at"])
    op.create_index("ix_citation_harvests_at", "citation_harvests", ["harvested_at"])


def downgrade() -> None:
    op.drop_index("ix_citation_harvests_at", "citation_harvests")
    op.drop_index("ix_citation_harvests_source_at", "citation_harvests")
    op.drop_table("citation_harvests")
    op.drop_index("ix_citations_cited_day", "citations")
    op.drop_table("citations")
    op.drop_table("works")
