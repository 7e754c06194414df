"""OAI-PMH page parsing speed: a real 2.4 MB page of 1,000 arXiv records, against arXiv's 3 s pacing.

A harvest asks arXiv for one page every 3 s, so parsing must stay far below that or it slows the
harvest. Prints the best of ``--repeat`` parses as records per second and as a share of the pacing,
with the CPU (the test suite only checks that the page parses, never how fast).

    .venv/bin/python -m bench.oai_parse [--repeat 5]
"""

from __future__ import annotations

import argparse
import os
import platform
import time
from pathlib import Path

from bench.sentence_roles import cpu_flags
from paperfeed.adapters.sources.oai_pmh import parse_page

PAGE = (
    Path(__file__).resolve().parents[2]
    / "shared/fixtures/oai_pmh/oai_dc_2023_SciXHarvester/ListRecords_data_0.xml"
)
PACING_SECONDS = 3.0  # arXiv's requested interval between requests


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5, help="parses; the best is reported")
    args = parser.parse_args()
    data = PAGE.read_bytes()
    times: list[float] = []
    records = 0
    for _ in range(max(1, args.repeat)):
        started = time.perf_counter()
        page = parse_page(data)
        times.append(time.perf_counter() - started)
        records = page.records
    best = min(times)
    print(f"CPU: {platform.machine()}, {os.cpu_count()} cores, {cpu_flags()}")
    print(f"page: {len(data) / 1e6:.1f} MB, {records} records")
    print(
        f"best of {len(times)}: {best:.3f} s, {records / best:,.0f} records/s, "
        f"{best / PACING_SECONDS:.1%} of arXiv's {PACING_SECONDS:g} s pacing"
    )


if __name__ == "__main__":
    main()
