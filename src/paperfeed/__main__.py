"""``python -m paperfeed`` runs the CLI."""

from paperfeed.cli import main

main()
