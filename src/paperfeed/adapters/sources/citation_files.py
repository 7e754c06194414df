"""Files of citations for ``paperfeed citations import``
(:class:`~paperfeed.domain.citation_import.CitationFile`): pairs of ids, the Semantic Scholar Datasets'
``citations`` and ``papers``, OpenAlex works snapshots.

Gzip or plain (told by the first two bytes), read in 1 MiB chunks and split into lines here, so memory
stays flat whatever the file's size; a batch is handed on every ``batch_size`` records with the place
after its last line: bytes of the decompressed text and the line number. Resuming opens the file again and
seeks the decompressed stream there (gzip decompresses up to it: a few seconds a GB, no parsing).

Every line is taken whole or rejected whole, with ``file:line`` and the reason; blank lines, ``#``
comments (pairs files) and a header line (a first line of a pairs file whose two columns are no ids) are
neither. The record shapes, and where they are documented, are in ``docs/citations.md``.
"""

from __future__ import annotations

import csv
import gzip
import hashlib
import re
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, cast

import orjson

from paperfeed.domain.citation_import import (
    EdgeBatch,
    EdgeDetail,
    FileMark,
    ImportFormat,
    ImportPoint,
    InvalidWorkId,
    UnreadableCitationFile,
    provenance,
    s2_corpus_key,
    work_ref,
)
from paperfeed.domain.ids import InvalidPaperId, parse_arxiv_id
from paperfeed.domain.ingest import Reject
from paperfeed.domain.paper_graph import WorkRef, work_key
from paperfeed.domain.wording import count

from .jsonl_file import BOM, MAX_LINE_BYTES
from .openalex import _referenced, _wid, _work
from .scholarly import as_date, as_int, as_str

__all__ = ["CitationFileReader", "LocalCitationFiles", "detect_format"]

CHUNK = 1 << 20
_FINGERPRINT_BYTES = 1 << 20
_CACHE_MAX = 200_000  # ids remembered by a pairs file's parser (a dict of a few tens of MB at most)
_S2_PAPER_URL = re.compile(r"semanticscholar\.org/paper/(?:[^/]*/)?([0-9a-f]{40})$")


def _open(path: Path) -> tuple[IO[bytes], IO[bytes]]:
    """(the text stream, the raw file): gunzipped when the file starts with gzip's magic bytes."""
    raw: IO[bytes] = path.open("rb")
    magic = raw.read(2)
    raw.seek(0)
    if magic == b"\x1f\x8b":
        return cast(IO[bytes], gzip.GzipFile(fileobj=raw, mode="rb")), raw
    return raw, raw


def _lines(stream: IO[bytes], offset: int, line: int) -> Iterator[tuple[int, bytes | None, int]]:
    """(line number, line without its end, offset after it) from ``offset``, which is line ``line``'s
    end; ``None`` for a line over :data:`MAX_LINE_BYTES` (never held whole)."""
    pending = b""
    oversized = False
    end = offset
    while True:
        chunk = stream.read1(CHUNK) if hasattr(stream, "read1") else stream.read(CHUNK)
        if not chunk:
            break
        parts = (pending + chunk).split(b"\n")
        pending = parts.pop()
        for text in parts:
            line += 1
            end += len(text) + 1
            if oversized or len(text) > MAX_LINE_BYTES:
                oversized = False
                yield line, None, end
            else:
                yield line, text[:-1] if text.endswith(b"\r") else text, end
        if len(pending) > MAX_LINE_BYTES:
            end += len(pending)
            oversized, pending = True, b""
    if oversized or pending:
        line += 1
        end += len(pending)
        yield line, None if oversized else pending.removesuffix(b"\r"), end


def _first_record(path: Path) -> bytes | None:
    """The first line that is not blank or a comment (its first 64 KiB), for telling the format."""
    stream, raw = _open(path)
    try:
        for lineno, line, _ in _lines(stream, 0, 0):
            if line is None:
                return b"{"
            if lineno == 1:
                line = line.removeprefix(BOM)
            text = line.strip()
            if text and not text.startswith(b"#"):
                return text[:65536]
            if lineno > 1000:
                break
        return None
    finally:
        stream.close()
        raw.close()


def detect_format(first: bytes | None) -> ImportFormat:
    """The format a file's first record shows; :class:`UnreadableCitationFile` when none fits."""
    if first is None:
        return ImportFormat.PAIRS  # nothing but blank lines and comments: nothing to import either way
    if first.startswith(b"{"):
        try:
            record = orjson.loads(first)
        except orjson.JSONDecodeError:
            record = None  # cut at 64 KiB, or not JSON: look for the keys in the text itself
        keys = set(record) if isinstance(record, dict) else set(re.findall(rb'"([a-z_]+)"\s*:', first))
        keys = {k.decode() if isinstance(k, bytes) else k for k in keys}
        if {"citingcorpusid", "citedcorpusid"} & keys:
            return ImportFormat.S2_CITATIONS
        if "corpusid" in keys:
            return ImportFormat.S2_PAPERS
        if "referenced_works" in keys or b'"https://openalex.org/W' in first[:200]:
            return ImportFormat.OPENALEX
        if {"citing", "cited"} <= keys or {"citing_id", "cited_id"} <= keys:
            return ImportFormat.PAIRS
        shown = ", ".join(sorted(keys)[:12]) or "none"
        raise UnreadableCitationFile(
            f"cannot tell the format from the first record (its keys: {shown}); give --format"
        )
    try:
        text = first.decode("utf-8")
    except UnicodeDecodeError:
        text = "\x00"
    if any(ch < " " and ch != "\t" for ch in text):
        raise UnreadableCitationFile("not text (and not gzip): cannot read it as citations")
    if "\t" in text or "," in text:
        return ImportFormat.PAIRS
    raise UnreadableCitationFile(
        f"cannot tell the format from the first line {text[:60]!r}: expected two ids separated by a tab "
        "or a comma, or a JSON record; give --format"
    )


def _fingerprint(path: Path, size: int) -> str:
    with path.open("rb") as fh:
        head = fh.read(_FINGERPRINT_BYTES)
    return hashlib.blake2b(f"{size}:".encode() + head, digest_size=16).hexdigest()


# -- the parsers: one line of a file into the batch --------------------------------------------------------


class _Parser:
    """Turns one line into the batch's edges, works and aliases, or a reject; ``label`` names the file."""

    def __init__(self, label: str) -> None:
        self.label = label

    def take(self, line: bytes, lineno: int, batch: EdgeBatch) -> None:
        raise NotImplementedError

    def reject(self, batch: EdgeBatch, lineno: int, reason: str, field: str | None = None) -> None:
        batch.rejects.append(Reject(f"{self.label}:{lineno}", reason, field))
        batch.records += 1

    def record(self, line: bytes, lineno: int, batch: EdgeBatch) -> dict[str, Any] | None:
        """The line as a JSON object, or ``None`` after rejecting it."""
        try:
            value = orjson.loads(line)
        except orjson.JSONDecodeError as exc:
            try:
                line.decode("utf-8")
            except UnicodeDecodeError as bad:
                self.reject(batch, lineno, f"invalid UTF-8 at byte {bad.start}")
                return None
            self.reject(batch, lineno, f"bad JSON: {exc}")
            return None
        if not isinstance(value, dict):
            self.reject(batch, lineno, f"expected a JSON object, got {type(value).__name__}")
            return None
        return value


class _Pairs(_Parser):
    """(citing, cited) per line: tab- or comma-separated (the first line decides which, and is skipped
    as a header when neither column is an id; further columns are ignored), or JSON objects with
    ``citing`` and ``cited`` (or ``citing_id`` and ``cited_id``)."""

    def __init__(self, label: str) -> None:
        super().__init__(label)
        self.sep: bytes | None = None
        self.json = False
        self.cache: dict[bytes, str | InvalidWorkId] = {}

    def key(self, raw: bytes) -> str | InvalidWorkId:
        found = self.cache.get(raw)
        if found is None:
            try:
                found = work_ref(raw.decode("utf-8"))
            except InvalidWorkId as exc:
                found = exc
            except UnicodeDecodeError as exc:
                found = InvalidWorkId(f"invalid UTF-8 at byte {exc.start}")
            if len(self.cache) >= _CACHE_MAX:
                self.cache.clear()
            self.cache[raw] = found
        return found

    def take(self, line: bytes, lineno: int, batch: EdgeBatch) -> None:
        text = line.strip()
        if not text or text[:1] == b"#":
            return
        if self.sep is None and not self.json:
            self.json = text[:1] == b"{"
            if not self.json:
                self.sep = b"\t" if b"\t" in text else b","
                cols = self.columns(text)
                if len(cols) >= 2 and all(isinstance(self.key(c), InvalidWorkId) for c in cols[:2]):
                    return  # a header: citing_id<TAB>cited_id
        if self.json:
            record = self.record(text, lineno, batch)
            if record is None:
                return
            pair = [record.get(a, record.get(f"{a}_id")) for a in ("citing", "cited")]
            if not all(isinstance(p, str) for p in pair):
                self.reject(batch, lineno, "expected string fields citing and cited (or citing_id, cited_id)")
                return
            cols = [cast(str, p).encode() for p in pair]
        else:
            cols = self.columns(text)
            if len(cols) < 2:
                self.reject(batch, lineno, "expected two ids (citing, cited) separated by a tab or a comma")
                return
        citing, cited = self.key(cols[0]), self.key(cols[1])
        if isinstance(citing, InvalidWorkId):
            self.reject(batch, lineno, str(citing), "citing")
        elif isinstance(cited, InvalidWorkId):
            self.reject(batch, lineno, str(cited), "cited")
        else:
            batch.edges.append((citing, cited))
            batch.records += 1

    def columns(self, text: bytes) -> list[bytes]:
        if self.sep == b"," and b'"' in text:  # quoted CSV fields
            try:
                row = next(csv.reader([text.decode("utf-8")]))
            except (UnicodeDecodeError, csv.Error, StopIteration):
                return text.split(b",")
            return [c.encode() for c in row]
        assert self.sep is not None
        return text.split(self.sep)


def _strings(value: object, name: str) -> tuple[str, ...]:
    """A list of strings (null: none); :class:`ValueError` naming the field otherwise."""
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ValueError(f"{name}: expected a list of strings or null")
    return tuple(value)


def _intents(value: object) -> tuple[str, ...]:
    """S2's intents, flat and each once: a list of strings, or (newer releases) one list (or null) per
    context."""
    if value is None:
        return ()
    if not isinstance(value, list):
        raise ValueError("intents: expected a list or null")
    out: dict[str, None] = {}
    for item in value:
        for name in [item] if isinstance(item, str) else _strings(item, "intents"):
            if name.strip():
                out[name.strip()] = None
    return tuple(out)


class _S2Citations(_Parser):
    """A Semantic Scholar Datasets ``citations`` record: ``citingcorpusid`` cites ``citedcorpusid``
    (integers, or their digits as text in older releases), with ``isinfluential``, ``contexts`` and
    ``intents``. A null corpus id is a reference S2 could not match to a paper: counted, not stored."""

    def take(self, line: bytes, lineno: int, batch: EdgeBatch) -> None:
        if not line.strip():
            return
        record = self.record(line, lineno, batch)
        if record is None:
            return
        ends: list[str] = []
        for name in ("citingcorpusid", "citedcorpusid"):
            if name not in record:
                self.reject(batch, lineno, "missing", name)
                return
            value = record[name]
            if value is None:
                batch.unkeyed += 1
                batch.records += 1
                return
            key = s2_corpus_key(value)
            if key is None:
                self.reject(batch, lineno, f"not a corpus id: {str(value)[:40]!r}", name)
                return
            ends.append(key)
        influential = record.get("isinfluential")
        if influential is not None and not isinstance(influential, bool):
            self.reject(batch, lineno, "expected true, false or null", "isinfluential")
            return
        try:
            contexts = _strings(record.get("contexts"), "contexts")
            intents = _intents(record.get("intents"))
        except ValueError as exc:
            self.reject(batch, lineno, str(exc))
            return
        pair = (ends[0], ends[1])
        batch.edges.append(pair)
        if influential is not None or contexts or intents:
            batch.details[pair] = EdgeDetail(influential, tuple(dict.fromkeys(contexts)), intents)
        batch.records += 1


def _doi_alias(key: str, doi: str | None) -> tuple[str, str] | None:
    """``doi:<doi>`` -> ``key`` when a record ties a DOI to an arXiv id (the DOI is then an alias)."""
    if ":" in key or not doi:
        return None
    doi_key = work_key(doi=doi)
    return (doi_key, key) if doi_key is not None and doi_key.startswith("doi:") else None


class _S2Papers(_Parser):
    """A Semantic Scholar Datasets ``papers`` record: a corpus id with its ``externalids`` (``ArXiv``,
    ``DOI``, …), its ``url`` (``…/paper/<paperId>``), title, year, date and counts. It teaches the corpus
    id's work key (arXiv id, else DOI, else ``s2:<paperId>``) and describes the work."""

    def take(self, line: bytes, lineno: int, batch: EdgeBatch) -> None:
        if not line.strip():
            return
        record = self.record(line, lineno, batch)
        if record is None:
            return
        corpus = s2_corpus_key(record.get("corpusid"))
        if corpus is None:
            self.reject(batch, lineno, f"not a corpus id: {str(record.get('corpusid'))[:40]!r}", "corpusid")
            return
        ids = record.get("externalids")
        if ids is not None and not isinstance(ids, dict):
            self.reject(batch, lineno, "expected an object or null", "externalids")
            return
        ids = ids or {}
        arxiv_raw, doi_raw = as_str(ids.get("ArXiv")), as_str(ids.get("DOI"))
        try:
            arxiv = parse_arxiv_id(arxiv_raw).base if arxiv_raw else None
        except InvalidPaperId:
            arxiv = None
        url = as_str(record.get("url")) or ""
        found = _S2_PAPER_URL.search(url)
        sha = found[1] if found else None
        key = work_key(arxiv_id=arxiv, doi=doi_raw, s2_id=sha) or corpus
        doi_key = work_key(doi=doi_raw) if doi_raw else None
        doi = doi_key[4:] if doi_key and doi_key.startswith("doi:") else None
        batch.works.append(
            WorkRef(
                key=key,
                title=as_str(record.get("title")),
                year=as_int(record.get("year")),
                published=as_date(record.get("publicationdate")),
                arxiv_id=arxiv,
                doi=doi,
                s2_id=sha,
                citation_count=as_int(record.get("citationcount")),
                reference_count=as_int(record.get("referencecount")),
            )
        )
        if key != corpus:
            batch.aliases.append((corpus, key))
        alias = _doi_alias(key, doi)
        if alias is not None:
            batch.aliases.append(alias)
        batch.records += 1


class _OpenAlexWorks(_Parser):
    """An OpenAlex works snapshot record: the work (``id``, ``doi``, ``ids``, ``locations`` for its arXiv
    id, title, date, counts) and its ``referenced_works`` (OpenAlex ids): one edge each, to
    ``openalex:W…`` until a record tells that work's key."""

    def take(self, line: bytes, lineno: int, batch: EdgeBatch) -> None:
        if not line.strip():
            return
        record = self.record(line, lineno, batch)
        if record is None:
            return
        given = record.get("ids")
        ids: dict[str, Any] = given if isinstance(given, dict) else {}
        wid = _wid(record.get("id")) or _wid(ids.get("openalex"))
        if wid is None:
            self.reject(batch, lineno, f"not an OpenAlex work id: {str(record.get('id'))[:60]!r}", "id")
            return
        refs = record.get("referenced_works")
        if refs is not None and not isinstance(refs, list):
            self.reject(batch, lineno, "expected a list of OpenAlex ids or null", "referenced_works")
            return
        for i, ref in enumerate(refs or ()):
            if _wid(ref) is None:
                self.reject(
                    batch, lineno, f"not an OpenAlex work id: {str(ref)[:60]!r}", f"referenced_works[{i}]"
                )
                return
        view = dict(record)
        view["id"] = wid
        if not as_str(view.get("doi")):
            view["doi"] = ids.get("doi")
        work = _work(view)
        assert work is not None  # wid alone keys it
        batch.works.append(work)
        for cited in _referenced(view):
            batch.edges.append((work.key, f"openalex:{cited}"))
        if work.key != f"openalex:{wid}":
            batch.aliases.append((f"openalex:{wid}", work.key))
        alias = _doi_alias(work.key, work.doi)
        if alias is not None:
            batch.aliases.append(alias)
        batch.records += 1


_PARSERS: dict[ImportFormat, Callable[[str], _Parser]] = {
    ImportFormat.PAIRS: _Pairs,
    ImportFormat.S2_CITATIONS: _S2Citations,
    ImportFormat.S2_PAPERS: _S2Papers,
    ImportFormat.OPENALEX: _OpenAlexWorks,
}


@dataclass
class CitationFileReader:
    """One file of citations, read batch by batch from where its import stands."""

    path: Path
    format: ImportFormat
    batch_size: int = 20_000
    label: str = ""
    size: int = 0
    fingerprint: str = ""
    _mark: FileMark | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        self.label = self.label or str(self.path)
        self.size = self.size or self.path.stat().st_size
        self.fingerprint = self.fingerprint or _fingerprint(self.path, self.size)

    @property
    def mark(self) -> FileMark:
        if self._mark is None:
            name = self.path.name
            self._mark = FileMark(self.fingerprint, name, self.format, provenance(self.format, name))
        return self._mark

    def batches(self, start: ImportPoint | None) -> Iterator[EdgeBatch]:
        point = start or ImportPoint(0, 0)
        parser = _PARSERS[self.format](self.label)
        stream, raw = _open(self.path)
        batch = EdgeBatch(point=point)
        lineno, end = point.line, point.offset
        try:
            if point.offset:
                stream.seek(point.offset)
            for lineno, line, end in _lines(stream, point.offset, point.line):
                if line is None:
                    parser.reject(batch, lineno, f"line longer than {count(MAX_LINE_BYTES, 'byte')}")
                elif lineno == 1 and line.startswith(BOM):
                    parser.take(line[len(BOM) :], lineno, batch)
                else:
                    parser.take(line, lineno, batch)
                if batch.records >= self.batch_size:
                    batch.point, batch.position = ImportPoint(end, lineno), raw.tell()
                    yield batch
                    batch = EdgeBatch(point=batch.point)
        except (OSError, EOFError, zlib.error) as exc:
            batch.rejects.append(
                Reject(f"{self.label}:{lineno + 1}", f"file unreadable from here: {exc}", fatal=True)
            )
        finally:
            stream.close()
            raw.close()
        batch.point, batch.position = ImportPoint(end, lineno), self.size
        yield batch


@dataclass
class LocalCitationFiles:
    """Opens files on this machine (:class:`~paperfeed.domain.citation_import.CitationFiles`)."""

    def open(self, path: str, fmt: ImportFormat | None, *, batch_size: int) -> CitationFileReader:
        where = Path(path)
        if not where.exists():
            raise UnreadableCitationFile(f"{path}: no such file")
        if not where.is_file():
            raise UnreadableCitationFile(f"{path}: not a file")
        try:
            first = _first_record(where)
        except PermissionError:
            raise UnreadableCitationFile(f"{path}: permission denied") from None
        except (OSError, EOFError, zlib.error) as exc:
            raise UnreadableCitationFile(f"{path}: cannot read it ({exc})") from None
        if fmt is None:
            try:
                fmt = detect_format(first)
            except UnreadableCitationFile as exc:
                raise UnreadableCitationFile(f"{path}: {exc}") from None
        return CitationFileReader(where, fmt, batch_size=batch_size, label=path)
