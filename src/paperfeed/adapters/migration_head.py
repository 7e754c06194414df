"""The newest schema revision, read from the migration scripts' text, without Alembic or SQLAlchemy.

Opening a store checks its ``alembic_version`` against this before anything else (Alembic's import and
script loading cost a command ~0.3 s), and the stdlib SQLite reader (``sqlite_reads``) reads only a
store at this revision.
"""

from __future__ import annotations

import re
from pathlib import Path

__all__ = ["MIGRATIONS", "plain_head"]

MIGRATIONS = Path(__file__).with_name("store") / "migrations"
_REVISION = re.compile(r'^revision(?:: *str)? *= *"([^"]+)"', re.MULTILINE)
_DOWN = re.compile(r'^down_revision(?:: *[^=]+)? *= *(None|"([^"]*)")', re.MULTILINE)


def plain_head() -> str | None:
    """The head revision read from the scripts' ``revision``/``down_revision`` lines. None unless every
    script parses and the chain has exactly one head: then the caller asks Alembic itself."""
    revisions: set[str] = set()
    parents: set[str] = set()
    for script in (MIGRATIONS / "versions").glob("*.py"):
        if script.name == "__init__.py":
            continue
        source = script.read_text(encoding="utf-8")
        rev, down = _REVISION.search(source), _DOWN.search(source)
        if rev is None or down is None:
            return None
        revisions.add(rev.group(1))
        if down.group(2) is not None:
            parents.add(down.group(2))
    heads = revisions - parents
    return heads.pop() if len(heads) == 1 else None
