"""Keyword (BM25) search adapters: SQLite FTS5 and tantivy; :mod:`.factory` picks one."""
