"""Citations in bulk: ``paperfeed citations import`` (the service behind it, as bootstrap wires it) of the
Paperscape citation edges into a fresh SQLite file and a fresh PostgreSQL database, edges/s and peak memory.

    .venv/bin/python -m bench.citation_import                        # both backends, the 145,644 edges
    .venv/bin/python -m bench.citation_import --copies 10 --backend sqlite   # 1.46M edges: memory stays flat

The file is ``../shared/data/paperscape_1991_1996_edges.tsv.gz`` (ODbL 1.0: Damien P. George and Robert
Knegjens, Paperscape, doi:10.5281/zenodo.10052), read as it is: gzip, a header, old-style arXiv ids.
``--copies N`` writes a gzip file of N copies of it, the copy k > 0 naming every paper by a DOI of its own
(``10.5555/pscp<k>.<id>``), so N times as many distinct edges and works, half the ids through the DOI path.

Each import runs in a child process of its own, so its peak resident memory (``ru_maxrss``) is its own:
shown with the resident memory before the import (Python, SQLAlchemy, the open store), so the growth is
what the import itself holds. Each backend is imported twice: the first import adds every edge, the second
reads the file again and adds nothing (every pair is there, with this file among its sources). Rates are
edges read per second of wall time and per second of the process's CPU time (the machine is shared:
the CPU rate is the one that does not depend on what else runs). PostgreSQL runs locally in a throwaway
cluster (``tests/support/postgres.py``) with fsync on and ``synchronous_commit`` off (``bench/backends.py``);
its server's own CPU time (the postmaster and the backends it reaped, from ``/proc``) is shown apart.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # tests.support: the throwaway PostgreSQL

from bench.vector_cache import SHARED  # noqa: E402

EDGES = SHARED / "data" / "paperscape_1991_1996_edges.tsv.gz"


class _Quiet:
    def update(self, position: int, total: int | None, added: int, updated: int, rejected: int) -> None:
        return None


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def one(path: Path, url: str) -> dict[str, Any]:
    """Import ``path`` twice into the store at ``url`` (this process), timed."""
    from paperfeed.adapters.sources.citation_files import LocalCitationFiles
    from paperfeed.adapters.store import open_store
    from paperfeed.adapters.store.citation_import import SqlCitationImport
    from paperfeed.services.citation_import import IMPORT_BATCH, CitationImport

    store = open_store(url)
    service = CitationImport(LocalCitationFiles(), SqlCitationImport(store.engine))
    file = service.open(str(path), None, batch_size=IMPORT_BATCH)
    out: dict[str, Any] = {"rss_before_mb": _rss_mb()}
    for name in ("first", "again"):
        wall, cpu = time.perf_counter(), time.process_time()
        report = service.run(file, _Quiet())
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        out[name] = {
            "edges": report.records,
            "added": report.edges_added,
            "unchanged": report.edges_unchanged,
            "works_added": report.works_added,
            "wall_s": wall,
            "cpu_s": cpu,
            "peak_rss_mb": _rss_mb(),
        }
    store.close()
    return out


def _copies(n: int, folder: Path) -> Path:
    """N copies of the edges file, copy k > 0 with every id a DOI of its own (see the module's doc)."""
    if n == 1:
        return EDGES
    path = folder / f"paperscape_edges_x{n}.tsv.gz"
    lines = gzip.decompress(EDGES.read_bytes()).decode().splitlines()[1:]
    with gzip.open(path, "wt", compresslevel=6) as fh:
        fh.write("citing_id\tcited_id\n")
        for k in range(n):
            for line in lines:
                a, b = line.split("\t")
                fh.write(line + "\n" if k == 0 else f"10.5555/pscp{k}.{a}\t10.5555/pscp{k}.{b}\n")
    return path


def _server_cpu(pid: int) -> float:
    """CPU seconds of the PostgreSQL server and its reaped children (the backends, once they exit)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return sum(int(v) for v in fields[11:15]) / os.sysconf("SC_CLK_TCK")


def _child(path: Path, url: str) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": f"{ROOT / 'src'}{os.pathsep}{ROOT}"}
    done = subprocess.run(
        [sys.executable, "-m", "bench.citation_import", "--one", str(path), "--url", url],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(done.stderr)
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def _show(label: str, result: dict[str, Any]) -> None:
    for name, what in (("first", "first import"), ("again", "same file again")):
        r = result[name]
        print(
            f"{label:<11} {what:<16} {r['edges']:>10,} edges  +{r['added']:>9,}  ={r['unchanged']:>9,}  "
            f"{r['wall_s']:6.2f} s wall {r['edges'] / r['wall_s']:>9,.0f}/s   "
            f"{r['cpu_s']:6.2f} s CPU {r['edges'] / r['cpu_s']:>9,.0f}/s   "
            f"peak RSS {r['peak_rss_mb']:5.0f} MB"
        )
    print(f"{'':<11} resident before the import: {result['rss_before_mb']:.0f} MB")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--backend", choices=("sqlite", "postgresql", "both"), default="both")
    parser.add_argument("--copies", type=int, default=1, help="copies of the edges (see above)")
    parser.add_argument("--one", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--url", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one is not None:
        print(json.dumps(one(args.one, args.url)))
        return

    from bench.backends import PG_SETTINGS
    from paperfeed.adapters.embed.cpu import cpu_info

    print(f"CPU: {cpu_info().describe()}; {os.cpu_count()} cores; load {os.getloadavg()[0]:.2f} (1-min)")
    print(
        "Data: Paperscape, ODbL 1.0 (Damien P. George, Robert Knegjens, Paperscape, doi:10.5281/zenodo.10052)"
    )
    with tempfile.TemporaryDirectory(prefix="citation-import-") as tmp:
        folder = Path(tmp)
        path = _copies(args.copies, folder)
        print(f"file: {path.name}, {path.stat().st_size / 1e6:.1f} MB gzip")
        if args.backend in ("sqlite", "both"):
            _show("SQLite", _child(path, f"sqlite+pysqlite:///{folder / 'paperfeed.db'}"))
            db_mb = sum(p.stat().st_size for p in folder.glob("paperfeed.db*")) / 1e6
            print(f"{'':<11} database files: {db_mb:.0f} MB")
        if args.backend in ("postgresql", "both"):
            from tests.support.postgres import start_server, stop_server

            settings = {**PG_SETTINGS, "shared_buffers": "256MB", "maintenance_work_mem": "256MB"}
            server = start_server(None, settings=settings, timeout=300)  # a folder of its own, in /tmp
            try:
                import psycopg

                with psycopg.connect(server.url().replace("+psycopg", ""), autocommit=True) as conn:
                    conn.execute("CREATE DATABASE paperfeed")
                print(f"PostgreSQL: {server.version}")
                before = _server_cpu(server.pid)
                result = _child(path, server.url("paperfeed"))
                _show("PostgreSQL", result)
                time.sleep(1)  # the backend's exit reaped
                edges = result["first"]["edges"] + result["again"]["edges"]
                used = _server_cpu(server.pid) - before
                print(f"{'':<11} the server's CPU, both imports: {used:.2f} s ({edges / used:,.0f} edges/s)")
            finally:
                stop_server(server)
    print(f"load after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
