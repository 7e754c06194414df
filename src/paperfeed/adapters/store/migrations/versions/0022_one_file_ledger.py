"""One ledger for every file of papers (issue #40 item 3): ``source_records`` rows of ``file:NAME`` become
rows of ``file``.

The ledger (source, record key) -> fingerprint lets a re-import skip records already applied. It was
kept per file *name*, so the same records from a renamed file (or an upload, whose name was a temporary
one) missed it, were merged again and recorded once more under the new name: the ledger grew by a copy of
the file for every name it was imported under. Files now share one ledger (``file``, or ``file@NS`` for
``--id-namespace NS``, whose fingerprints differ). The rows of the old per-name ledgers are folded into
``file``: one row per record key (any of a key's rows will do: each fingerprint was applied, and applying
one again changes nothing; a namespaced import's rows land there too and simply never match, so its
next import merges once more and changes nothing). Nothing else reads the old rows.

Revision ID: 0022_one_file_ledger
Revises: 0021_embedding_claims
Create Date: 2026-12-01
"""

from alembic import op

revision = "0022_one_file_ledger"
down_revision = "0021_embedding_claims"
branch_labels = None
depends_on = None

# `WHERE ... ` before ON CONFLICT: SQLite's parser needs a WHERE to tell an upsert's ON CONFLICT from a
# join's ON after a SELECT; both SQLite and PostgreSQL skip the keys already there (DO NOTHING also takes
# two rows of one key in the same statement).
_FOLD = """
INSERT INTO source_records (source, record_key, paper_id, fingerprint)
    SELECT 'file', record_key, paper_id, fingerprint FROM source_records WHERE source LIKE 'file:%'
    ON CONFLICT (source, record_key) DO NOTHING
"""
_DROP = "DELETE FROM source_records WHERE source LIKE 'file:%'"


def upgrade() -> None:
    op.execute(_FOLD)
    op.execute(_DROP)


def downgrade() -> None:
    # The per-name ledgers cannot be told apart again; without them a re-import merges its records once
    # more and changes nothing, so the shared rows are simply dropped.
    op.execute("DELETE FROM source_records WHERE source = 'file' OR source LIKE 'file@%'")
