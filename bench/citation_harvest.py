"""Citation harvest rate: ``paperfeed harvest citations`` (the service behind it, wired by bootstrap) for N
papers against Semantic Scholar's recorded answers on loopback, with the politeness delay set to 0.

    .venv/bin/python -m bench.citation_harvest                 # 200 papers
    .venv/bin/python -m bench.citation_harvest --papers 1000

Every batch lookup (25 arXiv ids a POST) is answered with the recorded batch answer's first known paper
(CorpusID 470667's record) for each id, so each paper gets the recorded reference list of CorpusID:1033682
(two pages, ``next`` paging: 147 keyed references, 9 without an id) and the recorded cited-by pages of
CorpusID:14514057 (two pages: 177 keyed, 4 without an id): real answers, replicated. That is 5 requests a
paper plus one per 25 papers, parsed and saved batch by batch into a fresh SQLite store, each batch with its
checkpoint. What the figure leaves out is the network: against the real API the 1 request/s politeness
(``PAPERFEED_S2_DELAY``) bounds the rate at about 0.2 papers/s, whatever this machine does.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # tests.support: the replay HTTP server

from tests.support.http_server import Reply, replay_server  # noqa: E402

from bench.vector_cache import SHARED  # noqa: E402
from paperfeed.adapters.embed.cpu import cpu_info  # noqa: E402
from paperfeed.bootstrap import build_app  # noqa: E402
from paperfeed.domain.ingest import Batch  # noqa: E402
from paperfeed.domain.models import Paper  # noqa: E402
from paperfeed.settings import Settings  # noqa: E402

S2 = SHARED / "fixtures" / "s2_api"
BATCH = 25
JSON = {"Content-Type": "application/json"}


def _reply(name: str) -> Reply:
    record = json.loads((S2 / name).read_text(encoding="utf-8"))
    return Reply(record["status"], json.dumps(record["body"]).encode(), record["headers"])


class _Quiet:
    def update(self, position: int, total: int | None, added: int, updated: int, rejected: int) -> None:
        return None


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--papers", type=int, default=200, help="papers to harvest (a multiple of 25)")
    args = parser.parse_args()
    n = max(BATCH, args.papers - args.papers % BATCH)

    batch = json.loads((S2 / "batch_full_fields_with_null_for_unknown_id.json").read_text())["body"]
    known = batch[1]
    with replay_server() as server, tempfile.TemporaryDirectory() as tmp:
        base = "/graph/v1"
        server.add(f"{base}/paper/batch", Reply(200, json.dumps([known] * BATCH).encode(), JSON))
        refs, cites = (
            f"{base}/paper/{known['paperId']}/references",
            f"{base}/paper/{known['paperId']}/citations",
        )
        server.add(refs, _reply("references_full_page1_offset0_next100.json"), params={"offset": "0"})
        server.add(refs, _reply("references_full_page2_offset100_last.json"), params={"offset": "100"})
        server.add(cites, _reply("citations_title_page1_offset0_next100.json"), params={"offset": "0"})
        server.add(cites, _reply("citations_title_page19_offset1800_last.json"), params={"offset": "100"})

        settings = Settings(
            data_dir=Path(tmp),
            s2_api_url=f"{server.base_url}{base}",
            s2_delay=0.0,
            citations_batch_size=BATCH,
        )
        app = build_app(settings)
        try:
            ids = [f"2611.{i:05d}" for i in range(1, n + 1)]
            app.core.store.apply_batch(Batch(papers=[Paper(id=i, title=f"Paper {i}") for i in ids]))
            harvest = app.sources.citation_harvest
            plan = harvest.plan("s2", ids, refresh=False)
            started = time.perf_counter()
            cpu_before = time.process_time()
            report = harvest.run(plan, _Quiet())
            seconds = time.perf_counter() - started
            cpu = time.process_time() - cpu_before
        finally:
            app.close()
        if report.error:
            raise SystemExit(f"harvest stopped: {report.error}")
        requests = len(server.requests)
    print(f"CPU: {cpu_info().describe()}")
    print(
        f"{report.papers} papers, {report.edges_added:,} edges, {report.works_added:,} works, "
        f"{requests} requests in {seconds:.1f} s wall, {cpu:.1f} s CPU (this process, the loopback server "
        "included)"
    )
    print(
        f"wall: {report.papers / seconds:.1f} papers/s, {report.edges_added / seconds:,.0f} edges/s; "
        f"per CPU second: {report.papers / cpu:.1f} papers, {report.edges_added / cpu:,.0f} edges"
    )


if __name__ == "__main__":
    main()
