"""Being written: registers its harvest sub-command on ``harvest_app``."""

from __future__ import annotations

import typer


def register(harvest_app: typer.Typer) -> None:
    """Add this source's command to ``paperfeed harvest``."""
