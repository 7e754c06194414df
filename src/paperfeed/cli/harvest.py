"""``paperfeed harvest arxiv|hf|fill|citations``: pull papers (and their citations) from the live sources."""

from __future__ import annotations

import typer

from . import fill, harvest_arxiv, harvest_citations, harvest_hf

harvest_app = typer.Typer(
    help="Harvest papers from arXiv (OAI-PMH), Hugging Face Daily Papers, or fill the recent window; "
    "harvest citations from Semantic Scholar and OpenAlex.",
    no_args_is_help=True,
)
harvest_arxiv.register(harvest_app)
harvest_hf.register(harvest_app)
fill.register(harvest_app)
harvest_citations.register(harvest_app)
