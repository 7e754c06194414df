"""``paperfeed harvest arxiv|hf|fill``: pull papers from the live sources."""

from __future__ import annotations

import typer

from . import fill, harvest_arxiv, harvest_hf

harvest_app = typer.Typer(
    help="Harvest papers from arXiv (OAI-PMH), Hugging Face Daily Papers, or fill the recent window.",
    no_args_is_help=True,
)
harvest_arxiv.register(harvest_app)
harvest_hf.register(harvest_app)
fill.register(harvest_app)
