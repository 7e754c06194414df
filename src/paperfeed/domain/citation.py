"""BibTeX for a paper, in the ``@misc{…, eprint=…}`` form arXiv itself suggests, and for a work a
reference list names (:func:`work_bibtex`), so a bibliography can carry its papers' references.

Field values come from untrusted metadata, so they are made safe *for BibTeX*: unbalanced braces (which
would swallow the rest of a .bib file) are dropped and LaTeX specials outside ``$…$`` math are escaped.
HTML escaping is the template's job.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence

from paperfeed.domain.models import Paper
from paperfeed.domain.paper_graph import WorkRef
from paperfeed.domain.tex import segments

__all__ = ["bibliography", "bibtex", "bibtex_key", "bibtex_value", "work_bibtex", "work_bibtex_key"]

_SPECIALS = re.compile(r"(?<!\\)([&%#_])")
_STOP = frozenset(
    [
        "a",
        "an",
        "the",
        "on",
        "of",
        "for",
        "in",
        "to",
        "and",
        "with",
        "from",
        "towards",
        "toward",
        "via",
        "is",
        "are",
    ]
)


def _ascii_word(text: str) -> str:
    folded = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()
    return re.sub(r"[^a-z0-9]", "", folded.lower())


def bibtex_key(paper: Paper) -> str:
    """``surnameYEARfirstword``, e.g. ``vaswani2017attention``; ASCII only so every tool accepts it."""
    surname = _ascii_word(paper.authors[0].split()[-1]) if paper.authors and paper.authors[0].split() else ""
    year = str(paper.published.year) if paper.published else ""
    prose = " ".join(seg.text for seg in segments(paper.title) if seg.tex is None)  # no TeX in keys
    word = next((w for w in (_ascii_word(t) for t in prose.split()) if w and w not in _STOP), "")
    key = f"{surname}{year}{word}"
    return key or _ascii_word(paper.id) or "paper"


def _balanced(text: str) -> bool:
    depth = 0
    for ch in text:
        depth += {"{": 1, "}": -1}.get(ch, 0)
        if depth < 0:
            return False
    return depth == 0


def _value(text: str) -> str:
    """A field value safe between BibTeX braces: balanced, specials escaped outside math, one line."""
    text = " ".join(text.split())
    if not _balanced(text):
        text = text.replace("{", "").replace("}", "")
    return "".join(
        seg.text if seg.tex is not None else _SPECIALS.sub(r"\\\1", seg.text) for seg in segments(text)
    )


bibtex_value = _value  # for other fields of an entry (an export's keywords)


def bibtex(paper: Paper, *, key: str | None = None, extra: Sequence[tuple[str, str]] = ()) -> str:
    """The paper as one BibTeX entry (fields in the usual order, unknown ones left out).

    ``key`` replaces :func:`bibtex_key` (an export makes keys unique); ``extra`` fields (name, value)
    are appended as given: the caller has made their values safe between braces.
    """
    fields: list[tuple[str, str]] = [("title", "{" + _value(paper.title) + "}")]
    if paper.authors:
        fields.append(("author", " and ".join(_value(a) for a in paper.authors)))
    if paper.published:
        fields.append(("year", str(paper.published.year)))
    if ":" not in paper.id:  # arXiv papers (prefixed ids such as scifact:1 are not on arXiv)
        fields += [("eprint", paper.id), ("archivePrefix", "arXiv")]
        if paper.primary_category:
            fields.append(("primaryClass", _value(paper.primary_category)))
        fields.append(("url", f"https://arxiv.org/abs/{paper.id}"))
    if paper.doi:
        fields.append(("doi", _value(paper.doi)))
    if paper.journal_ref:
        fields.append(("note", _value(paper.journal_ref)))
    fields += extra
    body = ",\n".join(f"  {name:<13} = {{{value}}}" for name, value in fields)
    return f"@misc{{{key or bibtex_key(paper)},\n{body}\n}}"


def work_bibtex_key(work: WorkRef) -> str:
    """``firstwordYEAR`` (a reference names no authors), e.g. ``attention2017``; ASCII only."""
    prose = " ".join(seg.text for seg in segments(work.title or "") if seg.tex is None)
    word = next((w for w in (_ascii_word(t) for t in prose.split()) if w and w not in _STOP), "")
    year = str(work.year) if work.year else ""
    return f"{word}{year}" or _ascii_word(work.key) or "ref"


def work_bibtex(work: WorkRef, key: str | None = None) -> str:
    """A work outside the store as a ``@misc`` entry from what its source told: title, year, DOI, arXiv
    id. ``@misc`` because a reference record names no venue, and ``@article`` without a journal is
    invalid BibTeX; the DOI is what reference managers resolve the rest from."""
    fields: list[tuple[str, str]] = []
    if work.title:
        fields.append(("title", "{" + _value(work.title) + "}"))
    if work.year:
        fields.append(("year", str(work.year)))
    if work.arxiv_id:
        fields += [("eprint", _value(work.arxiv_id)), ("archivePrefix", "arXiv")]
        fields.append(("url", f"https://arxiv.org/abs/{_value(work.arxiv_id)}"))
    if work.doi:
        fields.append(("doi", _value(work.doi)))
        if not work.arxiv_id:
            fields.append(("url", f"https://doi.org/{_value(work.doi)}"))
    body = ",\n".join(f"  {name:<13} = {{{value}}}" for name, value in fields)
    return f"@misc{{{key or work_bibtex_key(work)},\n{body}\n}}"


def bibliography(entries: Sequence[Paper | WorkRef]) -> list[str]:
    """BibTeX entries for ``entries`` in order, keys made unique across them (``smith2020deep``,
    ``smith2020deepa``, …), since a tag's papers and their references easily share one."""
    used: set[str] = set()
    out: list[str] = []
    for entry in entries:
        base = bibtex_key(entry) if isinstance(entry, Paper) else work_bibtex_key(entry)
        key, n = base, 0
        while key in used:
            key = base + _suffix(n)
            n += 1
        used.add(key)
        out.append(bibtex(entry, key=key) if isinstance(entry, Paper) else work_bibtex(entry, key))
    return out


def _suffix(n: int) -> str:
    """a, b, …, z, aa, ab, … (the usual disambiguation of BibTeX keys)."""
    letters = ""
    n += 1
    while n:
        n, r = divmod(n - 1, 26)
        letters = chr(ord("a") + r) + letters
    return letters
