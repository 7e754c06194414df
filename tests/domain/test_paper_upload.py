"""Telling an uploaded file's kind from its content, and the name it is called by."""

from __future__ import annotations

import gzip

import pytest

from paperfeed.domain.paper_upload import UnsupportedUpload, detect_upload_kind, upload_name


@pytest.mark.parametrize(
    ("head", "expected"),
    [
        (b'{"id": "2401.00001"}\n', ("jsonl", False)),
        (b'\xef\xbb\xbf\n  {"id": "2401.00001"}', ("jsonl", False)),
        (gzip.compress(b'{"id": "2401.00001"}\n', mtime=0), ("jsonl", True)),
        (b"% Encoding: UTF-8\n\n@Misc{key,\n title={x}}", ("bibtex", False)),
        (b"@article (key, title = {x})", ("bibtex", False)),
        (gzip.compress(b"@misc{k, title={x}}", mtime=0), ("bibtex", True)),
    ],
)
def test_kinds_are_told_by_content(head: bytes, expected: tuple[str, bool]) -> None:
    assert detect_upload_kind("whatever.txt", head) == expected


def test_a_cut_gzip_head_is_still_read() -> None:
    whole = gzip.compress(b'{"id": "2401.00001", "title": "x"}\n' * 50_000)
    assert detect_upload_kind("big.jsonl.gz", whole[:4096]) == ("jsonl", True)


@pytest.mark.parametrize(
    ("head", "said"),
    [
        (b"", "it is empty"),
        (b"   \n", "it is empty"),
        (b"%PDF-1.5", "it is a PDF"),
        (b"[1, 2]", "it starts with '[1, 2]'"),
        (b"\x00\x01binary", "it starts with '??binary'"),
        (b"title: @misc", "it starts with 'title: @misc'"),  # an @ not at a line's start is no entry
    ],
)
def test_anything_else_is_refused_saying_what_it_looked_like(head: bytes, said: str) -> None:
    with pytest.raises(UnsupportedUpload) as caught:
        detect_upload_kind("x.jsonl", head)
    assert str(caught.value).startswith(f"x.jsonl: not a JSONL or BibTeX file ({said})")


@pytest.mark.parametrize(
    ("sent", "name"),
    [
        ("papers.jsonl.gz", "papers.jsonl.gz"),
        ("C:\\Users\\ada\\papers.jsonl", "papers.jsonl"),
        ("../../etc/passwd", "passwd"),
        ("a\x00b\r\nc.bib", "a_b_c.bib"),
        ("..", "upload"),
        ("", "upload"),
        (None, "upload"),
        ("x" * 300 + ".jsonl", "x" * 100),
    ],
)
def test_upload_names(sent: str | None, name: str) -> None:
    assert upload_name(sent) == name
