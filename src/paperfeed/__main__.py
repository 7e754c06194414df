"""``python -m paperfeed`` runs the CLI."""

from paperfeed.cli import main

if __name__ == "__main__":  # not again in a spawned worker process (`paperfeed index --workers`)
    main()
