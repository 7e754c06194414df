"""Counts in words: "1 paper", "2 papers", "1,234 papers" — the one helper every message uses.

Messages are written by many modules (the CLI, logs, the web's notes, mail, the MCP answers); each used to
paste ``f"{n:,} papers"`` and said "1 papers" whenever ``n`` was one. :func:`count` says a number with its
noun in the right number, :func:`agree` picks the verb or word that goes with it ("1 has", "2 have"), and
:func:`plural` gives a noun's plural (regular English plus the irregular ones paperfeed says).
``tests/domain/test_wording.py`` scans the source's messages so a new ``{n} papers`` fails CI.
"""

from __future__ import annotations

__all__ = ["agree", "count", "every", "plural"]

# nouns whose plural is not the noun + "s" (or + "es" after s, x, z, ch, sh; y -> ies after a consonant)
_IRREGULAR = {
    "analysis": "analyses",
    "child": "children",
    "person": "people",
    "summary": "summaries",
}


def plural(noun: str) -> str:
    """The plural of ``noun`` (the last word is inflected: "one-line summary" -> "one-line summaries")."""
    head, space, last = noun.rpartition(" ")
    if last in _IRREGULAR:
        word = _IRREGULAR[last]
    elif last.endswith(("s", "x", "z", "ch", "sh")):
        word = last + "es"
    elif last.endswith("y") and len(last) > 1 and last[-2] not in "aeiou":
        word = last[:-1] + "ies"
    else:
        word = last + "s"
    return head + space + word


def count(n: float, noun: str, many: str | None = None) -> str:
    """``n`` with ``noun`` in the right number, thousands separated: ``1 paper``, ``0 papers``,
    ``12,345 papers``, ``1.5 hours`` (a whole float is said as an integer). ``many``: the plural when
    :func:`plural` would get it wrong ("1 is", "2 are" is :func:`agree`'s job, not this one's)."""
    word = noun if n == 1 else (many if many is not None else plural(noun))
    if isinstance(n, int) or float(n).is_integer():
        return f"{int(n):,} {word}"
    return f"{n:g} {word}"


def agree(n: float, one: str, many: str) -> str:
    """The word that agrees with ``n``: ``agree(1, "has", "have")`` is ``has``, for any other n ``have``."""
    return one if n == 1 else many


def every(n: int, noun: str) -> str:
    """All of ``n`` things as the subject of a sentence: ``all 12 papers``, ``the one paper``, ``no
    papers`` (never "all 0 papers" or "all 1 papers"); the verb goes with :func:`agree`."""
    if n == 0:
        return f"no {plural(noun)}"
    return f"the one {noun}" if n == 1 else f"all {count(n, noun)}"
