"""Every form body the app parses is parsed with these limits, never Starlette's defaults.

Starlette's defaults (1,000 files, 1,000 fields, 1 MB per field) would let one request hold a thousand
fields of a megabyte each in memory, or spool a thousand files. Our forms need far less: one file at most
(the two import forms), a few dozen fields (the tag picker sends one per tag, and keeps 100), and no field
longer than a private note (40,000 characters, at most 160,000 bytes of UTF-8). FastAPI parses ``Form``/
``File`` parameters with :data:`FORM_LIMITS` (``create_app`` passes them); code that reads a form itself
calls :func:`read_form`. The body as a whole is bounded before this by
:class:`~paperfeed.web.body_limits.BodyLimitMiddleware`.
"""

from __future__ import annotations

from typing import Final

from fastapi import Request
from starlette.datastructures import FormData

__all__ = ["FORM_LIMITS", "MAX_FIELDS", "MAX_FILES", "MAX_PART_BYTES", "read_form"]

MAX_FILES: Final = 1
MAX_FIELDS: Final = 500
MAX_PART_BYTES: Final = 256 * 1024  # one non-file field
FORM_LIMITS: Final = {"max_files": MAX_FILES, "max_fields": MAX_FIELDS, "max_part_size": MAX_PART_BYTES}


async def read_form(request: Request) -> FormData:
    """The request's form (parsed once per request, then cached by Starlette) under :data:`FORM_LIMITS`.

    Too many files or fields, or a field over the limit, is Starlette's 400 naming the problem."""
    return await request.form(max_files=MAX_FILES, max_fields=MAX_FIELDS, max_part_size=MAX_PART_BYTES)
