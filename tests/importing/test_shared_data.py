"""Import the real Hugging Face daily papers file from ../shared and check every record arrived."""

from __future__ import annotations

import gzip
from datetime import date
from pathlib import Path

import orjson

from paperfeed.adapters.sources.jsonl_file import JsonlFileSource
from paperfeed.adapters.store import SqlPaperStore
from paperfeed.services.ingest import IngestService
from tests.support.defaults import DEFAULTS


def _lines(path: Path) -> list[bytes]:
    with gzip.open(path) as fh:
        return fh.read().splitlines()


def test_hf_daily_file_imports_completely(shared_dir: Path, store: SqlPaperStore) -> None:
    path = shared_dir / "data" / "hf_daily.jsonl.gz"
    rows = [orjson.loads(line) for line in _lines(path)]
    listing_keys = {
        (d, r["id"])
        for r in rows
        for d in (r.get("daily_dates") or ([r["daily_date"]] if r.get("daily_date") else []))
    }
    summary = IngestService(store).run(JsonlFileSource(path, batch_size=DEFAULTS.batch_size))
    assert summary.rejected == 0, summary.rejects[:3]
    assert summary.added == len({r["id"] for r in rows}) == 10_629
    stats = store.stats()
    assert stats.papers == 10_629
    assert stats.listings == len(listing_keys)
    sample = rows[800]
    paper = store.get_paper(sample["id"])
    assert paper is not None
    assert paper.title == " ".join(sample["title"].split())
    assert list(paper.authors) == sample["authors"]
    assert paper.upvotes == sample["upvotes"]
    day = date.fromisoformat(sample["daily_date"])
    assert sample["id"] in {x.paper_id for x in store.listings_for_day(day, "hf-daily")}
    again = IngestService(store).run(JsonlFileSource(path, batch_size=DEFAULTS.batch_size))
    assert (again.added, again.updated, again.unchanged) == (0, 0, 10_629)


def test_arxiv_sample_and_categories_merge(shared_dir: Path, store: SqlPaperStore, tmp_path: Path) -> None:
    """Papers in both hf_daily and arxiv_cats keep HF's upvotes and gain arXiv's categories."""
    hf = {
        r["id"]: line
        for line in _lines(shared_dir / "data" / "hf_daily.jsonl.gz")
        for r in [orjson.loads(line)]
    }
    pairs: list[tuple[bytes, bytes]] = []
    for line in _lines(shared_dir / "data" / "arxiv_cats.jsonl.gz"):
        r = orjson.loads(line)
        if r["id"] in hf and orjson.loads(hf[r["id"]]).get("upvotes"):
            pairs.append((hf[r["id"]], line))
            if len(pairs) == 50:
                break
    assert len(pairs) == 50
    (tmp_path / "hf_daily.jsonl").write_bytes(b"\n".join(h for h, _ in pairs))
    (tmp_path / "arxiv_cats.jsonl").write_bytes(b"\n".join(c for _, c in pairs))
    service = IngestService(store)
    service.run(JsonlFileSource(tmp_path / "arxiv_cats.jsonl", batch_size=DEFAULTS.batch_size))
    service.run(JsonlFileSource(tmp_path / "hf_daily.jsonl", batch_size=DEFAULTS.batch_size))
    for h_line, c_line in pairs:
        h, c = orjson.loads(h_line), orjson.loads(c_line)
        paper = store.get_paper(h["id"])
        assert paper is not None
        assert paper.upvotes == h["upvotes"]
        assert list(paper.categories) == c["categories"]
        assert set(paper.sources) == {"file:arxiv_cats.jsonl"}  # the file that first brought it (#40 item 3)
