"""Errors the adapters raise and the surfaces (CLI, web) turn into a message and an exit code or status.

They live here, not with the adapters that raise them, so a surface can catch them without knowing
which adapter is behind a port; every message says what went wrong and, where it helps, what to do.
"""

from __future__ import annotations

__all__ = [
    "ArxivApiError",
    "ArxivFeedError",
    "BackupError",
    "EmbedderUnavailable",
    "InvalidDatabaseUrl",
    "MalformedFeed",
    "OaiError",
    "SourceAnswerError",
    "SourceTimeout",
    "SourceUnavailable",
    "StoreError",
    "StoreUnavailable",
    "StoreValueError",
]


class SourceUnavailable(RuntimeError):
    """A source could not be reached or kept failing after all retries; the message says which and why."""


class SourceTimeout(SourceUnavailable):
    """The last attempt timed out: the source did not answer within ``timeout`` seconds."""

    def __init__(self, message: str, timeout: float) -> None:
        super().__init__(message)
        self.timeout = timeout


class SourceAnswerError(ValueError):
    """A source answered, but with nothing usable (its own error document, or bytes that are not a feed)."""


class OaiError(RuntimeError):
    """The repository answered with an OAI-PMH ``<error code=…>`` (badArgument, badResumptionToken…)."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(f"{code}: {message}" if message else code)
        self.code = code
        self.message = message


class ArxivFeedError(SourceAnswerError):
    """A response that yields no papers at all: arXiv's own error, or bytes that are not a feed."""


class ArxivApiError(ArxivFeedError):
    """arXiv answered with an error feed (e.g. a malformed id); the message is arXiv's own."""

    def __init__(self, message: str, error_id: str | None = None) -> None:
        super().__init__(message)
        self.error_id = error_id


class MalformedFeed(ArxivFeedError):
    """The response is not well-formed XML or not an Atom feed."""


class EmbedderUnavailable(RuntimeError):
    """The configured embedder cannot run here (model not found, library missing, CPU lacks a feature)."""


class BackupError(Exception):
    """A backup or restore that must not go ahead; the message says why and what to do."""


class StoreError(Exception):
    """The store's database failed (its driver's or SQL library's error translated at the adapter's
    boundary, ``adapters/store/errors.py``): a surface catches this, never the library's own classes."""


class StoreUnavailable(StoreError):
    """The database cannot be reached, is busy or is restarting: worth retrying (the web answers 503)."""


class StoreValueError(StoreError):
    """A value the database refused as out of its range or too long (the web answers 400)."""


class InvalidDatabaseUrl(StoreError, ValueError):
    """A database URL that names no database this paperfeed can open (the message says what is wrong)."""
