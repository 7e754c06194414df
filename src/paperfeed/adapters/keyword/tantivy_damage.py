"""Damage detection for tantivy's files: the footer checksums tantivy writes but never verifies.

A damaged segment file (a disk that filled up mid-commit, a bad copy) makes tantivy panic in a query or,
worse, in its writer's merge threads, which aborts the whole process; the index is derived data, so
:class:`~paperfeed.adapters.keyword.tantivy_index.TantivyKeywordIndex` rebuilds it instead, and
``paperfeed check`` reports it.
"""

from __future__ import annotations

import json
import os
import struct
import uuid
import zlib
from pathlib import Path

__all__ = ["damaged_files", "tantivy_failure"]


def tantivy_failure(exc: BaseException) -> bool:
    """How tantivy reports damaged files: a ValueError, or a Rust panic, which pyo3 raises as
    ``pyo3_runtime.PanicException``, a BaseException (so ``except Exception`` does not see it)."""
    return isinstance(exc, ValueError) or type(exc).__name__ == "PanicException"


# tantivy's file footer: <body> <JSON {"version": ..., "crc": CRC32(body)}> <u32 JSON length> <u32 magic>
_FOOTER_MAGIC = 1337


def _file_problem(file: Path) -> str | None:
    """Why a segment file fails tantivy's own footer check (magic number, CRC32 of the body), or None.

    tantivy writes the checksum but never verifies it when opening; damaged postings then panic in a
    query (catchable) or, worse, in the writer's merge threads, which aborts the whole process.
    """
    with file.open("rb") as fh:
        size = fh.seek(0, os.SEEK_END)
        if size < 8:
            return "shorter than tantivy's footer"
        fh.seek(size - 8)
        length, magic = struct.unpack("<II", fh.read(8))
        if magic != _FOOTER_MAGIC or length + 8 > size:
            return "no tantivy footer"
        fh.seek(size - 8 - length)
        try:
            expected = json.loads(fh.read(length))["crc"]
        except (ValueError, KeyError, TypeError):
            return "unreadable footer"
        fh.seek(0)
        remaining, crc = size - 8 - length, 0
        while remaining > 0:
            chunk = fh.read(min(1 << 20, remaining))
            if not chunk:
                break
            crc = zlib.crc32(chunk, crc)
            remaining -= len(chunk)
        return None if crc == expected else "checksum mismatch"


_CHECKED = "checked.json"  # segment files whose checksum held: name -> [size, mtime_ns]


def damaged_files(path: Path, *, trust_checked: bool = True) -> list[str]:
    """Problems with the files of the index committed in ``path`` (empty: all check out, or no index).

    Reading every segment file costs ~0.1 s for the 96 MB index of 200k papers and ~0.6 s at 1M (1 GB,
    page cache warm), so files that passed before, unchanged since (size and mtime, in ``checked.json``;
    segment files are never rewritten), are skipped unless ``trust_checked`` is False (``paperfeed
    check``). A segment merged away by another process meanwhile is not damage: the listing is re-read.
    """
    checked: dict[str, list[int]] = {}
    if trust_checked:
        try:
            loaded = json.loads((path / _CHECKED).read_text())
            checked = loaded if isinstance(loaded, dict) else {}
        except (OSError, ValueError):
            pass
    passed: dict[str, list[int]] = {}
    problems: list[str] = []
    for _attempt in range(3):
        try:
            meta_text = (path / "meta.json").read_text()
        except FileNotFoundError:
            return []
        except (OSError, ValueError) as exc:
            return [f"meta.json: {exc}"]
        try:
            segments = json.loads(meta_text)["segments"]
            names = os.listdir(path)
            problems = []
            for segment in segments:
                prefix = str(segment["segment_id"]).replace("-", "")
                deletes = segment.get("deletes")
                wanted = f"{prefix}.{deletes['opstamp']}.del" if deletes else None
                for name in names:
                    if not name.startswith(prefix + ".") or (name.endswith(".del") and name != wanted):
                        continue
                    try:
                        stat = (path / name).stat()
                        seen = [stat.st_size, stat.st_mtime_ns]
                        problem = None if checked.get(name) == seen else _file_problem(path / name)
                    except FileNotFoundError:
                        problem = "missing"
                    if problem:
                        problems.append(f"{name}: {problem}")
                    else:
                        passed[name] = seen
        except (ValueError, KeyError, TypeError) as exc:
            return [f"meta.json: unreadable ({exc})"]
        try:
            unchanged = (path / "meta.json").read_text() == meta_text
        except OSError:
            unchanged = False
        if not problems or unchanged:
            break
    if trust_checked and not problems and passed != checked:
        tmp = path / f"{_CHECKED}.{os.getpid()}.{uuid.uuid4().hex[:12]}.tmp"  # unique: see the writer's state
        try:
            tmp.write_text(json.dumps(passed))
            os.replace(tmp, path / _CHECKED)
        except OSError:
            pass  # a read-only folder: check again next time
    return problems
