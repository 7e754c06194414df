"""Opening a current store skips Alembic (a plain read of ``alembic_version``); anything else migrates."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from sqlalchemy import text

from paperfeed.adapters.store import migrate, open_store
from paperfeed.adapters.store.sql_store import make_engine


def test_the_plain_head_is_alembics_head() -> None:
    assert migrate._plain_head() == migrate.head_revision()


def test_an_older_or_new_database_is_still_migrated(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'p.db'}"
    engine = make_engine(url)
    assert not migrate._is_current(engine)  # new: no alembic_version table
    open_store(url).close()
    assert migrate._is_current(engine)
    migrate.downgrade(engine, "0007")  # drops the digest tables of 0008
    assert not migrate._is_current(engine)
    store = open_store(url)  # the fast path must not skip this upgrade
    assert migrate.current_revision(store.engine) == migrate.head_revision()
    with store.engine.connect() as conn:
        assert conn.execute(text("SELECT count(*) FROM digest_subscriptions")).scalar_one() == 0
    store.close()
    engine.dispose()


def test_opening_a_current_store_does_not_import_alembic(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'p.db'}"
    open_store(url).close()
    code = (
        "import sys\n"
        "from paperfeed.adapters.store import open_store\n"
        f"open_store({url!r}).close()\n"
        "print('alembic' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"
