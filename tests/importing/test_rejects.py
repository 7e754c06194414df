"""Security issue #12, finding 4: ``--rejects FILE`` kept only the first 1,000 rejects (its help says
"every"); on a truncated gzip with many rejects the closing reason (where the file breaks off) was in
neither the console (first 20 only) nor the file; a UTF-8 BOM on line 1 rejected that record."""

from __future__ import annotations

import gzip
import zlib
from pathlib import Path

import orjson

from paperfeed.adapters.store import open_store

from .conftest import RunCli, rec, write_jsonl

BOM = b"\xef\xbb\xbf"
BAD = 1_500  # more than the 1,000 the summary kept


def _rejects(path: Path) -> list[dict[str, str | None]]:
    return [orjson.loads(line) for line in path.read_bytes().splitlines()]


def _papers(data_dir: Path) -> int:
    store = open_store(f"sqlite+pysqlite:///{data_dir / 'paperfeed.db'}")
    try:
        return store.stats().papers
    finally:
        store.close()


def test_the_rejects_file_has_every_reject(cli: RunCli, tmp_path: Path, data_dir: Path) -> None:
    lines = [rec(f"2503.{i:05d}", title=None) for i in range(1, BAD + 1)] + [rec("2504.00001")]
    f = write_jsonl(tmp_path / "bad.jsonl", lines)
    out = tmp_path / "rejects.jsonl"
    result = cli("import", str(f), "--rejects", str(out))
    assert result.exit_code == 1
    got = _rejects(out)
    assert len(got) == BAD
    assert [r["where"] for r in got] == [f"{f}:{n} (id 2503.{n:05d})" for n in range(1, BAD + 1)]
    assert {r["field"] for r in got} == {"title"}
    assert f"{BAD:,} records rejected" in " ".join(result.output.split())
    assert _papers(data_dir) == 1


def test_a_truncated_gzip_says_so_on_the_console_and_in_the_file(
    cli: RunCli, tmp_path: Path, data_dir: Path
) -> None:
    bad = [rec(f"2503.{i:05d}", title=None) for i in range(1, BAD + 1)]
    good = [rec(f"2504.{i:05d}", abstract=f"text {i} " * 50) for i in range(1, 3001)]
    whole = write_jsonl(tmp_path / "whole.jsonl.gz", bad + good, gz=True)
    cut = tmp_path / "cut.jsonl.gz"
    cut.write_bytes(whole.read_bytes()[: whole.stat().st_size * 3 // 4])
    out = tmp_path / "rejects.jsonl"
    result = cli("import", str(cut), "--rejects", str(out), "--keep-going")
    assert result.exit_code == 1  # a file not read to its end fails the import, --keep-going or not
    line = zlib.decompressobj(wbits=31).decompress(cut.read_bytes()).count(b"\n") + 1  # where it breaks
    said = " ".join(result.output.split())
    assert f"{cut}:{line}: the file ends early here (a truncated gzip" in said  # file:line (issue #40)
    assert f"the valid records of lines 1–{line - 1:,} are imported, nothing from line {line:,} on" in said
    got = _rejects(out)
    assert len(got) == BAD + 1
    assert got[-1]["where"] == f"{cut}:{line}"
    assert str(got[-1]["reason"]).startswith("the file ends early here")
    assert _papers(data_dir) == line - 1 - BAD  # every valid record before the break, nothing of its line


def test_a_byte_order_mark_on_line_one_is_accepted(cli: RunCli, tmp_path: Path, data_dir: Path) -> None:
    plain = tmp_path / "bom.jsonl"
    plain.write_bytes(BOM + orjson.dumps(rec("2503.00001")) + b"\n" + orjson.dumps(rec("2503.00002")) + b"\n")
    zipped = tmp_path / "bom.jsonl.gz"
    zipped.write_bytes(gzip.compress(BOM + orjson.dumps(rec("2503.00003")) + b"\n"))
    result = cli("import", str(plain), str(zipped), "--rejects", str(tmp_path / "r.jsonl"))
    assert result.exit_code == 0, result.output
    assert _rejects(tmp_path / "r.jsonl") == []
    assert _papers(data_dir) == 3


def test_a_byte_order_mark_elsewhere_is_still_a_reject(cli: RunCli, tmp_path: Path) -> None:
    f = tmp_path / "mid.jsonl"
    f.write_bytes(orjson.dumps(rec("2503.00001")) + b"\n" + BOM + orjson.dumps(rec("2503.00002")) + b"\n")
    result = cli("import", str(f), "--rejects", str(tmp_path / "r.jsonl"))
    assert result.exit_code == 1
    assert [r["where"] for r in _rejects(tmp_path / "r.jsonl")] == [f"{f}:2"]


def test_a_truncated_bibtex_gzip_says_where_and_imports_nothing(
    cli: RunCli, tmp_path: Path, data_dir: Path
) -> None:
    """A BibTeX file is parsed whole (the break may cut an entry in two): nothing of it is imported, and the
    reject names the line the file broke off in."""
    entries = "".join(
        f"@misc{{k{i},\n  title = {{A study {i}}},\n  author = {{Lovelace, Ada}},\n"
        f"  eprint = {{2503.{i:05d}}},\n"
        f"  archivePrefix = {{arXiv}},\n  year = {{2025}},\n  note = {{{'words ' * 40}}}\n}}\n\n"
        for i in range(1, 400)
    ).encode()
    whole = gzip.compress(entries)
    cut = tmp_path / "refs.bib.gz"
    cut.write_bytes(whole[: len(whole) // 2])
    line = zlib.decompressobj(wbits=31).decompress(cut.read_bytes()).count(b"\n") + 1
    result = cli("import", str(cut), "--keep-going")
    assert result.exit_code == 1
    said = " ".join(result.output.split())
    assert (
        f"{cut}:{line}: the file ends early (a truncated gzip) in line {line:,}: "
        "nothing of the file is imported" in said
    )
    assert _papers(data_dir) == 0
