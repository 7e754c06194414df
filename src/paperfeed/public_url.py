"""The site's public URL: where every mailed link points, and the refusal to serve without one.

Links in mail (sign-up confirmation, sign-in links, password resets, digest confirm / preferences /
unsubscribe links and the RFC 8058 ``List-Unsubscribe`` header) are built from this URL alone, never
from the request: a forged ``Host`` header must not be able to send a reset token to another site.
``PAPERFEED_BASE_URL`` sets it; a server in non-debug mode (``paperfeed serve``, the uvicorn factory)
refuses to start without one, as it does without a secret key. ``paperfeed run`` (a laptop) sets it to
the address it serves on, and debug mode falls back to ``http://<host>:<port>`` from the settings.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from paperfeed.settings_model import SettingsModel

__all__ = ["UnsafeBaseUrl", "check_base_url", "local_base_url", "public_url"]

_HOW = "set PAPERFEED_BASE_URL (or --base-url) to the address readers use, e.g. https://papers.example.org"


class UnsafeBaseUrl(Exception):
    """The server must not start: the message says why and what to set."""


def _problem(value: str) -> str | None:
    """Why ``value`` cannot be the base of mailed links, if it cannot."""
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return f"PAPERFEED_BASE_URL must start with http:// or https:// and name a host (got {value[:100]!r})"
    if parts.query or parts.fragment:
        return f"PAPERFEED_BASE_URL must not have a query or fragment (got {value[:100]!r})"
    return None


def check_base_url(settings: SettingsModel) -> None:
    """Raise :class:`UnsafeBaseUrl` unless mailed links have a configured, well-formed base to use.

    Debug mode accepts no base URL (links then point to ``http://<host>:<port>`` from the settings); a
    configured one must be an absolute http(s) URL even then.
    """
    value = (settings.base_url or "").strip()
    if not value:
        if settings.debug:
            return
        raise UnsafeBaseUrl(
            f"PAPERFEED_BASE_URL is not set: {_HOW}. Links in mail (password resets, sign-in links, "
            "digest confirmations) are never built from a request's Host header, which anyone can forge "
            "(or PAPERFEED_DEBUG=1 on a laptop)"
        )
    problem = _problem(value)
    if problem is not None:
        raise UnsafeBaseUrl(f"{problem}: {_HOW}")


def local_base_url(host: str, port: int) -> str:
    """The URL a server listening on ``host:port`` is reached at from this machine (``paperfeed run``)."""
    shown = {"0.0.0.0": "127.0.0.1", "::": "[::1]", "": "127.0.0.1"}.get(host, host)
    if ":" in shown and not shown.startswith("["):
        shown = f"[{shown}]"
    return f"http://{shown}:{port}"


def public_url(settings: SettingsModel) -> str:
    """Where links in mail point (no trailing slash): ``PAPERFEED_BASE_URL``, else the configured
    ``host:port`` (what debug mode and the command-line jobs fall back to). Never the request's."""
    configured = (settings.base_url or "").strip()
    return (configured or local_base_url(settings.host, settings.port)).rstrip("/")
