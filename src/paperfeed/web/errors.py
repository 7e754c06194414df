"""One error shape for the whole API; HTML error pages for browsers (being written)."""

from fastapi import FastAPI


def install(app: FastAPI) -> None:
    """Register the exception handlers on ``app``."""
