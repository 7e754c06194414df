"""Choose and open the keyword index from settings: PostgreSQL full-text search on a PostgreSQL store;
on SQLite tantivy when installed, else SQLite FTS5."""

from __future__ import annotations

import importlib.util
import logging
from pathlib import Path
from typing import Literal

from sqlalchemy.engine import Engine

from paperfeed.domain.search import SyncedKeywordIndex

from .fts5 import FieldWeights, Fts5KeywordIndex, fts5_available, suspend_fts5

__all__ = ["KeywordEngine", "open_keyword_index", "resolve_engine"]

log = logging.getLogger(__name__)

KeywordEngine = Literal["auto", "fts5", "tantivy", "postgres"]


def resolve_engine(requested: KeywordEngine, engine: Engine) -> Literal["fts5", "tantivy", "postgres"]:
    """``auto`` → PostgreSQL's own full-text search on PostgreSQL (in the store's transactions, shared by
    every process); on SQLite tantivy if the package is importable (it serves 1M papers ~50x faster than
    FTS5), else FTS5."""
    if requested != "auto":
        return requested
    if engine.dialect.name == "postgresql":
        return "postgres"
    if importlib.util.find_spec("tantivy") is not None:
        return "tantivy"
    if fts5_available(engine):
        return "fts5"
    raise RuntimeError("no keyword engine: install the 'tantivy' package (FTS5 needs SQLite)")


def open_keyword_index(
    requested: KeywordEngine,
    engine: Engine,
    data_dir: Path,
    weights: FieldWeights | None = None,
) -> SyncedKeywordIndex:
    """Open (building or catching up if needed) the keyword index for the store behind ``engine``."""
    chosen = resolve_engine(requested, engine)
    if chosen == "postgres":
        from .postgres_fts import PostgresKeywordIndex

        return PostgresKeywordIndex(engine)
    if chosen == "fts5":
        return Fts5KeywordIndex(engine, weights)
    from .tantivy_index import TantivyKeywordIndex

    try:
        index = TantivyKeywordIndex(data_dir / "keyword", engine, weights)
    except Exception as exc:
        # "auto" promises search, not an engine: FTS5 follows the store through triggers, so it can
        # stand in for a tantivy index that cannot be opened or built (disk full, bad permissions, ...).
        if requested != "auto" or not fts5_available(engine):
            raise
        log.warning("tantivy keyword index unusable (%s); searching with SQLite FTS5 instead", exc)
        return Fts5KeywordIndex(engine, weights)
    # FTS5 would only cost imports CPU and disk now; it is rebuilt if it is ever opened again.
    suspend_fts5(engine)
    return index
