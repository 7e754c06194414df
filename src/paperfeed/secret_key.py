"""The instance secret: where it comes from, and the refusal to serve with a guessable one.

It keys the CSRF tokens and the digests in the rate-limit log. ``PAPERFEED_SECRET_KEY`` sets it; a
server in non-debug mode (``paperfeed serve``, the uvicorn factory) refuses to start without one or
with a well-known placeholder. For a laptop, ``paperfeed run`` and debug mode use a random secret
generated on first use and kept in ``<data_dir>/secret_key`` (mode 0600), so nobody has to invent one.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path

from paperfeed.domain.wording import count
from paperfeed.settings_model import SettingsModel

__all__ = ["SECRET_FILE", "InsecureSecret", "check_secret", "file_secret", "resolve_secret"]

SECRET_FILE = "secret_key"
MIN_LENGTH = 32
_PLACEHOLDERS = frozenset(
    {"change-me", "changeme", "change_me", "secret", "default", "dev", "development", "paperfeed", "insecure"}
)
_HOW = (
    "set PAPERFEED_SECRET_KEY to a long random value "
    "(python -c 'import secrets; print(secrets.token_urlsafe(32))')"
)


class InsecureSecret(Exception):
    """The server must not start: the message says why and what to set."""


def configured_secret(settings: SettingsModel) -> str | None:
    value = settings.secret_key.get_secret_value().strip() if settings.secret_key is not None else ""
    return value or None


def check_secret(settings: SettingsModel, *, allow_generated: bool = False) -> None:
    """Raise :class:`InsecureSecret` unless the secret is fit to serve with.

    Debug mode accepts anything; ``allow_generated`` (``paperfeed run``) accepts the data-folder secret
    when none is configured. Otherwise the configured one must be present, not a placeholder, and long.
    """
    if settings.debug:
        return
    value = configured_secret(settings)
    if value is None:
        if allow_generated:
            return
        raise InsecureSecret(f"PAPERFEED_SECRET_KEY is not set: {_HOW}, or PAPERFEED_DEBUG=1 on a laptop")
    if value.lower() in _PLACEHOLDERS:
        raise InsecureSecret(f"PAPERFEED_SECRET_KEY is a well-known placeholder: {_HOW}")
    if len(value) < MIN_LENGTH:
        raise InsecureSecret(f"PAPERFEED_SECRET_KEY is shorter than {count(MIN_LENGTH, 'character')}: {_HOW}")


def file_secret(data_dir: Path) -> bytes:
    """The data folder's own random secret, created on first use (readable by its owner only)."""
    path = data_dir / SECRET_FILE
    try:
        value = path.read_text().strip()
    except FileNotFoundError:
        value = ""
    if value:
        return value.encode()
    data_dir.mkdir(
        parents=True,
        exist_ok=True,
    )  # see adapters/data_folder.py
    fresh = secrets.token_urlsafe(48)
    try:  # O_EXCL: of two processes starting at once, one writes and the other reads what it wrote
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return path.read_text().strip().encode() or fresh.encode()
    with os.fdopen(fd, "w") as fh:
        fh.write(fresh + "\n")
    return fresh.encode()


def resolve_secret(settings: SettingsModel) -> bytes:
    """The configured secret, else the data folder's (:func:`check_secret` decides if it may serve)."""
    value = configured_secret(settings)
    return value.encode() if value is not None else file_secret(settings.data_dir)
