"""The same records from a renamed file change nothing (issue #40 item 3), on SQLite and PostgreSQL.

Before, the ledger of applied records was kept per file *name* and a paper's ``sources`` gained one entry
per file name: a renamed copy of an imported file reported every record "updated" and added a second
"seen by file:…" row to ``paperfeed stats``, and its ledger rows were written again under the new name
(a copy of the ledger for every name a file was imported under). The choice made: files are one kind of
source; the file that first brought a paper stays its provenance (with the earliest time), the same
records in another file are "unchanged", and the ledger holds one row per record whatever the file's
name. Real CLI, real stores.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import orjson
import pytest
from sqlalchemy import func, select
from typer.testing import CliRunner, Result

from paperfeed.adapters.store import migrate, open_store
from paperfeed.adapters.store.schema import source_records
from paperfeed.cli import cli_app
from paperfeed.domain.ingest import Batch
from tests.importing.conftest import rec, write_jsonl
from tests.support.papers import paper

N = 120
ENV = {"PAPERFEED_EMBEDDING_BACKEND": "fake"}


def _cli(data: Path, db_url: str, *args: str) -> Result:
    command = ["--data-dir", str(data), "--database-url", db_url, *args]
    return CliRunner().invoke(cli_app, command, env=ENV, catch_exceptions=False)


def _counts(result: Result) -> dict[str, int]:
    """The import summary's row (added, updated, unchanged, rejected, listings, papers/s)."""
    lines = result.stdout.splitlines()
    header = next(i for i, line in enumerate(lines) if "added" in line and "unchanged" in line)
    names = [cell.strip() for cell in lines[header].strip("┃│ ").replace("┃", "│").split("│")]
    row = next(line for line in lines[header + 1 :] if any(ch.isdigit() for ch in line))
    values = [int(cell.strip().replace(",", "")) for cell in row.strip("│ ").split("│")]
    return dict(zip(names, values, strict=True))


def _by_source(data: Path, db_url: str) -> dict[str, int]:
    shown = _cli(data, db_url, "stats", "--json")
    assert shown.exit_code == 0, shown.output
    by_source: dict[str, int] = orjson.loads(shown.stdout)["by_source"]
    return by_source


def _ledger_rows(db_url: str) -> int:
    store = open_store(db_url)
    try:
        with store.engine.connect() as conn:
            return int(conn.execute(select(func.count()).select_from(source_records)).scalar_one())
    finally:
        store.close()


def test_a_renamed_copy_is_unchanged_and_provenance_does_not_grow(db_url: str, tmp_path: Path) -> None:
    data = tmp_path / "data"
    first = write_jsonl(tmp_path / "papers.jsonl", [rec(f"2503.{i:05d}") for i in range(1, N + 1)])
    done = _cli(data, db_url, "import", str(first))
    assert done.exit_code == 0, done.output
    assert _counts(done)["added"] == N
    assert _by_source(data, db_url) == {"file:papers.jsonl": N}
    ledger = _ledger_rows(db_url)
    assert ledger == N

    renamed = tmp_path / "papers-copy-2026-12-01.jsonl"
    shutil.copy(first, renamed)
    again = _cli(data, db_url, "import", str(renamed))
    assert again.exit_code == 0, again.output
    assert _counts(again) | {"papers/s": 0} == {
        "added": 0,
        "updated": 0,
        "unchanged": N,
        "rejected": 0,
        "listings": 0,
        "papers/s": 0,
    }
    assert _by_source(data, db_url) == {"file:papers.jsonl": N}  # one row, not a second "seen by"
    assert _ledger_rows(db_url) == ledger  # the ledger did not take a copy of the file

    # a third name with a few newer versions: those papers are updated, their provenance stays one entry
    newer = [rec(f"2503.{i:05d}", version=2, title=f"A revised study of {i}") for i in range(1, 11)]
    changed = write_jsonl(tmp_path / "papers-v2.jsonl", newer)
    third = _cli(data, db_url, "import", str(changed))
    assert third.exit_code == 0, third.output
    assert (_counts(third)["updated"], _counts(third)["unchanged"]) == (10, 0)
    assert _by_source(data, db_url) == {"file:papers.jsonl": N}
    assert _ledger_rows(db_url) == ledger
    store = open_store(db_url)
    try:
        stored = store.get_paper("2503.00001")
    finally:
        store.close()
    assert stored is not None
    assert stored.title == "A revised study of 1"
    assert list(stored.sources) == ["file:papers.jsonl"]


def test_an_id_namespace_keeps_a_ledger_of_its_own(db_url: str, tmp_path: Path) -> None:
    """Fingerprints depend on the namespace: the same numeric ids under two namespaces are two papers and
    each file's records are recognised on its re-import."""
    data = tmp_path / "data"
    records = write_jsonl(tmp_path / "corpus.jsonl", [rec(str(i)) for i in range(1, 21)])
    for namespace in ("scifact", "seed", "scifact", "seed"):
        done = _cli(data, db_url, "import", str(records), "--id-namespace", namespace)
        assert done.exit_code == 0, done.output
    assert _counts(done)["unchanged"] == 20
    assert _ledger_rows(db_url) == 40


def test_the_migration_folds_the_per_name_ledgers_into_one(db_url: str) -> None:
    """Ledger rows written under ``file:NAME`` before 0022 become one ``file`` row per record key."""
    store = open_store(db_url)
    try:
        store.apply_batch(Batch(papers=[paper("2503.00001"), paper("2503.00002")]))
        migrate.downgrade(store.engine, "0021_embedding_claims")
        with store.engine.begin() as conn:
            rows = [
                ("file:a.jsonl", "2503.00001", "fa1"),
                ("file:b.jsonl", "2503.00001", "fb1"),  # the same record in a renamed copy
                ("file:b.jsonl", "2503.00002", "fb2"),
                ("hf-daily", "2503.00002", "h2"),  # not a file: left as it is
            ]
            conn.execute(
                source_records.insert(),
                [{"source": s, "record_key": k, "paper_id": k, "fingerprint": f} for s, k, f in rows],
            )
        migrate.upgrade(store.engine)
        with store.engine.connect() as conn:
            got = conn.execute(select(source_records.c.source, source_records.c.record_key)).all()
    finally:
        store.close()
    assert sorted(got) == [("file", "2503.00001"), ("file", "2503.00002"), ("hf-daily", "2503.00002")]


@pytest.mark.parametrize("label", ["papers.jsonl"])
def test_an_upload_is_recorded_under_its_own_name_not_its_temporary_copy(tmp_path: Path, label: str) -> None:
    """A web upload is read from a temporary copy: its papers' provenance is the uploaded file's name."""
    from paperfeed.adapters.sources.jsonl_file import JsonlFileSource

    copy = write_jsonl(tmp_path / "upload-7f3a.jsonl", [rec("2503.00001")])
    source = JsonlFileSource(copy, batch_size=10, label=label)
    assert source.name == "file:papers.jsonl"
    assert source.ledger == "file"
