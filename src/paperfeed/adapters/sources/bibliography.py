"""Reading a reader's bibliography: BibTeX, CSL-JSON (Zotero's export) or a plain list of arXiv ids.

Each entry becomes a :class:`CitedWork` with its arXiv id when one is recognisable, or the reason there is
none; where it came from is always named (``file:line``, plus the entry's key). A file that cannot be read
as a whole (not UTF-8, broken BibTeX syntax, invalid JSON) raises :class:`BibliographyError` naming the
place, so an import stops before anything is written.

arXiv ids are recognised in, by priority: ``eprint`` (when ``archivePrefix``/``eprinttype`` is arXiv or
absent), an ``arxivid`` field, a DOI ``10.48550/arXiv.<id>``, an arxiv.org URL, and "arXiv:<id>" in
``journal``/``note``/``number`` (how Google Scholar and Zotero write preprints).
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from bibtexparser.entrypoint import parse_string as parse_bibtex_string
from bibtexparser.model import DuplicateBlockKeyBlock

from paperfeed.domain.bibliography import MAX_FILE_BYTES, BibliographyError, Format
from paperfeed.domain.ids import InvalidPaperId, parse_arxiv_id

__all__ = [
    "MAX_FILE_BYTES",
    "BibliographyError",
    "CitedWork",
    "Format",
    "arxiv_ids",
    "detect_format",
    "find_arxiv_id",
    "parse_bibliography",
    "parse_bibtex",
    "parse_csl_json",
    "parse_id_list",
    "read_bibliography",
]


_ID = r"(?:\d{4}\.\d{4,5}|[a-z]+(?:-[a-z]+)*(?:\.[A-Za-z]{2})?/\d{7})(?:v\d+)?"
_IN_URL = re.compile(rf"arxiv\.org/(?:abs|pdf|html)/({_ID})", re.IGNORECASE)
_IN_DOI = re.compile(rf"10\.48550/arxiv\.({_ID})", re.IGNORECASE)
_IN_TEXT = re.compile(rf"\barxiv\s*:\s*({_ID})", re.IGNORECASE)
_ARXIV_PREFIXES = frozenset({"arxiv", "arxiv.org"})
_ENTRY_KEY = re.compile(r"@\w+\s*[{(]\s*([^,\s]+)")

# bibtexparser logs each broken block; we report them ourselves (BibliographyError), once, with the file.
logging.getLogger("bibtexparser").addHandler(logging.NullHandler())
logging.getLogger("bibtexparser").propagate = False


@dataclass(frozen=True, slots=True)
class CitedWork:
    """One entry of a bibliography."""

    where: str  # "library.bib:12 (smith2020)", "zotero.json: item 3 (id abc)", "ids.txt:4"
    arxiv_id: str | None  # version-less arXiv id, when one was recognised
    title: str | None = None
    problem: str | None = None  # why there is no arXiv id (or why the entry was skipped)


def _canonical(text: str) -> str | None:
    try:
        return parse_arxiv_id(text.strip()).base
    except InvalidPaperId:
        return None


def find_arxiv_id(fields: Mapping[str, str]) -> str | None:
    """The arXiv id in an entry's fields (keys lower-cased), or None; see the module docstring."""
    prefix = (fields.get("archiveprefix") or fields.get("eprinttype") or "").strip().lower()
    eprint = fields.get("eprint", "")
    if eprint and (not prefix or prefix in _ARXIV_PREFIXES):
        found = _canonical(eprint)
        if found:
            return found
    for key in ("arxivid", "arxiv", "arxiv_id"):
        if fields.get(key):
            found = _canonical(fields[key])
            if found:
                return found
    for key, pattern in (("doi", _IN_DOI), ("url", _IN_URL), ("link", _IN_URL), ("howpublished", _IN_URL)):
        match = pattern.search(fields.get(key, ""))
        if match and (found := _canonical(match[1])):
            return found
    for key in ("journal", "note", "number", "howpublished", "container-title", "archive_location"):
        match = _IN_TEXT.search(fields.get(key, ""))
        if match and (found := _canonical(match[1])):
            return found
    return None


def _no_id_reason(fields: Mapping[str, str]) -> str:
    prefix = (fields.get("archiveprefix") or fields.get("eprinttype") or "").strip()
    if fields.get("eprint") and prefix and prefix.lower() not in _ARXIV_PREFIXES:
        return f"eprint is a {prefix} id, not an arXiv id"
    if fields.get("eprint"):
        return f"eprint {fields['eprint'][:60]!r} is not an arXiv id"
    if fields.get("doi"):
        return f"no arXiv id (DOI {fields['doi'][:80]} is not an arXiv DOI)"
    return "no arXiv id in eprint, doi, url or note"


def _decode(data: bytes, name: str) -> str:
    if len(data) > MAX_FILE_BYTES:
        raise BibliographyError(f"{name}: {len(data):,} bytes is more than the {MAX_FILE_BYTES:,} allowed")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise BibliographyError(f"{name}:{line}: not UTF-8 text (byte 0x{data[exc.start]:02x})") from None


def _clean(value: Any) -> str:
    """A field value as plain text: BibTeX braces dropped, whitespace collapsed."""
    text = value if isinstance(value, str) else str(value)
    return " ".join(text.replace("{", "").replace("}", "").split())


def parse_bibtex(text: str, name: str) -> list[CitedWork]:
    """Entries of a BibTeX file; broken syntax anywhere is a :class:`BibliographyError`."""
    library = parse_bibtex_string(text)
    works: list[tuple[int, CitedWork]] = []
    broken: list[str] = []
    for block in library.failed_blocks:
        line = (block.start_line or 0) + 1
        if isinstance(block, DuplicateBlockKeyBlock):
            works.append(
                (
                    line,
                    CitedWork(f"{name}:{line} ({block.key})", None, problem="duplicate entry key: skipped"),
                )
            )
            continue
        reason = getattr(block.error, "abort_reason", None) or str(block.error) or type(block.error).__name__
        key = _ENTRY_KEY.match(block.raw or "")
        label = f" ({key[1]})" if key else ""
        broken.append(f"{name}:{line}{label}: {' '.join(str(reason).split())[:200]}")
    if broken:
        more = f" (and {len(broken) - 3} more)" if len(broken) > 3 else ""
        raise BibliographyError("invalid BibTeX: " + "; ".join(broken[:3]) + more)
    for entry in library.entries:
        line = (entry.start_line or 0) + 1
        fields = {f.key.lower(): _clean(f.value) for f in entry.fields}
        where = f"{name}:{line} ({entry.key})"
        arxiv_id = find_arxiv_id(fields)
        problem = None if arxiv_id else _no_id_reason(fields)
        works.append((line, CitedWork(where, arxiv_id, fields.get("title") or None, problem)))
    return [work for _, work in sorted(works, key=lambda pair: pair[0])]


def _csl_fields(item: Mapping[str, Any]) -> dict[str, str]:
    fields: dict[str, str] = {}
    for key, value in item.items():
        if isinstance(value, str | int | float):
            fields[key.lower()] = _clean(value)
    return fields


def parse_csl_json(text: str, name: str) -> list[CitedWork]:
    """Items of a CSL-JSON file (an array of items, as Zotero and Better BibTeX export)."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise BibliographyError(f"{name}:{exc.lineno}:{exc.colno}: invalid JSON: {exc.msg}") from None
    if isinstance(data, dict) and isinstance(data.get("items"), list):
        data = data["items"]
    if not isinstance(data, list):
        raise BibliographyError(f"{name}: CSL-JSON must be an array of items, got a {type(data).__name__}")
    works = []
    for index, item in enumerate(data, start=1):
        if not isinstance(item, dict):
            raise BibliographyError(f"{name}: item {index} is a {type(item).__name__}, not an object")
        key = str(item.get("id", "")).strip()[:80]
        where = f"{name}: item {index}" + (f" ({key})" if key else "")
        fields = _csl_fields(item)
        arxiv_id = find_arxiv_id(fields)
        title = fields.get("title") or None
        works.append(CitedWork(where, arxiv_id, title, None if arxiv_id else _no_id_reason(fields)))
    return works


def parse_id_list(text: str, name: str) -> list[CitedWork]:
    """One arXiv id or arXiv URL per line; blank lines and ``#`` comments are skipped."""
    works = []
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        candidate = re.sub(r"^(https?://)(www\.)", r"\1", line, flags=re.IGNORECASE)
        arxiv_id = _canonical(candidate)
        if arxiv_id is None and (match := _IN_URL.search(candidate) or _IN_DOI.search(candidate)):
            arxiv_id = _canonical(match[1])
        problem = None if arxiv_id else f"not an arXiv id or URL: {line[:80]!r}"
        works.append(CitedWork(f"{name}:{number}", arxiv_id, problem=problem))
    return works


def detect_format(path: Path, text: str) -> Literal["bibtex", "csl-json", "ids"]:
    """By extension (.bib, .json, .txt), else by content."""
    suffix = path.suffix.lower()
    if suffix in (".bib", ".bibtex"):
        return "bibtex"
    if suffix in (".json", ".csljson"):
        return "csl-json"
    if suffix in (".txt", ".list", ".ids"):
        return "ids"
    start = text.lstrip()[:1]
    if start in ("[", "{"):
        return "csl-json"
    if re.search(r"^\s*@\w+\s*[{(]", text, re.MULTILINE):
        return "bibtex"
    return "ids"


def read_bibliography(path: Path, fmt: Format = "auto", *, name: str | None = None) -> list[CitedWork]:
    """Read ``path`` in format ``fmt`` (``auto``: :func:`detect_format`)."""
    label = name or path.name
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise BibliographyError(f"{path}: cannot read: {exc.strerror or exc}") from None
    return parse_bibliography(data, label, fmt, path)


def parse_bibliography(
    data: bytes, name: str, fmt: Format = "auto", path: Path | None = None
) -> list[CitedWork]:
    """Parse the bytes of a bibliography file called ``name`` (an upload has no path)."""
    text = _decode(data, name)
    kind = detect_format(path or Path(name), text) if fmt == "auto" else fmt
    parsers = {"bibtex": parse_bibtex, "csl-json": parse_csl_json, "ids": parse_id_list}
    return parsers[kind](text, name)


def arxiv_ids(works: Iterable[CitedWork]) -> list[str]:
    """The distinct arXiv ids of ``works``, in first-seen order."""
    return list(dict.fromkeys(w.arxiv_id for w in works if w.arxiv_id))
