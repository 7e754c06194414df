"""A BibTeX file as a source of papers (an administrator's upload), read offline from the entries alone.

Unlike a reader's library import (:mod:`.bibliography` + ``services/library_import.py``), which only
needs each entry's arXiv id and fetches the paper from arXiv, this builds each paper from what the entry
itself says, so it works without a network: the arXiv id (``eprint``, an arXiv DOI or URL, as
:func:`~.bibliography.find_arxiv_id` finds it), ``title``, ``author``, ``abstract``, ``primaryClass``,
``doi``, ``journal`` and a full ``date`` (``YYYY-MM-DD``). A bare ``year`` is not made into a
publication date: merging keeps the earliest date ever seen, so a guessed 1 January would overwrite
the real one.

Every entry that cannot become a paper is a reject naming ``file:line (key)`` and why, exactly like a
bad line of a JSONL import: broken BibTeX syntax, a duplicate key, no arXiv id, no title. The other
entries are imported. LaTeX in values is turned into text (accents, ``\\&``, dashes), math between
``$`` is kept as TeX (pages render it).
"""

from __future__ import annotations

import gzip
import re
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bibtexparser.entrypoint import parse_string as parse_bibtex_string
from bibtexparser.model import DuplicateBlockKeyBlock
from pylatexenc.latex2text import LatexNodes2Text

from paperfeed.domain.ingest import Batch, Reject
from paperfeed.domain.library import MAX_FILE_BYTES
from paperfeed.domain.validation import InvalidRecord, build_paper
from paperfeed.domain.wording import count

from .bibliography import find_arxiv_id

__all__ = ["BibtexPaperSource", "split_authors"]

_AND = re.compile(r"\s+and\s+", re.IGNORECASE)
_CATEGORY = re.compile(r"[a-z-]+(\.[A-Za-z-]+)?")
_FULL_DATE = re.compile(r"\d{4}-\d{2}-\d{2}([T ][0-9:.+\-Z]*)?")
_ENTRY_KEY = re.compile(r"@\w+\s*[{(]\s*([^,\s]+)")
_ID_PLACES = "looked for in eprint, an arXiv DOI or URL, and 'arXiv:<id>' in journal or note"


def _top_level_split(text: str, pattern: re.Pattern[str]) -> list[str]:
    """``text`` split at ``pattern`` where it is not inside braces (``{Barnes and Noble}`` stays whole)."""
    parts: list[str] = []
    depth, start, i = 0, 0, 0
    while i < len(text):
        ch = text[i]
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth = max(0, depth - 1)
        elif depth == 0:
            found = pattern.match(text, i)
            if found:
                parts.append(text[start:i])
                start = i = found.end()
                continue
        i += 1
    parts.append(text[start:])
    return [p for p in (part.strip() for part in parts) if p]


def split_authors(value: str) -> list[str]:
    """BibTeX's ``A and B`` author list as names in reading order (``Last, First`` -> ``First Last``);
    ``others`` (et al.) is dropped."""
    names = []
    for raw in _top_level_split(value, _AND):
        if raw.lower() == "others":
            continue
        pieces = _top_level_split(raw, re.compile(r"\s*,\s*"))
        if len(pieces) == 2:  # Last, First
            raw = f"{pieces[1]} {pieces[0]}"
        elif len(pieces) == 3:  # Last, Jr, First
            raw = f"{pieces[2]} {pieces[0]} {pieces[1]}"
        names.append(raw)
    return names


@dataclass
class BibtexPaperSource:
    """A BibTeX file (plain or gzip) as a :class:`~paperfeed.domain.ports.PaperSource`.

    ``label`` names the file in rejects (an upload is read from a temporary copy); the whole file is
    read at once, so at most :data:`~paperfeed.domain.library.MAX_FILE_BYTES` of text.
    """

    path: Path
    batch_size: int  # PAPERFEED_BATCH_SIZE
    label: str | None = None
    now: datetime = field(default_factory=lambda: datetime.now(UTC))
    _latex: LatexNodes2Text = field(
        default_factory=lambda: LatexNodes2Text(math_mode="verbatim", strict_latex_spaces=True),
        init=False,
        repr=False,
    )

    @property
    def name(self) -> str:
        return f"file:{Path(self.label or self.path.name).name}"

    @property
    def checkpoint_name(self) -> str | None:
        return None  # re-reading a file is cheap and merging is idempotent

    def _read(self, label: str) -> tuple[str | None, Reject | None]:
        """The file's text, or the fatal reject saying why not and where: a BibTeX file is parsed whole
        (an entry may span the point where a truncated gzip breaks off), so a broken one imports nothing."""
        got = bytearray()
        try:
            with self.path.open("rb") as raw:
                gzipped = raw.read(2) == b"\x1f\x8b"
                raw.seek(0)
                stream = gzip.GzipFile(fileobj=raw) if gzipped else raw
                while len(got) <= MAX_FILE_BYTES:  # in pieces, so a break still says where it was
                    piece = stream.read1(1 << 20)
                    if not piece:
                        break
                    got += piece
        except (OSError, EOFError, zlib.error) as exc:
            line = got.count(b"\n") + 1
            truncated = isinstance(exc, EOFError)
            what = (
                "the file ends early (a truncated gzip)" if truncated else f"the file is unreadable ({exc})"
            )
            return None, Reject(
                f"{label}:{line}", f"{what} in line {line:,}: nothing of the file is imported", fatal=True
            )
        data = bytes(got)
        if len(data) > MAX_FILE_BYTES:
            return None, Reject(
                label, f"a BibTeX file may hold at most {count(MAX_FILE_BYTES, 'byte')} of text", fatal=True
            )
        try:
            return data.decode("utf-8-sig"), None
        except UnicodeDecodeError as exc:
            line = data[: exc.start].count(b"\n") + 1
            return None, Reject(
                f"{label}:{line}", f"not UTF-8 text (byte 0x{data[exc.start]:02x})", fatal=True
            )

    def batches(self, resume_from: str | None = None) -> Iterator[Batch]:
        label = self.label or str(self.path)
        text, problem = self._read(label)
        if text is None:
            yield Batch(rejects=[problem] if problem else [], total=1, position=1)
            return
        library = parse_bibtex_string(text)
        found: list[tuple[int, dict[str, Any] | Reject]] = []
        for block in library.failed_blocks:
            line = (block.start_line or 0) + 1
            key = _ENTRY_KEY.match(block.raw or "")
            where = f"{label}:{line}" + (f" ({key[1]})" if key else "")
            if isinstance(block, DuplicateBlockKeyBlock):
                found.append((line, Reject(f"{label}:{line} ({block.key})", "duplicate entry key", "key")))
                continue
            reason = (
                getattr(block.error, "abort_reason", None) or str(block.error) or type(block.error).__name__
            )
            found.append((line, Reject(where, f"invalid BibTeX: {' '.join(str(reason).split())[:200]}")))
        for entry in library.entries:
            line = (entry.start_line or 0) + 1
            where = f"{label}:{line} ({entry.key})"
            values = {
                f.key.lower(): f.value if isinstance(f.value, str) else str(f.value) for f in entry.fields
            }
            found.append((line, self._paper_fields(where, values)))
        found.sort(key=lambda pair: pair[0])
        total = max(1, len(found))
        batch = Batch(total=total)
        for done, (_, item) in enumerate(found, start=1):
            if isinstance(item, Reject):
                batch.rejects.append(item)
            else:
                where = item.pop("_where")
                try:
                    batch.papers.append(build_paper(item, source=self.name, seen_at=self.now))
                except InvalidRecord as exc:
                    batch.rejects.append(Reject(f"{where} (id {item['id']})", exc.reason, exc.field))
            if len(batch.papers) + len(batch.rejects) >= self.batch_size:
                batch.position = done
                yield batch
                batch = Batch(total=total)
        batch.position = total
        yield batch

    def _text(self, value: str | None) -> str | None:
        if value is None:
            return None
        return " ".join(self._latex.latex_to_text(value).split()) or None

    def _paper_fields(self, where: str, values: dict[str, str]) -> dict[str, Any] | Reject:
        """The fields :func:`build_paper` takes, or the reject saying why this entry is not a paper."""
        plain = {k: " ".join(v.replace("{", "").replace("}", "").split()) for k, v in values.items()}
        arxiv_id = find_arxiv_id(plain)
        if arxiv_id is None:
            return Reject(where, f"no arXiv id ({_ID_PLACES})", "id")
        fields: dict[str, Any] = {
            "_where": where,
            "id": arxiv_id,
            "title": self._text(values.get("title")),
            "abstract": self._text(values.get("abstract")),
            "authors": [a for a in (self._text(n) for n in split_authors(values.get("author", ""))) if a],
            "doi": plain.get("doi") or None,
        }
        journal = values.get("journal", "")
        if journal and "arxiv" not in journal.lower():  # "arXiv preprint arXiv:…" is no journal reference
            fields["journal_ref"] = self._text(journal)
        category = plain.get("primaryclass", "")
        if _CATEGORY.fullmatch(category):
            fields["categories"] = [category]
        day = plain.get("date", "")
        if _FULL_DATE.fullmatch(day):
            fields["published"] = day[:10]
        return fields
