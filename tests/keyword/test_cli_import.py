"""`paperfeed import` keeps the configured keyword index in sync (the App wires it as an ingest listener)."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from paperfeed.adapters.keyword.fts5 import Fts5KeywordIndex
from paperfeed.adapters.keyword.tantivy_index import TantivyKeywordIndex
from paperfeed.adapters.store import open_store
from paperfeed.cli import cli_app as app
from paperfeed.domain.query import parse_query
from tests.importing.conftest import rec, write_jsonl


@pytest.mark.parametrize("engine", ["fts5", "tantivy"])
def test_import_then_search(tmp_path: Path, engine: str) -> None:
    data = tmp_path / "data"
    first = write_jsonl(
        tmp_path / "a.jsonl",
        [rec("2503.00001", title="Quokka tracking with drones"), rec("2503.00002", title="Wombat burrows")],
    )
    newer = write_jsonl(
        tmp_path / "b.jsonl", [rec("2503.00002", title="Numbat burrows", version=2, updated="2025-04-01")]
    )
    runner = CliRunner()
    for path in (first, newer):
        result = runner.invoke(
            app,
            ["--data-dir", str(data), "import", str(path)],
            env={"PAPERFEED_KEYWORD_ENGINE": engine},
            catch_exceptions=False,
        )
        assert result.exit_code == 0, result.output
    store = open_store(f"sqlite+pysqlite:///{data / 'paperfeed.db'}")
    try:
        # opened without catching up, so it holds exactly what the import's listener put in
        index: Fts5KeywordIndex | TantivyKeywordIndex
        if engine == "fts5":
            index = Fts5KeywordIndex(store.engine, sync=False)
            assert index.pending() == 0
        else:
            index = TantivyKeywordIndex(data / "keyword", store.engine, catch_up=False)
        assert [h.paper_id for h in index.search(parse_query("quokka"), 10)] == ["2503.00001"]
        assert [h.paper_id for h in index.search(parse_query("numbat"), 10)] == ["2503.00002"]
        assert index.search(parse_query("wombat"), 10) == []
        index.close()
    finally:
        store.close()
