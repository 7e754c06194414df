"""Import speed: all real papers of ../shared/data into a fresh store, then the same files again.

Prints papers/s for the first import and the re-import, and the peak RSS. Uses the composition root,
so whatever the CLI wires into an import (keyword index listeners, triggers) is measured too, and the
clock stops only when the keyword index has caught up (every imported paper is searchable).

    .venv/bin/python bench/import_speed.py [--data-dir DIR] [--files F ...]
"""

from __future__ import annotations

import argparse
import resource
import shutil
import tempfile
import time
from pathlib import Path

from paperfeed.adapters.sources.jsonl_file import JsonlFileSource
from paperfeed.bootstrap import build_app
from paperfeed.domain.ingest import IngestSummary
from paperfeed.settings import Settings

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data"
FILES = ["hf_daily.jsonl.gz", "arxiv_cats.jsonl.gz", "arxiv_oai_2007_2017_sample100k.jsonl.gz"]


def _run(app_dir: Path, files: list[Path], workers: int) -> tuple[IngestSummary, float]:
    app = build_app(Settings(data_dir=app_dir))
    try:
        summary = IngestSummary()
        started = time.perf_counter()
        for path in files:
            source = JsonlFileSource(path, batch_size=app.settings.batch_size)  # as the CLI does
            app.sources.ingest.run(source, summary=summary, workers=workers)
        app.indexes.keyword.flush()  # the import counts as done once every paper is searchable by keyword
        return summary, time.perf_counter() - started
    finally:
        app.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument(
        "--data-dir", type=Path, default=None, help="where to build the store (default: temp)"
    )
    parser.add_argument("--files", type=Path, nargs="*", default=[SHARED / f for f in FILES])
    parser.add_argument("--workers", type=int, default=1, help="validation worker processes (0: none)")
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="pf-bench-import-")) if args.data_dir is None else args.data_dir
    if args.data_dir is not None and args.data_dir.exists():
        shutil.rmtree(args.data_dir)
    try:
        first, t1 = _run(tmp, args.files, args.workers)
        again, t2 = _run(tmp, args.files, args.workers)
        rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        db = tmp / "paperfeed.db"
        print(f"files: {', '.join(p.name for p in args.files)}; validation workers: {args.workers}")
        print(
            f"first import : {first.seen:>8,} records in {t1:6.1f} s = {first.seen / t1:>8,.0f} papers/s "
            f"(added {first.added:,}, updated {first.updated:,}, rejected {first.rejected:,})"
        )
        print(
            f"re-import    : {again.seen:>8,} records in {t2:6.1f} s = {again.seen / t2:>8,.0f} papers/s "
            f"(added {again.added:,}, updated {again.updated:,}, unchanged {again.unchanged:,})"
        )
        print(f"peak RSS     : {rss_mb:,.0f} MB")
        print(f"database     : {db.stat().st_size / 2**20:,.0f} MB")
    finally:
        if args.data_dir is None:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
