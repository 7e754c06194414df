"""Run the Alembic migrations that ship inside the package against an engine."""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy.engine import Engine

_SCRIPTS = Path(__file__).with_name("migrations")


def _config() -> Config:
    config = Config()
    config.set_main_option("script_location", str(_SCRIPTS))
    return config


def head_revision() -> str | None:
    return ScriptDirectory.from_config(_config()).get_current_head()


def current_revision(engine: Engine) -> str | None:
    with engine.connect() as conn:
        return MigrationContext.configure(conn).get_current_revision()


# PostgreSQL: several processes (web workers, the scheduler) may start at once; the first to take this
# transaction-scoped advisory lock migrates, the others then find the schema current.
_MIGRATION_LOCK = 0x70617065  # "pape"


def upgrade(engine: Engine, revision: str = "head") -> None:
    """Bring the database schema up to ``revision`` (idempotent; a no-op when already there)."""
    if revision == "head" and current_revision(engine) == head_revision():
        return
    config = _config()
    with engine.begin() as conn:
        if conn.dialect.name == "postgresql":
            conn.exec_driver_sql(f"SELECT pg_advisory_xact_lock({_MIGRATION_LOCK})")
        config.attributes["connection"] = conn
        command.upgrade(config, revision)


def downgrade(engine: Engine, revision: str) -> None:
    config = _config()
    with engine.begin() as conn:
        config.attributes["connection"] = conn
        command.downgrade(config, revision)
