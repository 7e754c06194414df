"""``paperfeed harvest arxiv|hf``: pull papers from the live sources."""

from __future__ import annotations

import typer

from . import harvest_arxiv, harvest_hf

harvest_app = typer.Typer(
    help="Harvest papers from arXiv (OAI-PMH) or Hugging Face Daily Papers.", no_args_is_help=True
)
harvest_arxiv.register(harvest_app)
harvest_hf.register(harvest_app)
