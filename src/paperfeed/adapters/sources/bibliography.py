"""Reading a reader's bibliography: BibTeX, RIS, CSL-JSON (Zotero's export) or a list of arXiv ids.

Each entry becomes a :class:`CitedWork` with its arXiv id when one is recognisable, or the reason there is
none; where it came from is always named (``file:line``, plus the entry's key). A file that cannot be read
as a whole (not UTF-8, broken BibTeX syntax, invalid JSON) raises :class:`BibliographyError` naming the
place, so an import stops before anything is written.

arXiv ids are recognised in, by priority: ``eprint`` (when ``archivePrefix``/``eprinttype`` is arXiv or
absent), an ``arxivid`` field, a DOI ``10.48550/arXiv.<id>``, an arxiv.org URL, and "arXiv:<id>" in
``journal``/``note``/``number`` (how Google Scholar and Zotero write preprints).

Each entry's keywords (BibTeX ``keywords``, RIS ``KW``, CSL-JSON ``keyword``) and note (BibTeX
``annote``, RIS ``N1``, CSL-JSON ``note`` after its ``arXiv:`` line) come along as the entry's tags
and note, undoing what ``domain/reference_formats.py`` writes; the importer uses them on request.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

import rispy
from bibtexparser.entrypoint import parse_string as parse_bibtex_string
from bibtexparser.model import DuplicateBlockKeyBlock

from paperfeed.domain.ids import InvalidPaperId, parse_arxiv_id
from paperfeed.domain.library import MAX_FILE_BYTES, BibliographyError, CitedWork, Format
from paperfeed.domain.reference_formats import unshield_ris_line

__all__ = [
    "detect_format",
    "find_arxiv_id",
    "parse_bibliography",
    "parse_bibtex",
    "parse_csl_json",
    "parse_id_list",
    "parse_ris",
    "read_bibliography",
]


_ID = r"(?:\d{4}\.\d{4,5}|[a-z]+(?:-[a-z]+)*(?:\.[A-Za-z]{2})?/\d{7})(?:v\d+)?"
_IN_URL = re.compile(rf"arxiv\.org/(?:abs|pdf|html)/({_ID})", re.IGNORECASE)
_IN_DOI = re.compile(rf"10\.48550/arxiv\.({_ID})", re.IGNORECASE)
_IN_TEXT = re.compile(rf"\barxiv\s*:\s*({_ID})", re.IGNORECASE)
_ARXIV_PREFIXES = frozenset({"arxiv", "arxiv.org"})
_ENTRY_KEY = re.compile(r"@\w+\s*[{(]\s*([^,\s]+)")
_TEX_SPECIAL = re.compile(r"\\([&%#_$])")
_LINE_AT = re.compile(r"^(\s*)\{@\}", re.MULTILINE)
_ARXIV_LINE = re.compile(rf"^\s*arxiv\s*:\s*{_ID}(?:\s*\[[^\]]*\])?\s*$", re.IGNORECASE)
_RIS_LINE = re.compile(r"^([A-Z][A-Z0-9])  -(?: (.*))?$")

# bibtexparser logs each broken block; we report them ourselves (BibliographyError), once, with the file.
logging.getLogger("bibtexparser").addHandler(logging.NullHandler())
logging.getLogger("bibtexparser").propagate = False


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


def _tags(text: str, separators: str = ",;") -> tuple[str, ...]:
    """Keywords as tag names: split on ``separators``, whitespace collapsed, empty ones and repeats gone."""
    parts = re.split(f"[{re.escape(separators)}]", text)
    return tuple(dict.fromkeys(t for t in (" ".join(p.split()) for p in parts) if t))


def _note(text: str) -> str | None:
    """A note without the ``arXiv: <id>`` lines reference managers add (Zotero's Extra field)."""
    kept = [line for line in text.split("\n") if not _ARXIV_LINE.match(line)]
    note = "\n".join(kept).strip("\n")
    return note if note.strip() else None


def _untex(text: str) -> str:
    """Undo the export's escaping of LaTeX specials and of ``@`` opening a line."""
    return _LINE_AT.sub(r"\1@", _TEX_SPECIAL.sub(r"\1", text))


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
        raw = {f.key.lower(): f.value for f in entry.fields if isinstance(f.value, str)}
        where = f"{name}:{line} ({entry.key})"
        arxiv_id = find_arxiv_id(fields)
        problem = None if arxiv_id else _no_id_reason(fields)
        tags = _tags(_untex(fields.get("keywords") or fields.get("keyword") or ""))
        note = _note(_untex(raw["annote"])) if raw.get("annote") else None
        works.append((line, CitedWork(where, arxiv_id, fields.get("title") or None, problem, tags, note)))
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
        keyword = item.get("keyword")
        tags = _tags(keyword, ",") if isinstance(keyword, str) else ()
        note = item.get("note")
        works.append(
            CitedWork(
                where,
                arxiv_id,
                title,
                None if arxiv_id else _no_id_reason(fields),
                tags,
                _note(note) if isinstance(note, str) else None,
            )
        )
    return works


class _RisParser(rispy.RisParser):  # type: ignore[misc]
    """rispy's parser, keeping a continuation line as written (a note's indentation is Markdown)."""

    def parse_line(self, line: str) -> tuple[str | None, str]:
        line = line.rstrip("\r")
        if _RIS_LINE.match(line):
            return line[0:2], line[6:].strip()
        return None, unshield_ris_line(line)


def _ris_records(text: str, name: str) -> list[int]:
    """The line of each record's ``TY``; a file that is not whole RIS is a :class:`BibliographyError`."""
    starts: list[int] = []
    open_at: int | None = None
    for number, raw in enumerate(text.split("\n"), start=1):  # lines as rispy splits them
        line = raw.rstrip("\r")
        match = _RIS_LINE.match(line)
        tag = match[1] if match else None
        if open_at is None:
            if tag == "TY":
                open_at = number
            elif tag is not None or (line.strip() and not re.fullmatch(r"\s*\d+\.\s*", line)):
                raise BibliographyError(
                    f"{name}:{number}: not RIS: expected a record's first line “TY  - …”, "
                    f"found {line.strip()[:60]!r}"
                )
        elif tag == "TY":
            raise BibliographyError(
                f"{name}:{number}: a new record starts before the one at line {open_at} ended (no “ER  - ”)"
            )
        elif tag == "ER":
            starts.append(open_at)
            open_at = None
    if open_at is not None:
        raise BibliographyError(
            f"{name}:{open_at}: the record starting here has no “ER  - ” line (is the file truncated?)"
        )
    if not starts and text.strip():
        raise BibliographyError(f"{name}:1: not RIS: no record (“TY  - …” to “ER  - ”) in the file")
    return starts


def _ris_text(value: object) -> str:
    if isinstance(value, list):
        return " ".join(str(v) for v in value)
    return str(value) if value is not None else ""


def parse_ris(text: str, name: str) -> list[CitedWork]:
    """Records of a RIS file (Zotero, EndNote, Mendeley); a truncated or non-RIS file raises
    :class:`BibliographyError` naming the line, before anything is imported."""
    starts = _ris_records(text, name)
    records = rispy.loads(text, implementation=_RisParser)
    if len(records) != len(starts):  # the check above and rispy split records alike; never half a file
        raise BibliographyError(f"{name}: {len(starts)} records found but {len(records)} read")
    works = []
    for line, record in zip(starts, records, strict=True):
        fields = {
            "title": _clean(_ris_text(record.get("title") or record.get("primary_title"))),
            "doi": _clean(_ris_text(record.get("doi"))),
            "url": " ".join(_ris_text(record.get(k)) for k in ("urls", "url", "link_to_pdf")),
            "note": _clean(_ris_text(record.get("note"))),
            "number": _clean(_ris_text(record.get("number"))),
            "journal": " ".join(
                _ris_text(record.get(k))
                for k in ("secondary_title", "journal_name", "alternate_title1", "alternate_title3")
            ),
        }
        record_id = _clean(_ris_text(record.get("id")))[:80]
        where = f"{name}:{line}" + (f" ({record_id})" if record_id else "")
        arxiv_id = find_arxiv_id(fields)
        keywords = record.get("keywords") or []
        tags = tuple(dict.fromkeys(" ".join(str(k).split()) for k in keywords if str(k).strip()))
        notes = record.get("notes") or []
        note = _note("\n".join(str(n) for n in notes)) if notes else None
        problem = None if arxiv_id else _no_id_reason(fields)
        works.append(CitedWork(where, arxiv_id, fields["title"] or None, problem, tags, note))
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


def detect_format(path: Path, text: str) -> Literal["bibtex", "ris", "csl-json", "ids"]:
    """By extension (.bib, .ris, .json, .txt), else by content."""
    suffix = path.suffix.lower()
    if suffix in (".bib", ".bibtex"):
        return "bibtex"
    if suffix == ".ris":
        return "ris"
    if suffix in (".json", ".csljson"):
        return "csl-json"
    if suffix in (".txt", ".list", ".ids"):
        return "ids"
    start = text.lstrip()[:1]
    if start in ("[", "{"):
        return "csl-json"
    first = next((line for line in text.splitlines() if line.strip()), "")
    if re.match(r"^(TY  -|\d+\.\s*$)", first):  # a record's first line (or rispy's "1." before it)
        return "ris"
    if re.search(r"^\s*@\w+\s*[{(]", text, re.MULTILINE):
        return "bibtex"
    if re.search(r"^TY  - ", text[:4096], re.MULTILINE):
        return "ris"
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
    parsers = {"bibtex": parse_bibtex, "ris": parse_ris, "csl-json": parse_csl_json, "ids": parse_id_list}
    return parsers[kind](text, name)
