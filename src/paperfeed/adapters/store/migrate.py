"""Run the Alembic migrations that ship inside the package against an engine."""

from __future__ import annotations

from typing import TYPE_CHECKING

from sqlalchemy import text
from sqlalchemy.exc import SQLAlchemyError

from paperfeed.adapters.migration_head import MIGRATIONS, plain_head
from paperfeed.domain.errors import StoreError

if TYPE_CHECKING:
    from alembic.config import Config
    from sqlalchemy.engine import Engine

_SCRIPTS = MIGRATIONS


def _config() -> Config:
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(_SCRIPTS))
    return config


def head_revision() -> str | None:
    from alembic.script import ScriptDirectory

    return ScriptDirectory.from_config(_config()).get_current_head()


def current_revision(engine: Engine) -> str | None:
    from alembic.runtime.migration import MigrationContext

    with engine.connect() as conn:
        return MigrationContext.configure(conn).get_current_revision()


def _plain_head() -> str | None:
    """The head revision from the scripts' text, without Alembic (see ``migration_head``)."""
    return plain_head()


def _is_current(engine: Engine) -> bool:
    """True when the database is provably at the scripts' head (one plain query, no Alembic import)."""
    head = _plain_head()
    if head is None:
        return False
    try:
        with engine.connect() as conn:
            rows = conn.execute(text("SELECT version_num FROM alembic_version")).scalars().all()
    except (SQLAlchemyError, StoreError):  # no table yet: a new database (SQLite's error is translated)
        return False
    return rows == [head]


# PostgreSQL: several processes (web workers, the scheduler) may start at once; the first to take this
# transaction-scoped advisory lock migrates, the others then find the schema current.
_MIGRATION_LOCK = 0x70617065  # "pape"


def upgrade(engine: Engine, revision: str = "head") -> None:
    """Bring the database schema up to ``revision`` (idempotent; a no-op when already there)."""
    if revision == "head" and (_is_current(engine) or current_revision(engine) == head_revision()):
        return
    from alembic import command

    config = _config()
    with engine.begin() as conn:
        if conn.dialect.name == "postgresql":
            conn.exec_driver_sql(f"SELECT pg_advisory_xact_lock({_MIGRATION_LOCK})")
        config.attributes["connection"] = conn
        command.upgrade(config, revision)


def downgrade(engine: Engine, revision: str) -> None:
    from alembic import command

    config = _config()
    with engine.begin() as conn:
        config.attributes["connection"] = conn
        command.downgrade(config, revision)
