"""Alembic migrations, run programmatically by :func:`paperfeed.adapters.store.migrate.upgrade`."""
