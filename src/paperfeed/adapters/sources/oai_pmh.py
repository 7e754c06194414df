"""OAI-PMH for arXiv: streaming page parser, the three arXiv metadata formats, and list paging.

One response page (``ListRecords``, ``GetRecord`` or ``ListIdentifiers``) is parsed with lxml's pull
parser, fed in chunks; each ``<record>`` is turned into paper fields as soon as it is complete and then
freed, so a 1000-record page never exists as a whole tree. Every record goes through
:func:`~paperfeed.domain.validation.build_paper`, so a bad one becomes a
:class:`~paperfeed.domain.ingest.Reject` naming its OAI identifier and field instead of failing the page.

Formats (``metadataPrefix``):

* ``arXiv``: structured authors (keyname/forenames/suffix), ``created`` (v1 date) and ``updated``.
* ``arXivRaw``: one flat author string, and every version with its RFC 2822 date: version = highest,
  published = v1 date, updated = the last version's date.
* ``oai_dc``: Dublin Core; subject *names* are mapped to category codes by
  :mod:`~paperfeed.domain.arxiv_subjects`; first ``dc:date`` = published, last = updated.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any

from lxml import etree

from paperfeed.domain.arxiv_subjects import archive_of_set_spec, archive_of_subject, subject_category
from paperfeed.domain.errors import OaiError, SourceUnavailable
from paperfeed.domain.ingest import Reject
from paperfeed.domain.models import Paper
from paperfeed.domain.validation import InvalidRecord, build_paper
from paperfeed.domain.versions import parse_version_label, version_span

from .http import PoliteClient

__all__ = [
    "FORMATS",
    "OaiHeader",
    "OaiPage",
    "OaiProtocolError",
    "ResumptionToken",
    "fetch_page",
    "list_params",
    "parse_page",
    "split_author_string",
]

OAI = "http://www.openarchives.org/OAI/2.0/"
ARXIV = "http://arxiv.org/OAI/arXiv/"
ARXIV_RAW = "http://arxiv.org/OAI/arXivRaw/"
OAI_DC = "http://www.openarchives.org/OAI/2.0/oai_dc/"
DC = "http://purl.org/dc/elements/1.1/"
FORMATS = ("arXiv", "arXivRaw", "oai_dc")

_T_RECORD = f"{{{OAI}}}record"
_T_HEADER = f"{{{OAI}}}header"
_T_TOKEN = f"{{{OAI}}}resumptionToken"
_T_ERROR = f"{{{OAI}}}error"
_T_REQUEST = f"{{{OAI}}}request"
_T_LIST_IDS = f"{{{OAI}}}ListIdentifiers"
_T_IDENT = f"{{{OAI}}}identifier"
_T_DATESTAMP = f"{{{OAI}}}datestamp"
_T_SETSPEC = f"{{{OAI}}}setSpec"
_T_METADATA = f"{{{OAI}}}metadata"
_CHUNK = 64 * 1024
SOURCE = "arxiv-oai"


class OaiProtocolError(SourceUnavailable):
    """The answer is not a usable OAI-PMH response (HTML error page, empty body, a looping token)."""


@dataclass(frozen=True, slots=True)
class ResumptionToken:
    """Where a list continues; ``token`` is ``None`` on the last page."""

    token: str | None
    cursor: int | None = None
    complete_list_size: int | None = None


@dataclass(frozen=True, slots=True)
class OaiHeader:
    identifier: str
    datestamp: str | None
    sets: tuple[str, ...]
    deleted: bool = False


@dataclass(slots=True)
class OaiPage:
    """Everything one response carried, already validated into papers and rejects."""

    verb: str | None = None
    records: int = 0  # <record> elements, whatever became of them
    papers: list[Paper] = field(default_factory=list)
    rejects: list[Reject] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)  # OAI identifiers of deleted records (skipped)
    headers: list[OaiHeader] = field(default_factory=list)  # ListIdentifiers only
    resumption: ResumptionToken | None = None
    max_datestamp: str | None = None
    errors: list[OaiError] = field(default_factory=list)
    recovered: bool = False  # parsed in lxml recovery mode after a syntax error

    @property
    def next_token(self) -> str | None:
        return self.resumption.token if self.resumption else None


# -- field extraction per metadata format --------------------------------------------------------


def _text(el: Any) -> str | None:
    text: str | None = el.text
    return text


def _local(tag: str) -> str:
    return tag.rsplit("}", 1)[-1]


_SUFFIXES = frozenset({"jr", "jr.", "sr", "sr.", "ii", "iii", "iv", "v"})


def _arxiv_fields(meta: Any, header: OaiHeader) -> dict[str, Any]:
    fields: dict[str, Any] = {}
    authors: list[str] = []
    for child in meta:
        tag = child.tag
        if not isinstance(tag, str):
            continue  # comments, processing instructions
        name = _local(tag)
        if name == "authors":
            for author in child:
                parts: dict[str, str] = {}
                for part in author:
                    if isinstance(part.tag, str) and part.text:
                        parts[_local(part.tag)] = part.text
                full = " ".join(
                    p for p in (parts.get("forenames"), parts.get("keyname"), parts.get("suffix")) if p
                )
                if full.strip():
                    authors.append(full)
        elif name in _ARXIV_SIMPLE:
            fields[_ARXIV_SIMPLE[name]] = _text(child)
    if "categories" in fields:
        fields["categories"] = (fields["categories"] or "").split()
    fields["authors"] = authors
    fields.setdefault("id", header.identifier)
    return fields


# arXiv metadata elements that map one to one onto record fields: the same in arXivRaw (whose dates come
# from its version history) and in arXiv (which adds its own two dates).
_RAW_SIMPLE = {
    "id": "id",
    "title": "title",
    "abstract": "abstract",
    "categories": "categories",
    "comments": "comment",
    "journal-ref": "journal_ref",
    "doi": "doi",
    "license": "license",
}
_ARXIV_SIMPLE = {**_RAW_SIMPLE, "created": "published", "updated": "updated"}

_PARENS = re.compile(r"\([^()]*\)")
_OPEN_PAREN = re.compile(r"\([^,;()]*")
_AUTHOR_SEP = re.compile(r"\s*(?:,\s*and\s+|,|;|\s+and\s+|\s+&\s+)\s*")
_HAS_WORD = re.compile(r"\w")
_ET_AL = re.compile(r"[,\s]*\bet\s+al\b\.?", re.IGNORECASE)


def split_author_string(text: str) -> list[str]:
    """Split arXivRaw's flat author string into names, dropping affiliations in parentheses.

    ``"A. B (MIT), C. D and E. F ((1) X, (2) Y)"`` -> ``["A. B", "C. D", "E. F"]``; "Jr." and the
    like stay with the name before them; "et al." is dropped.
    """
    flat = " ".join(text.split())
    while True:  # innermost parentheses first, so nested affiliation lists go too
        stripped = _PARENS.sub(" ", flat)
        if stripped == flat:
            break
        flat = stripped
    # A truncated affiliation leaves an unclosed "(": drop it up to the next separator.
    flat = _OPEN_PAREN.sub(" ", flat).replace(")", " ")
    names: list[str] = []
    for raw in _AUTHOR_SEP.split(_ET_AL.sub("", flat)):
        name = " ".join(raw.split()).strip(" ,")
        if not name or not _HAS_WORD.search(name):
            continue
        if names and name.lower() in _SUFFIXES:
            names[-1] = f"{names[-1]} {name}"
            continue
        names.append(name)
    return names


def _rfc2822(value: str | None, where: str) -> datetime:
    if not value:
        raise InvalidRecord(where, "missing date")
    try:
        return parsedate_to_datetime(value.strip())
    except (TypeError, ValueError, IndexError):
        raise InvalidRecord(where, f"not an RFC 2822 date: {value.strip()[:40]!r}") from None


def _arxiv_raw_fields(meta: Any, header: OaiHeader) -> dict[str, Any]:
    fields: dict[str, Any] = {}
    versions: list[tuple[int, datetime]] = []
    for child in meta:
        tag = child.tag
        if not isinstance(tag, str):
            continue
        name = _local(tag)
        if name == "version":
            label = child.get("version") or ""
            number = parse_version_label(label.strip())
            if number is None:
                raise InvalidRecord("version", f"not a version label: {label[:20]!r}")
            date_el = child.find(f"{{{ARXIV_RAW}}}date")
            date_text = None if date_el is None else _text(date_el)
            versions.append((number, _rfc2822(date_text, f"version[{label}].date")))
        elif name == "authors":
            fields["authors"] = split_author_string(_text(child) or "")
        elif name in _RAW_SIMPLE:
            fields[_RAW_SIMPLE[name]] = _text(child)
    if "categories" in fields:
        fields["categories"] = (fields["categories"] or "").split()
    span = version_span(versions)
    if span is not None:
        fields.update(version=span.version, published=span.published, updated=span.updated)
    fields.setdefault("id", header.identifier)
    return fields


def _dc_name(creator: str) -> str | None:
    """``"Last, First"`` -> ``"First Last"``; ``"Last, Jr., First"`` -> ``"First Last Jr."``."""
    if not _HAS_WORD.search(creator):
        return None  # stray punctuation arXiv's author parser left as a "creator"
    if "," not in creator:
        return creator
    parts = [p for p in (p.strip() for p in creator.split(",")) if p]
    if len(parts) == 1:
        return parts[0]
    if len(parts) == 3 and parts[1].lower() in _SUFFIXES:
        return f"{parts[2]} {parts[0]} {parts[1]}"
    return " ".join([*parts[1:], parts[0]])


_ABS_URL = re.compile(r"^https?://(?:export\.)?arxiv\.org/abs/(\S+)$", re.IGNORECASE)
_DC_CREATOR = f"{{{DC}}}creator"
_DC_SUBJECT = f"{{{DC}}}subject"
_DC_DESCRIPTION = f"{{{DC}}}description"
_DC_DATE = f"{{{DC}}}date"
_DC_IDENTIFIER = f"{{{DC}}}identifier"
_DC_TITLE = f"{{{DC}}}title"
_DC_RIGHTS = f"{{{DC}}}rights"


def _oai_dc_fields(meta: Any, header: OaiHeader) -> dict[str, Any]:
    fields: dict[str, Any] = {}
    authors: list[str] = []
    subjects: list[str] = []
    dates: list[str] = []
    abstract: str | None = None
    comment: str | None = None
    for child in meta:
        tag = child.tag
        value = child.text
        if value is None:
            continue
        if tag == _DC_CREATOR:
            author = _dc_name(value)
            if author:
                authors.append(author)
        elif tag == _DC_SUBJECT:
            subjects.append(value)
        elif tag == _DC_DESCRIPTION:
            stripped = value.strip()
            if stripped.startswith("Comment:"):
                comment = comment or stripped[len("Comment:") :].strip()
            elif abstract is None:
                abstract = value
        elif tag == _DC_DATE:
            dates.append(value.strip())
        elif tag == _DC_IDENTIFIER:
            ident = value.strip()
            url = _ABS_URL.match(ident)
            if url:
                fields.setdefault("id", url[1])
            elif ident[:4].lower() == "doi:":
                fields.setdefault("doi", ident[4:].strip())
            elif not ident.lower().startswith(("http://", "https://")):
                fields.setdefault("journal_ref", ident)  # arXiv puts the journal reference here
        elif tag == _DC_TITLE:
            fields.setdefault("title", value)
        elif tag == _DC_RIGHTS and value.strip().lower().startswith(("http://", "https://")):
            fields.setdefault("license", value.strip())
    fields["authors"] = authors
    fields["abstract"] = abstract
    fields["comment"] = comment
    fields["categories"] = _dc_categories(subjects, header.sets)
    if dates:
        fields["published"] = dates[0]
        fields["updated"] = dates[-1]
    fields.setdefault("id", header.identifier)
    return fields


def _dc_categories(subjects: list[str], sets: tuple[str, ...]) -> list[str]:
    """Map subject names to codes, primary first; fall back to the archive for an unknown primary."""
    codes: list[str] = []
    for i, subject in enumerate(subjects):
        code = subject_category(subject)
        if code is None and i == 0:
            code = archive_of_subject(subject) or next((a for a in map(archive_of_set_spec, sets) if a), None)
        if code and code not in codes:
            codes.append(code)
    if not codes:
        codes = [a for a in map(archive_of_set_spec, sets) if a][:1]
    return codes


_PARSERS: dict[str, Callable[[Any, OaiHeader], dict[str, Any]]] = {
    f"{{{ARXIV}}}arXiv": _arxiv_fields,
    f"{{{ARXIV_RAW}}}arXivRaw": _arxiv_raw_fields,
    f"{{{OAI_DC}}}dc": _oai_dc_fields,
}


# -- page parsing ---------------------------------------------------------------------------------


def _header(el: Any) -> OaiHeader:
    ident = el.findtext(_T_IDENT)
    return OaiHeader(
        identifier=(ident or "").strip(),
        datestamp=(el.findtext(_T_DATESTAMP) or "").strip() or None,
        sets=tuple((s.text or "").strip() for s in el.iterfind(_T_SETSPEC)),
        deleted=el.get("status") == "deleted",
    )


def _int(value: str | None) -> int | None:
    return int(value) if value and value.strip().isdigit() else None


@dataclass
class _PageBuilder:
    source: str
    seen_at: datetime
    label: str
    page: OaiPage = field(default_factory=OaiPage)

    def stamp(self, datestamp: str | None) -> None:
        if datestamp and (self.page.max_datestamp is None or datestamp > self.page.max_datestamp):
            self.page.max_datestamp = datestamp

    def on_element(self, el: Any) -> None:
        tag = el.tag
        if tag == _T_RECORD:
            self.page.records += 1
            self.record(el)
            self.free(el)
        elif tag == _T_HEADER:
            parent = el.getparent()
            if parent is not None and parent.tag == _T_LIST_IDS:
                header = _header(el)
                self.page.headers.append(header)
                self.stamp(header.datestamp)
                self.free(el)
        elif tag == _T_TOKEN:
            token = (el.text or "").strip() or None
            self.page.resumption = ResumptionToken(
                token, _int(el.get("cursor")), _int(el.get("completeListSize"))
            )
        elif tag == _T_ERROR:
            self.page.errors.append(OaiError(el.get("code") or "unknown", " ".join((el.text or "").split())))
        elif tag == _T_REQUEST:
            self.page.verb = el.get("verb")

    @staticmethod
    def free(el: Any) -> None:
        el.clear(keep_tail=True)
        parent = el.getparent()
        if parent is not None:
            while el.getprevious() is not None:
                del parent[0]

    def record(self, el: Any) -> None:
        header_el = el.find(_T_HEADER)
        if header_el is None:
            self.page.rejects.append(
                Reject(f"{self.label} record {self.page.records}", "record without a header", "header")
            )
            return
        header = _header(header_el)
        where = header.identifier or f"{self.label} record {self.page.records}"
        self.stamp(header.datestamp)
        if header.deleted:
            self.page.deleted.append(header.identifier)
            return
        meta_el = el.find(_T_METADATA)
        payload = None
        if meta_el is not None:
            payload = next((c for c in meta_el if isinstance(c.tag, str)), None)
        if payload is None:
            self.page.rejects.append(Reject(where, "record has no metadata", "metadata"))
            return
        parser = _PARSERS.get(payload.tag)
        if parser is None:
            self.page.rejects.append(
                Reject(where, f"unsupported metadata format <{payload.tag}>", "metadata")
            )
            return
        try:
            fields = parser(payload, header)
            paper = build_paper(fields, source=self.source, seen_at=self.seen_at)
        except InvalidRecord as exc:
            self.page.rejects.append(Reject(where, exc.reason, exc.field))
            return
        self.page.papers.append(paper)


_TAGS = [_T_RECORD, _T_HEADER, _T_TOKEN, _T_ERROR, _T_REQUEST]


def _parse(data: bytes, builder: _PageBuilder, *, recover: bool) -> Any:
    parser = etree.XMLPullParser(
        events=("end",),
        tag=_TAGS,
        recover=recover,
        no_network=True,
        resolve_entities=False,
        load_dtd=False,
        huge_tree=False,
    )
    view = memoryview(data)
    for start in range(0, len(data), _CHUNK):
        parser.feed(bytes(view[start : start + _CHUNK]))
        for _event, el in parser.read_events():
            builder.on_element(el)
    root = parser.close()
    for _event, el in parser.read_events():
        builder.on_element(el)
    return root


def parse_page(
    data: bytes, *, source: str = SOURCE, seen_at: datetime | None = None, label: str = "OAI-PMH page"
) -> OaiPage:
    """Parse one OAI-PMH response body into papers, rejects, deleted ids, headers and the next token.

    A page that is not well-formed XML is parsed again in lxml's recovery mode so one broken record
    cannot wedge a harvest forever; the page then carries a reject saying so (``recovered``). A body
    that is not OAI-PMH at all raises :class:`OaiProtocolError`.
    """
    when = seen_at or datetime.now(UTC)
    builder = _PageBuilder(source, when, label)
    try:
        root = _parse(data, builder, recover=False)
    except etree.XMLSyntaxError as exc:
        first_error = f"line {exc.lineno}: {exc.msg}" if exc.lineno else str(exc)
        builder = _PageBuilder(source, when, label)
        try:
            root = _parse(data, builder, recover=True)
        except etree.XMLSyntaxError:
            root = None
        if root is None or root.tag != f"{{{OAI}}}OAI-PMH":
            raise OaiProtocolError(f"{label}: not well-formed XML ({first_error})") from None
        builder.page.recovered = True
        builder.page.rejects.append(
            Reject(label, f"malformed XML ({first_error}); read in recovery mode, records may be missing")
        )
    if root is None or root.tag != f"{{{OAI}}}OAI-PMH":
        found = "nothing" if root is None else f"<{_local(str(root.tag))}>"
        raise OaiProtocolError(f"{label}: not an OAI-PMH response (root element is {found})")
    return builder.page


# -- requests and paging --------------------------------------------------------------------------


def list_params(
    verb: str,
    metadata_prefix: str,
    *,
    from_date: str | None = None,
    until: str | None = None,
    set_spec: str | None = None,
) -> dict[str, str]:
    """Query parameters that start a ``ListRecords``/``ListIdentifiers`` list."""
    params = {"verb": verb, "metadataPrefix": metadata_prefix}
    if from_date:
        params["from"] = from_date
    if until:
        params["until"] = until
    if set_spec:
        params["set"] = set_spec
    return params


def fetch_page(
    http: PoliteClient,
    endpoint: str,
    params: Mapping[str, str],
    *,
    source: str = SOURCE,
    seen_at: datetime | None = None,
) -> OaiPage:
    """GET and parse one page. ``noRecordsMatch`` is an empty last page; other OAI errors raise.

    Raises :class:`OaiError` for protocol errors (bad argument, expired token…),
    :class:`~paperfeed.adapters.sources.http.SourceUnavailable` when the endpoint cannot be reached.
    """
    # Some OAI-PMH servers send protocol errors with a 4xx status; read the body to find out which.
    response = http.get(endpoint, params, ok_statuses=frozenset({400, 404, 422}))
    where = params.get("resumptionToken")
    label = f"{endpoint} ({'resumptionToken=' + where if where else params.get('verb', '?')})"
    try:
        page = parse_page(response.content, source=source, seen_at=seen_at, label=label)
    except OaiProtocolError as exc:
        status = f"HTTP {response.status_code}: " if response.status_code != 200 else ""
        raise OaiProtocolError(f"{status}{exc}") from None
    for error in page.errors:
        if error.code != "noRecordsMatch":
            raise error
    if page.errors:  # only noRecordsMatch: an empty, complete list
        page.resumption = ResumptionToken(None)
    return page
