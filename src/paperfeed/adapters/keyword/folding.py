"""Accent folding for the keyword indexes: "Naïve résumé, Łódź" → "Naive resume, Lodz".

One function, two rule sets, because each backend's stored index was built with its own and a query must
be folded exactly as the documents were:

* ``"latin"`` (tantivy): letters of the Latin-1 Supplement and Latin Extended-A/-B blocks (U+0080-U+024F)
  whose compatibility decomposition (NFKD) is one ASCII character, so "ſ" → "s" and "²" → "2", but
  "ạ" (Latin Extended Additional) or Greek "ά" are kept. Python folds both the documents and the
  queries; changing the rules would change every stored tantivy index (a new ``INDEX_VERSION``, a full
  rebuild).
* ``"marks"`` (PostgreSQL): combining marks U+0300-U+036F taken off any letter (NFD, then NFC), so
  "ạ" → "a" and "ά" → "α", but "ſ" and "²" are kept. This is the Python twin of migration 0009's SQL
  ``paperfeed_fold``, which computes the stored ``papers.search_tsv`` and folds queries in SQL; Python
  uses it where it finds words and highlights in the text. Changing it would need a migration that
  replaces the SQL function and recomputes every row's tsvector.

Both map the letters with a stroke (no Unicode decomposition) the same way, and both map one character
to one, so offsets into the folded text are offsets into the original (highlighting relies on it).
"""

from __future__ import annotations

import functools
import unicodedata
from typing import Literal

__all__ = ["FoldRules", "fold"]

FoldRules = Literal["latin", "marks"]

# letters with a stroke have no Unicode decomposition
_STROKES: dict[int, str] = {ord(a): b for a, b in zip("ŁłØøĐđĦħıŦŧ", "LlOoDdHhiTt", strict=True)}


def _latin_table() -> dict[int, str]:
    table: dict[int, str] = {}
    for cp in range(0x80, 0x250):  # Latin-1 Supplement, Latin Extended-A and -B
        base = "".join(c for c in unicodedata.normalize("NFKD", chr(cp)) if not unicodedata.combining(c))
        if len(base) == 1 and base.isascii() and base != chr(cp):
            table[cp] = base
    table.update(_STROKES)
    return table


_LATIN = _latin_table()


@functools.lru_cache(maxsize=65536)
def _without_marks(ch: str) -> str:
    bare = "".join(c for c in unicodedata.normalize("NFD", ch) if not "\u0300" <= c <= "\u036f")
    folded = unicodedata.normalize("NFC", bare).translate(_STROKES)
    return folded if len(folded) == 1 else ch


def fold(text: str, rules: FoldRules) -> str:
    """``text`` with accents off by ``rules`` (see the module docstring for which backend uses which)."""
    if text.isascii():
        return text
    if rules == "latin":
        return text.translate(_LATIN)
    return "".join(map(_without_marks, text))
