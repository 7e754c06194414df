"""The data folder and readers' data on disk are the paperfeed user's alone (#31, finding 8).

Under the usual umask (022) the folder was 0755 and ``paperfeed.db`` with its WAL 0644: any other local
account could read addresses, password hashes and private notes; ``users export`` wrote its zip 0644.
Checked with real processes (the CLI) and the App, under umask 022 and 000, on a fresh folder and on an
existing loose one.
"""

from __future__ import annotations

import logging
import os
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from paperfeed.bootstrap import build_app
from paperfeed.domain.ingest import Batch
from paperfeed.settings import Settings
from tests.library.conftest import PAPERS

ROOT = Path(__file__).resolve().parents[2]


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.fixture(params=[0o022, 0o000], ids=["umask-022", "umask-000"])
def umask(request: pytest.FixtureRequest) -> Iterator[int]:
    old = os.umask(request.param)
    try:
        yield request.param
    finally:
        os.umask(old)


def _settings(data: Path) -> Settings:
    return Settings(data_dir=data, database_url=None, embedding_backend="fake")


def test_a_new_data_folder_and_its_database_wal_and_secret_are_private(tmp_path: Path, umask: int) -> None:
    data = tmp_path / "data"
    app = build_app(_settings(data))
    try:
        app.core.store.apply_batch(Batch(papers=list(PAPERS)))  # writes: the WAL and shared memory exist now
        app.core.secret_key  # noqa: B018 - created on first use
        assert mode(data) == 0o700
        for name in ("paperfeed.db", "paperfeed.db-wal", "paperfeed.db-shm", "secret_key"):
            assert (data / name).exists(), name
            assert mode(data / name) == 0o600, (name, oct(mode(data / name)))
    finally:
        app.close()


def test_an_existing_loose_folder_is_tightened_with_a_log_line(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    data = tmp_path / "data"
    data.mkdir()
    (data / "paperfeed.db").touch()
    os.chmod(data, 0o755)
    os.chmod(data / "paperfeed.db", 0o644)
    caplog.set_level(logging.WARNING, "paperfeed.adapters.data_folder")
    app = build_app(_settings(data))
    try:
        app.core.store  # noqa: B018
    finally:
        app.close()
    assert (mode(data), mode(data / "paperfeed.db")) == (0o700, 0o600)
    said = [r.getMessage() for r in caplog.records]
    assert any(f"{data} could be read by other users (mode 0755): now 0700" in m for m in said), said
    assert any("paperfeed.db could be read by other users (mode 0644): now 0600" in m for m in said), said


def _cli(data: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PAPERFEED_")}
    env.update(PYTHONPATH=str(ROOT / "src"), PAPERFEED_EMBEDDING_BACKEND="fake")
    return subprocess.run(
        [sys.executable, "-m", "paperfeed", "--data-dir", str(data), *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_users_export_and_library_export_files_are_private(tmp_path: Path, umask: int) -> None:
    data = tmp_path / "data"
    app = build_app(_settings(data))
    try:
        app.core.store.apply_batch(Batch(papers=list(PAPERS)))
        app.readers.accounts.sign_up("ada@example.org", None, "Ada", client="t", base_url="http://t")
        user = app.readers.accounts.user_by_email("ada@example.org")
        app.readers.accounts.store.mark_verified(user.id, app.readers.accounts.clock())
        app.readers.library.save(user.id, PAPERS[0].id)
        app.readers.library.set_note(user.id, PAPERS[0].id, "private thoughts")
    finally:
        app.close()
    stale = tmp_path / "ada.zip"
    stale.write_bytes(b"old")
    os.chmod(stale, 0o644)  # an earlier file of that name does not keep its mode
    exported = _cli(data, "users", "export", "ada@example.org", "-o", str(stale))
    assert exported.returncode == 0, exported.stderr
    assert mode(stale) == 0o600
    bib = tmp_path / "ada.bib"
    library = _cli(data, "library", "export", "--user", "ada@example.org", "-o", str(bib))
    assert library.returncode == 0, library.stderr
    assert mode(bib) == 0o600
    assert "private thoughts" in bib.read_text()


def test_a_backup_is_as_private_as_the_data_folder(tmp_path: Path, umask: int) -> None:
    data = tmp_path / "data"
    app = build_app(_settings(data))
    try:
        app.core.store.apply_batch(Batch(papers=list(PAPERS)))
        app.core.secret_key  # noqa: B018
    finally:
        app.close()
    backup = tmp_path / "backup"
    made = _cli(data, "backup", str(backup))
    assert made.returncode == 0, made.stderr
    assert mode(backup) == 0o700
    for path in backup.iterdir():
        if path.name.endswith((".db", "secret_key")):
            assert mode(path) == 0o600, (path.name, oct(mode(path)))
