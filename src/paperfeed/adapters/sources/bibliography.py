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

:func:`read_bibliography_stream` reads a file as a stream (a megabyte at a time, decoded as it comes) and
stops after ``max_entries`` entries, so what a web upload costs is bounded by the cap, not by the file:
only the part up to the cap is held and parsed (BibTeX, RIS and id lists are cut at a line where the next
entry starts; a CSL-JSON array is decoded item by item, each item at most :data:`MAX_JSON_ITEM_CHARS`
long and :data:`MAX_JSON_DEPTH` deep, so neither a huge nor a deeply nested item is ever built).
"""

from __future__ import annotations

import codecs
import io
import itertools
import json
import logging
import re
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any, BinaryIO, Literal

import rispy
from bibtexparser.entrypoint import parse_string as parse_bibtex_string
from bibtexparser.model import DuplicateBlockKeyBlock

from paperfeed.domain.ids import InvalidPaperId, parse_arxiv_id
from paperfeed.domain.library import MAX_FILE_BYTES, Bibliography, BibliographyError, CitedWork, Format
from paperfeed.domain.reference_formats import unshield_ris_line
from paperfeed.domain.wording import count

__all__ = [
    "detect_format",
    "find_arxiv_id",
    "parse_bibliography",
    "parse_bibtex",
    "parse_csl_json",
    "parse_id_list",
    "parse_ris",
    "read_bibliography",
    "read_bibliography_stream",
]

MAX_JSON_ITEM_CHARS = 2**20  # a CSL-JSON item (Zotero's longest: a note and an abstract) is far smaller
MAX_JSON_DEPTH = 32  # a CSL item nests 4 deep ("issued": {"date-parts": [[2024, 1, 2]]})
_CHUNK = 2**20
_NON_ENTRIES = 100  # @string, @comment and @preamble blocks a BibTeX file may have besides its entries


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


def _chunks(stream: BinaryIO, name: str) -> Iterator[str]:
    """The stream's text a megabyte at a time: UTF-8 (a BOM dropped), at most :data:`MAX_FILE_BYTES`."""
    decoder = codecs.getincrementaldecoder("utf-8-sig")()
    size = lines = 0
    while True:
        raw = stream.read(_CHUNK)
        final = not raw
        size += len(raw)
        if size > MAX_FILE_BYTES:
            raise BibliographyError(
                f"{name}: the file is larger than the {count(MAX_FILE_BYTES, 'byte')} allowed"
            )
        pending = len(decoder.getstate()[0])  # bytes of a character the previous chunk cut in two
        try:
            text = decoder.decode(raw, final)
        except UnicodeDecodeError as exc:
            line = lines + raw[: max(0, exc.start - pending)].count(b"\n") + 1
            bad = exc.object[exc.start]
            raise BibliographyError(f"{name}:{line}: not UTF-8 text (byte 0x{bad:02x})") from None
        lines += raw.count(b"\n")
        if text:
            yield text
        if final:
            return


def _lines(chunks: Iterable[str]) -> Iterator[str]:
    """The lines of the text in ``chunks``, each with its ``\\n`` (the last one may have none)."""
    carry: list[str] = []
    for chunk in chunks:
        if "\n" not in chunk:
            carry.append(chunk)
            continue
        parts = chunk.split("\n")
        if carry:
            parts[0] = "".join(carry) + parts[0]
        last = parts.pop()
        carry = [last] if last else []
        for part in parts:
            yield part + "\n"
    if carry:
        yield "".join(carry)


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


# Where bibtexparser may start a block (its own splitter's pattern): ``@type`` before ``{`` or ``(``.
_BLOCK_START = re.compile(r"@\w*[ \t]*(?=[{(])")


def _bibtex_upto(lines: Iterator[str], name: str, max_entries: int | None) -> Bibliography:
    """The entries of a BibTeX stream up to ``max_entries``. The text is cut before a line that opens a
    block once the blocks counted reach the cap (and :data:`_NON_ENTRIES` strings and comments): every
    place bibtexparser can start a block is counted, so it is never handed more blocks than that, however
    the file is laid out; the rest of the stream is not read."""
    if max_entries is None:
        return Bibliography(parse_bibtex("".join(lines), name))
    limit = max_entries + _NON_ENTRIES
    kept: list[str] = []
    opened = -1  # index in ``kept`` of the last line that begins with a block: a clean place to cut
    marks = 0
    more = False
    for line in lines:
        found = list(_BLOCK_START.finditer(line))
        begins = bool(found) and not line[: found[0].start()].strip()
        if marks + len(found) > limit:
            more = True
            if not begins:  # the block in progress would be cut in two: leave it out as well
                del kept[max(opened, 0) :]
            break
        marks += len(found)
        if begins:
            opened = len(kept)
        kept.append(line)
    works = parse_bibtex("".join(kept), name)
    return _capped(works, max_entries, more)


def _capped(works: list[CitedWork], max_entries: int | None, more: bool) -> Bibliography:
    if max_entries is not None and len(works) > max_entries:
        return Bibliography(works[:max_entries], more=True)
    return Bibliography(works, more=more)


def _csl_fields(item: Mapping[str, Any]) -> dict[str, str]:
    fields: dict[str, str] = {}
    for key, value in item.items():
        if isinstance(value, str | int | float):
            fields[key.lower()] = _clean(value)
    return fields


_JSON_SPACE = re.compile(r"[ \t\n\r]*")
# A string (to its closing quote, or on to the end of the text: never a failed match, so never a rescan)
# or a bracket: enough to find where an array or object ends without building it.
_JSON_TOKEN = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"?|[\[\]{}]', re.DOTALL)
_JSON_KINDS = {'"': "str", "[": "list", "t": "bool", "f": "bool", "n": "NoneType"}
_JSON_DECODER = json.JSONDecoder()


def _json_space(text: str, pos: int) -> int:
    found = _JSON_SPACE.match(text, pos)
    return found.end() if found else pos


def _json_error(name: str, text: str, pos: int, what: str) -> BibliographyError:
    line = text.count("\n", 0, pos) + 1
    return BibliographyError(f"{name}:{line}:{pos - text.rfind(chr(10), 0, pos)}: invalid JSON: {what}")


def _json_value(text: str, pos: int, name: str, label: str) -> tuple[Any, int]:
    """The JSON value at ``pos`` and where it ends. An array or object is measured first, without being
    built: one longer than :data:`MAX_JSON_ITEM_CHARS` or nested deeper than :data:`MAX_JSON_DEPTH` is a
    :class:`BibliographyError` (json's own decoder would recurse until Python's limit, a 500)."""
    if text[pos : pos + 1] in ("[", "{"):
        depth, stop = 0, pos + MAX_JSON_ITEM_CHARS
        for token in _JSON_TOKEN.finditer(text, pos, min(len(text), stop + 1)):
            first = token.group()[0]
            if first == '"':
                continue
            depth += 1 if first in "[{" else -1
            if depth > MAX_JSON_DEPTH:
                raise BibliographyError(
                    f"{name}: {label} is nested more than {count(MAX_JSON_DEPTH, 'level')} deep"
                )
            if depth == 0:
                break
        else:
            if len(text) > stop:
                raise BibliographyError(
                    f"{name}: {label} is longer than {count(MAX_JSON_ITEM_CHARS, 'character')}"
                )
    try:
        value, end = _JSON_DECODER.raw_decode(text, pos)
    except json.JSONDecodeError as exc:
        raise BibliographyError(f"{name}:{exc.lineno}:{exc.colno}: invalid JSON: {exc.msg}") from None
    except (ValueError, RecursionError) as exc:  # a number of more digits than Python converts
        raise BibliographyError(f"{name}: {label}: {exc}") from None
    return value, end


def _json_items(text: str, name: str) -> Iterator[tuple[int, Mapping[str, Any]]]:
    """The items of a CSL-JSON text one at a time (an array, or an object's ``items`` array), with their
    number; each is decoded only when reached, so stopping early leaves the rest undecoded."""
    pos = _json_space(text, 0)
    start = text[pos : pos + 1]
    if start == "{":
        pos = _json_space(text, pos + 1)
        while text[pos : pos + 1] == '"':
            key, pos = _json_value(text, pos, name, "a key")
            pos = _json_space(text, pos)
            if text[pos : pos + 1] != ":":
                raise _json_error(name, text, pos, "Expecting ':' delimiter")
            pos = _json_space(text, pos + 1)
            if key == "items" and text[pos : pos + 1] == "[":
                yield from _json_array(text, pos, name)
                return
            _, pos = _json_value(text, pos, name, f"the value of {str(key)[:40]!r}")
            pos = _json_space(text, pos)
            if text[pos : pos + 1] != ",":
                break
            pos = _json_space(text, pos + 1)
        raise BibliographyError(f"{name}: CSL-JSON must be an array of items, got a dict")
    if start != "[":
        value, _ = _json_value(text, pos, name, "the file")
        raise BibliographyError(f"{name}: CSL-JSON must be an array of items, got a {type(value).__name__}")
    yield from _json_array(text, pos, name)


def _json_array(text: str, pos: int, name: str) -> Iterator[tuple[int, Mapping[str, Any]]]:
    pos = _json_space(text, pos + 1)
    if text[pos : pos + 1] == "]":
        return
    index = 0
    while True:
        index += 1
        first = text[pos : pos + 1]
        if first != "{":
            kind = _JSON_KINDS.get(first) or ("number" if first in "-0123456789" and first else None)
            if kind is None:
                raise _json_error(name, text, pos, "Expecting value")
            raise BibliographyError(f"{name}: item {index} is a {kind}, not an object")
        item, pos = _json_value(text, pos, name, f"item {index}")
        yield index, item
        pos = _json_space(text, pos)
        after = text[pos : pos + 1]
        if after == "]":
            return
        if after != ",":
            raise _json_error(name, text, pos, "Expecting ',' delimiter")
        pos = _json_space(text, pos + 1)


def parse_csl_json(text: str, name: str, max_entries: int | None = None) -> Bibliography:
    """Items of a CSL-JSON file (an array of items, as Zotero and Better BibTeX export), the first
    ``max_entries`` of them."""
    works = []
    more = False
    for index, item in _json_items(text, name):
        if max_entries is not None and index > max_entries:
            more = True
            break
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
    return Bibliography(works, more=more)


class _RisParser(rispy.RisParser):  # type: ignore[misc]
    """rispy's parser, keeping a continuation line as written (a note's indentation is Markdown)."""

    def parse_line(self, line: str) -> tuple[str | None, str]:
        line = line.rstrip("\r")
        if _RIS_LINE.match(line):
            return line[0:2], line[6:].strip()
        return None, unshield_ris_line(line)


def _ris_records(lines: Iterable[str], name: str, max_entries: int | None) -> tuple[list[int], str, bool]:
    """The line of each record's ``TY``, the text up to the last of them (at most ``max_entries``) and
    whether more records follow; a file that is not whole RIS is a :class:`BibliographyError`."""
    starts: list[int] = []
    kept: list[str] = []
    open_at: int | None = None
    written = False
    for number, raw in enumerate(lines, start=1):  # lines as rispy splits them (at \n)
        line = raw.removesuffix("\n").rstrip("\r")
        match = _RIS_LINE.match(line)
        tag = match[1] if match else None
        written = written or bool(line.strip())
        if open_at is None:
            if tag == "TY":
                if max_entries is not None and len(starts) >= max_entries:
                    return starts, "".join(kept), True
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
        kept.append(raw)
    if open_at is not None:
        raise BibliographyError(
            f"{name}:{open_at}: the record starting here has no “ER  - ” line (is the file truncated?)"
        )
    if not starts and written:
        raise BibliographyError(f"{name}:1: not RIS: no record (“TY  - …” to “ER  - ”) in the file")
    return starts, "".join(kept), False


def _ris_text(value: object) -> str:
    if isinstance(value, list):
        return " ".join(str(v) for v in value)
    return str(value) if value is not None else ""


def parse_ris(text: str, name: str) -> list[CitedWork]:
    """Records of a RIS file (Zotero, EndNote, Mendeley); a truncated or non-RIS file raises
    :class:`BibliographyError` naming the line, before anything is imported."""
    return _ris_upto(_lines([text]), name, None).works


def _ris_upto(lines: Iterable[str], name: str, max_entries: int | None) -> Bibliography:
    starts, text, more = _ris_records(lines, name, max_entries)
    records = rispy.loads(text, implementation=_RisParser)
    if len(records) != len(starts):  # the check above and rispy split records alike; never half a file
        raise BibliographyError(f"{name}: {count(len(starts), 'record')} found but {len(records)} read")
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
    return Bibliography(works, more=more)


def parse_id_list(text: str, name: str) -> list[CitedWork]:
    """One arXiv id or arXiv URL per line; blank lines and ``#`` comments are skipped."""
    return _ids_upto(_lines([text]), name, None).works


def _ids_upto(lines: Iterable[str], name: str, max_entries: int | None) -> Bibliography:
    works: list[CitedWork] = []
    number = 0
    for chunk in lines:
        for raw in chunk.splitlines() or [""]:  # str.splitlines' line ends, as people's editors write
            number += 1
            line = raw.strip()
            if not line or line.startswith("#"):
                continue
            if max_entries is not None and len(works) >= max_entries:
                return Bibliography(works, more=True)
            candidate = re.sub(r"^(https?://)(www\.)", r"\1", line, flags=re.IGNORECASE)
            arxiv_id = _canonical(candidate)
            if arxiv_id is None and (match := _IN_URL.search(candidate) or _IN_DOI.search(candidate)):
                arxiv_id = _canonical(match[1])
            problem = None if arxiv_id else f"not an arXiv id or URL: {line[:80]!r}"
            works.append(CitedWork(f"{name}:{number}", arxiv_id, problem=problem))
    return Bibliography(works)


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
        with path.open("rb") as stream:
            return read_bibliography_stream(stream, label, fmt, path=path).works
    except OSError as exc:
        raise BibliographyError(f"{path}: cannot read: {exc.strerror or exc}") from None


def parse_bibliography(
    data: bytes, name: str, fmt: Format = "auto", path: Path | None = None
) -> list[CitedWork]:
    """Parse the bytes of a bibliography file called ``name`` (an upload has no path)."""
    return read_bibliography_stream(io.BytesIO(data), name, fmt, path=path).works


def read_bibliography_stream(
    stream: BinaryIO,
    name: str,
    fmt: Format = "auto",
    *,
    max_entries: int | None = None,
    path: Path | None = None,
) -> Bibliography:
    """The first ``max_entries`` entries (None: all) of the bibliography ``stream`` reads, a file called
    ``name``; ``more`` says the file had more, which were not read (see the module doc)."""
    chunks = _chunks(stream, name)
    first = next(chunks, "")
    kind = detect_format(path or Path(name), first) if fmt == "auto" else fmt
    text = itertools.chain([first], chunks)
    if kind == "csl-json":
        return parse_csl_json("".join(text), name, max_entries)
    if kind == "bibtex":
        return _bibtex_upto(_lines(text), name, max_entries)
    if kind == "ris":
        return _ris_upto(_lines(text), name, max_entries)
    return _ids_upto(_lines(text), name, max_entries)
