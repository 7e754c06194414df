"""What a reader's bibliography import accepts: its formats, its size limit, and its error."""

from __future__ import annotations

from typing import Literal

__all__ = ["MAX_FILE_BYTES", "BibliographyError", "Format"]

MAX_FILE_BYTES = 20 * 2**20
Format = Literal["auto", "bibtex", "csl-json", "ids"]


class BibliographyError(ValueError):
    """The file cannot be read as a bibliography; the message names the file and line or entry."""
