"""Giving freed memory back to the operating system after a large request (glibc only).

CPython frees a request's objects, but glibc's allocator keeps the pages of its per-thread arenas for
later: a server that parsed three large uploads in three threads kept ~50 MiB it no longer used
(bench/bounded_import.py). ``malloc_trim(0)`` returns the free pages of every arena at once; it costs a
few milliseconds, so it is called after requests whose work was large, not after every one. Elsewhere
(musl, macOS) it does nothing.
"""

from __future__ import annotations

import ctypes
import ctypes.util
from functools import cache

__all__ = ["release_free_memory"]


@cache
def _malloc_trim() -> ctypes._NamedFuncPointer | None:
    name = ctypes.util.find_library("c")
    if not name:
        return None
    try:
        trim = ctypes.CDLL(name).malloc_trim
    except (OSError, AttributeError):  # not glibc
        return None
    trim.argtypes = [ctypes.c_size_t]
    trim.restype = ctypes.c_int
    return trim


def release_free_memory() -> bool:
    """Return the allocator's free pages to the system; False where the allocator cannot (not glibc)."""
    trim = _malloc_trim()
    if trim is None:
        return False
    trim(0)
    return True
