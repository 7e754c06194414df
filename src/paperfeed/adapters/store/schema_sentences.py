"""The sentences of papers' abstracts (issue #33, parts 4-5): one row per paper, its sentences packed.

A row holds, for the text of ``content_hash``, the sentences' character spans (int32 pairs), their role
probabilities from the role model ``role_model`` (float16, five per sentence, in ``ROLES`` order) and
their vectors of ``model_id`` (float16, one row per sentence, L2-normalised). One row per paper, not per
sentence: similar papers by facet read a hundred candidates' sentences at once, which is a hundred rows,
and float16 halves the bytes at a cosine error below 1e-3 (bench/sentence_roles.py measures both).
"""

from __future__ import annotations

from sqlalchemy import Column, ForeignKey, Index, LargeBinary, SmallInteger, String, Table

from .columns import UtcDateTime
from .schema import metadata

__all__ = ["metadata", "paper_sentences"]

paper_sentences = Table(
    "paper_sentences",
    metadata,
    Column("paper_id", String(64), ForeignKey("papers.id", ondelete="CASCADE"), primary_key=True),
    Column("model_id", String(200), nullable=False),
    Column("role_model", String(100), nullable=False),
    Column("content_hash", String(32), nullable=False),
    Column("count", SmallInteger, nullable=False),
    Column("spans", LargeBinary, nullable=False),  # int32 little-endian, (count, 2)
    Column("probabilities", LargeBinary, nullable=False),  # float16 little-endian, (count, 5)
    Column("vectors", LargeBinary, nullable=False),  # float16 little-endian, (count, dimension)
    Column("created_at", UtcDateTime(), nullable=False),
    Index("ix_paper_sentences_model_paper", "model_id", "paper_id"),
    Index("ix_paper_sentences_stored", "created_at", "paper_id"),  # the sentence indexes' cursor (0021)
)
