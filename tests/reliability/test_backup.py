"""``paperfeed backup`` while an import writes, and ``paperfeed restore`` (refusal, --force, rebuilt
indexes, secret key)."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import orjson
import pytest

from tests.support import postgres

from .corpus import write_jsonl
from .test_check import run

PAPERFEED = [str(Path(sys.executable).parent / "paperfeed")]


def _ids(db: Path) -> list[str]:
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
        return [r[0] for r in conn.execute("SELECT id FROM papers ORDER BY id")]


def test_backups_taken_while_an_import_writes_are_consistent_snapshots(tmp_path: Path) -> None:
    data = tmp_path / "data"
    assert run(data, "import", str(write_jsonl(tmp_path / "seed.jsonl", range(1, 11))))[0] == 0
    (data / "secret_key").write_text("k" * 40)
    big = write_jsonl(tmp_path / "big.jsonl", range(11, 20011))
    env = {**os.environ, "PAPERFEED_EMBEDDING_BACKEND": "fake", "PAPERFEED_DATA_DIR": str(data)}
    writer = subprocess.Popen(
        [*PAPERFEED, "import", str(big), "--batch-size", "100"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,  # its own process group: the import's worker processes go with it
    )
    sizes = []
    try:
        deadline = time.monotonic() + 60
        while len(_ids(data / "paperfeed.db")) <= 10 and time.monotonic() < deadline:
            time.sleep(0.05)  # the import's first batch is in: back up while the rest arrives
        for n in range(6):
            dest = tmp_path / f"backup-{n}"
            code, out = run(data, "backup", str(dest))
            assert code == 0, out
            manifest = orjson.loads((dest / "backup.json").read_bytes())
            ids = _ids(dest / "paperfeed.db")
            # Batches commit atomically and in file order: a snapshot holds the seed plus whole batches.
            assert len(ids) == manifest["papers"]
            assert (len(ids) - 10) % 100 == 0, len(ids)
            assert ids == [f"2501.{i:05d}" for i in range(1, len(ids) + 1)]
            assert (dest / "secret_key").read_text() == "k" * 40
            sizes.append(len(ids))
            time.sleep(0.1)
    finally:
        os.killpg(writer.pid, signal.SIGKILL)  # the snapshots are taken; the rest is not needed
        writer.wait(timeout=60)
    assert any(10 < s < 20010 for s in sizes), f"no backup overlapped the import: {sizes}"
    print("papers in the backups:", sizes)

    # Restore the one taken mid-import: refused over a non-empty folder, done with --force.
    mid = next(n for n, s in enumerate(sizes) if 10 < s < 20010)
    code, out = run(data, "restore", str(tmp_path / f"backup-{mid}"))
    assert code == 2
    assert "not empty" in out
    assert "--force" in out
    target = tmp_path / "restored"
    code, out = run(target, "restore", str(tmp_path / f"backup-{mid}"))
    assert code == 0, out
    assert f"restored {sizes[mid]:,} papers" in out
    assert "keyword index rebuilt" in out
    assert (target / "secret_key").read_text() == "k" * 40
    assert oct((target / "secret_key").stat().st_mode & 0o777) == "0o600"
    code, out = run(target, "check")
    assert code == 0, out
    code, out = run(data, "restore", "--force", str(tmp_path / f"backup-{mid}"))
    assert code == 0, out
    assert len(_ids(data / "paperfeed.db")) == sizes[mid]
    assert run(data, "check")[0] == 0


def test_restore_rebuilds_the_vector_index_from_stored_vectors(tmp_path: Path) -> None:
    data = tmp_path / "data"
    run(data, "import", str(write_jsonl(tmp_path / "a.jsonl", range(1, 21))))
    run(data, "index")
    assert run(data, "backup", str(tmp_path / "b"))[0] == 0
    assert sorted(p.name for p in (tmp_path / "b").iterdir()) == ["backup.json", "paperfeed.db"]
    code, out = run(tmp_path / "new", "restore", str(tmp_path / "b"))
    assert code == 0, out
    assert "vector index rebuilt from the stored vectors (20 vectors)" in out
    assert run(tmp_path / "new", "check")[0] == 0


def test_damaged_backups_and_busy_destinations_are_refused(tmp_path: Path) -> None:
    data = tmp_path / "data"
    run(data, "import", str(write_jsonl(tmp_path / "a.jsonl", range(1, 6))))
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_text("x")
    code, out = run(data, "backup", str(tmp_path / "full"))
    assert code == 2
    assert "is not an empty folder" in out
    assert run(data, "backup", str(tmp_path / "b"))[0] == 0
    db = tmp_path / "b" / "paperfeed.db"
    blob = bytearray(db.read_bytes())
    blob[5000] ^= 0xFF
    db.write_bytes(bytes(blob))
    code, out = run(tmp_path / "new", "restore", str(tmp_path / "b"))
    assert code == 2
    assert "differs from the manifest" in out
    assert not (tmp_path / "new" / "paperfeed.db").exists()
    code, out = run(tmp_path / "new", "restore", str(tmp_path / "nothing-here"))
    assert code == 2
    assert "not a paperfeed backup" in out


@pytest.mark.postgres
def test_pg_dump_and_pg_restore_as_documented(pg_server: postgres.PgServer, tmp_path: Path) -> None:
    """docs/operations.md's PostgreSQL recipe: a dump restored into a new database is consistent."""
    binaries = postgres.find_binaries()
    with postgres.database(pg_server) as url:
        data = tmp_path / "data"
        assert run(data, "import", str(write_jsonl(tmp_path / "a.jsonl", range(1, 16))), url=url)[0] == 0
        assert run(data, "index", url=url)[0] == 0
        code, out = run(data, "backup", str(tmp_path / "b"), url=url)
        assert code == 2
        assert "pg_dump" in out
        plain = url.replace("postgresql+psycopg://", "postgresql://", 1)
        dump = tmp_path / "paperfeed.dump"
        subprocess.run([str(binaries / "pg_dump"), "-Fc", "-d", plain, "-f", str(dump)], check=True)
    target = postgres.create_database(pg_server, template="template0")
    try:
        restored = pg_server.url(target)
        subprocess.run(
            [str(binaries / "pg_restore"), "--no-owner", "-d", restored.replace("+psycopg", ""), str(dump)],
            check=True,
        )
        # a new data folder: its own sentence vector index (evidence search) is made from the stored sentences
        assert run(tmp_path / "other", "index", url=restored)[0] == 0
        code, out = run(tmp_path / "other", "check", url=restored)
        assert code == 0, out
        assert "store ok 15 papers" in out
        assert "vector index ok 15 vectors" in out
    finally:
        postgres.drop_database(pg_server, target)
