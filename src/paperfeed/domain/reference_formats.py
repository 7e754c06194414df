"""A reader's papers as files for reference managers: BibTeX, RIS and CSL-JSON (pure formatting).

Each :class:`Reference` is a paper plus what the reader added to it (tags, a note), so that an export
imported again (``services/library_import.py`` reads all three formats) gives back the same papers,
tags and notes. Where the formats differ, Zotero's conventions decide (docs/library.md, "Exporting"):

* BibTeX: ``@misc`` with ``eprint`` / ``archivePrefix = {arXiv}`` / ``primaryClass`` / ``url`` / ``doi``
  (:func:`paperfeed.domain.citation.bibtex`), tags in ``keywords``, the note in ``annote``.
* RIS (written with rispy): ``TY  - GEN``, which is what Zotero's RIS translator writes for a preprint
  (it has no RIS type of its own); tags one ``KW`` each, the note in ``N1``.
* CSL-JSON: ``type: "article"`` with ``genre: "Preprint"``, ``publisher: "arXiv"``, ``number`` (the
  arXiv id) and ``note: "arXiv: <id>"`` as Zotero writes preprints; tags in ``keyword``; the reader's
  note follows the ``arXiv:`` line of ``note``.

Values come from untrusted metadata and from readers, so nothing may break out of its field: BibTeX
values stay brace-balanced and a line of a multi-line value never starts with ``@`` (a new entry to
many parsers); in RIS every value but the note is one line, and a note line that would read as a RIS
tag (``ER  - ``) is shifted by one space, which :func:`unshield_ris_line` undoes on import.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal, get_args

import rispy

from .citation import bibtex, bibtex_key, bibtex_value
from .models import Paper

__all__ = [
    "EXPORT_FORMATS",
    "ExportFormat",
    "Reference",
    "UnknownExportFormat",
    "export_filename",
    "export_format",
    "is_ris_tag_line",
    "media_type",
    "render",
    "to_bibtex",
    "to_csl_json",
    "to_ris",
    "unshield_ris_line",
]

ExportFormat = Literal["bibtex", "ris", "csljson"]
EXPORT_FORMATS: tuple[ExportFormat, ...] = get_args(ExportFormat)
_ALIASES: dict[str, ExportFormat] = {
    "bib": "bibtex",
    "csl-json": "csljson",
    "csl": "csljson",
    "json": "csljson",
}
_MEDIA_TYPES: dict[ExportFormat, str] = {
    "bibtex": "application/x-bibtex",
    "ris": "application/x-research-info-systems",
    "csljson": "application/vnd.citationstyles.csl+json",
}
_EXTENSIONS: dict[ExportFormat, str] = {"bibtex": "bib", "ris": "ris", "csljson": "json"}
# Every character Python's str.splitlines() breaks on: any of them could start a new line in a reader.
_LINE_BREAKS = re.compile(r"\r\n|[\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029]")
_RIS_TAG = re.compile(r"^ *[A-Za-z][A-Za-z0-9] {0,2}-")  # a line a RIS reader could take for a tag
_LINE_AT = re.compile(r"^(\s*)@", re.MULTILINE)


class UnknownExportFormat(ValueError):
    """A format name that is none of :data:`EXPORT_FORMATS`; the message lists the allowed ones."""

    def __init__(self, name: str) -> None:
        super().__init__(f"unknown export format {name[:40]!r}: use one of {', '.join(EXPORT_FORMATS)}")


@dataclass(frozen=True, slots=True)
class Reference:
    """One paper of an export, with the reader's tags on it and their note (only for their own export)."""

    paper: Paper
    tags: tuple[str, ...] = ()
    note: str | None = None


def export_format(name: str) -> ExportFormat:
    """The format called ``name`` (``csl-json`` and ``bib`` are accepted too)."""
    key = name.strip().lower()
    if key in EXPORT_FORMATS:
        return key
    if key in _ALIASES:
        return _ALIASES[key]
    raise UnknownExportFormat(name)


def media_type(fmt: ExportFormat) -> str:
    return _MEDIA_TYPES[fmt]


def export_filename(stem: str, fmt: ExportFormat) -> str:
    """``stem`` reduced to a safe ASCII file name (letters, digits, ``-``, ``_``) plus the extension."""
    safe = re.sub(r"[^A-Za-z0-9_-]+", "-", stem).strip("-")[:80] or "library"
    return f"{safe}.{_EXTENSIONS[fmt]}"


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _lines(text: str) -> list[str]:
    return _LINE_BREAKS.split(text)


# -- BibTeX ------------------------------------------------------------------------------------------------


def _note_value(note: str) -> str:
    """A multi-line note for a BibTeX value: balanced braces (else none), LaTeX specials escaped, and no
    line starting with ``@``."""
    text = "\n".join(_lines(note))
    depth = 0
    for ch in text:
        depth += {"{": 1, "}": -1}.get(ch, 0)
        if depth < 0:
            break
    if depth != 0:
        text = text.replace("{", "").replace("}", "")
    text = re.sub(r"(?<!\\)([&%#_])", r"\\\1", text)
    return _LINE_AT.sub(r"\1{@}", text)


def to_bibtex(references: Sequence[Reference]) -> str:
    """One ``@misc`` entry per paper; keys made unique with a, b, … suffixes."""
    seen: dict[str, int] = {}
    chunks = []
    for ref in references:
        key = bibtex_key(ref.paper)
        count = seen.get(key, 0)
        seen[key] = count + 1
        if count:
            key += _suffix(count)
        extra: list[tuple[str, str]] = []
        if ref.tags:
            extra.append(("keywords", ", ".join(bibtex_value(t) for t in ref.tags)))
        if ref.note:
            extra.append(("annote", _note_value(ref.note)))
        chunks.append(bibtex(ref.paper, key=key, extra=extra) + "\n")
    return "\n".join(chunks)


def _suffix(n: int) -> str:
    letters = ""
    while n:
        n, rest = divmod(n - 1, 26)
        letters = chr(ord("a") + rest) + letters
    return letters


# -- RIS -------------------------------------------------------------------------------------------------


def is_ris_tag_line(line: str) -> bool:
    """Whether a reader could take ``line`` for a RIS tag line (``ER  - ``, ``TY - JOUR`` …)."""
    return bool(_RIS_TAG.match(line))


def _shield(line: str) -> str:
    return " " + line if is_ris_tag_line(line) else line


def unshield_ris_line(line: str) -> str:
    """Undo the export's one-space shift of a note line that looked like a RIS tag."""
    return line[1:] if line.startswith(" ") and is_ris_tag_line(line) else line


def _is_arxiv(paper: Paper) -> bool:
    return ":" not in paper.id  # prefixed ids such as scifact:1 are not on arXiv


def _family_given(name: str) -> tuple[str, str]:
    parts = _one_line(name).split(" ")
    return (parts[-1], " ".join(parts[:-1])) if len(parts) > 1 else (parts[0], "")


def _ris_record(ref: Reference) -> dict[str, Any]:
    paper = ref.paper
    record: dict[str, Any] = {"type_of_reference": "GEN", "title": _one_line(paper.title)}
    authors = [_family_given(a) for a in paper.authors if a.strip()]
    if authors:
        record["authors"] = [f"{family}, {given}" if given else family for family, given in authors]
    if paper.published:
        record["year"] = str(paper.published.year)
        record["date"] = paper.published.strftime("%Y/%m/%d")
    if paper.abstract:
        record["abstract"] = _one_line(paper.abstract)
    if _is_arxiv(paper):
        record["publisher"] = "arXiv"
        record["urls"] = [f"https://arxiv.org/abs/{paper.id}"]
    if paper.doi:
        record["doi"] = _one_line(paper.doi)
    if ref.tags:
        record["keywords"] = [_one_line(t) for t in ref.tags]
    if ref.note:
        record["notes"] = ["\n".join(_shield(line) for line in _lines(ref.note))]
    return record


class _RisWriter(rispy.RisWriter):  # type: ignore[misc]
    """rispy's writer without its ``1.``, ``2.`` … line before each record (not RIS; Zotero skips it)."""

    def set_header(self, count: int) -> str:
        return ""


def to_ris(references: Sequence[Reference]) -> str:
    """RIS records (UTF-8 text, ``\\n`` line ends); an empty export is an empty file."""
    if not references:
        return ""
    text: str = rispy.dumps([_ris_record(r) for r in references], implementation=_RisWriter)
    return text


# -- CSL-JSON --------------------------------------------------------------------------------------------


def _csl_item(ref: Reference, key: str) -> dict[str, Any]:
    paper = ref.paper
    item: dict[str, Any] = {"id": key, "type": "article", "title": _one_line(paper.title)}
    authors = []
    for name in paper.authors:
        if name.strip():
            family, given = _family_given(name)
            authors.append({"family": family, "given": given} if given else {"literal": family})
    if authors:
        item["author"] = authors
    if paper.published:
        day = paper.published
        item["issued"] = {"date-parts": [[day.year, day.month, day.day]]}
    if paper.abstract:
        item["abstract"] = paper.abstract
    note_lines = []
    if _is_arxiv(paper):
        item.update(
            URL=f"https://arxiv.org/abs/{paper.id}", number=paper.id, publisher="arXiv", genre="Preprint"
        )
        note_lines.append(f"arXiv: {paper.id}")
    if paper.doi:
        item["DOI"] = paper.doi
    if ref.tags:
        item["keyword"] = ", ".join(_one_line(t) for t in ref.tags)
    if ref.note:
        note_lines.append(ref.note)
    if note_lines:
        item["note"] = "\n".join(note_lines)
    return item


def to_csl_json(references: Sequence[Reference]) -> str:
    """A CSL-JSON array (ids are the BibTeX keys, so citations match across formats)."""
    seen: dict[str, int] = {}
    items = []
    for ref in references:
        key = bibtex_key(ref.paper)
        count = seen.get(key, 0)
        seen[key] = count + 1
        items.append(_csl_item(ref, key + _suffix(count) if count else key))
    return json.dumps(items, ensure_ascii=False, indent=2) + "\n"


def render(fmt: ExportFormat, references: Sequence[Reference]) -> str:
    """``references`` as a file in ``fmt``."""
    if fmt == "bibtex":
        return to_bibtex(references)
    if fmt == "ris":
        return to_ris(references)
    return to_csl_json(references)
