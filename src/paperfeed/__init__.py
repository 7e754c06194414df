"""paperfeed: a self-hosted research-paper discovery service."""

__version__ = "0.1.0"

__all__ = ["__version__"]
