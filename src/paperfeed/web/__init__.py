"""The web surface: server-rendered pages, the Hugging Face-shaped JSON API and RSS/Atom feeds."""

from .app import create_app

__all__ = ["create_app"]
