"""A run that finds nothing new still repairs the keyword index a killed run left behind.

A ``kill -9`` after the store committed a batch and before the keyword index did leaves papers in the
store the index has not seen (the index's watermark is older than their change). The rerun of the same
import finds every record already applied, so it writes nothing; it must still bring the index up to
the store, or ``paperfeed check`` reports the papers as changed since they were indexed (seen once in CI
by ``tests/reliability/test_faults.py`` after the keyword index became lazy, issue #32)."""

from __future__ import annotations

from pathlib import Path

from paperfeed.adapters.sources.jsonl_file import JsonlFileSource
from paperfeed.bootstrap import build_app
from paperfeed.services.ingest import IngestService
from paperfeed.settings import Settings

from .conftest import RunCli, rec, write_jsonl


def test_a_rerun_with_nothing_new_brings_the_keyword_index_up_to_the_store(
    cli: RunCli, data_dir: Path, tmp_path: Path
) -> None:
    first = write_jsonl(tmp_path / "a.jsonl", [rec(f"2503.{i:05d}") for i in range(1, 4)])
    assert cli("import", str(first)).exit_code == 0
    newer = rec("2503.00002", version=2, abstract="Wombats dig burrows of remarkable length.")
    changed = write_jsonl(tmp_path / "b.jsonl", [newer])  # a newer version: the paper changes
    # the killed run: its batch is in the store, the keyword index never heard of it
    app = build_app(Settings(data_dir=data_dir))
    try:
        IngestService(app.core.store).run(JsonlFileSource(changed, batch_size=100))
    finally:
        app.close()
    stale = cli("check")
    assert "1 paper changed since it was indexed" in stale.output  # what the kill left

    rerun = cli("import", str(changed))
    assert rerun.exit_code == 0, rerun.output
    clean = cli("check")
    assert "changed since" not in clean.output, clean.output
    assert clean.exit_code == 0, clean.output
