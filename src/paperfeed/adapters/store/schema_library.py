"""Tables for the library work (filled in by that work; they share ``schema.metadata``)."""

from __future__ import annotations

from .schema import metadata

__all__ = ["metadata"]
