"""What the probe's library-import files cost a real server (#31, finding 2): peak and after RSS.

Starts ``python -m paperfeed serve`` (one uvicorn worker, a fresh data folder with three readers, the
arXiv API replayed on loopback: every id-list question answers an empty feed, so a background fetch runs
its course without the network) and sends, three at once (one per reader, as the probe did):

1. ``POST /library/import`` (the page's form, session cookie and CSRF token) of a 19.7 MB ``.bib`` of
   520,000 ``@article{kN, eprint={2401.NNNNN}}`` entries;
2. ``POST /api/me/library/import`` (a Bearer token) of a 20 MB list of arXiv ids, one a line.

It samples the server process's ``VmRSS`` (``/proc/PID/status``) every 20 ms and prints, per round, the
RSS before, the peak during, the RSS 5 s after the last answer, each answer's status, size and time;
then waits for the background fetches to finish and prints the RSS once more. ``--src`` runs another
checkout's ``src`` (e.g. the code before the fix, from ``git archive``) against the same files.

    python bench/bounded_import.py [--src /tmp/old/src] [--entries 520000] [--rounds bib,ids]
"""

from __future__ import annotations

import argparse
import os
import re
import socket
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.support.http_server import Reply, replay_server  # noqa: E402

EMPTY_FEED = (
    b'<?xml version="1.0" encoding="UTF-8"?>\n<feed xmlns="http://www.w3.org/2005/Atom" '
    b'xmlns:opensearch="http://a9.com/-/spec/opensearch/1.1/"><title>arXiv Query</title>'
    b"<opensearch:totalResults>0</opensearch:totalResults><opensearch:startIndex>0</opensearch:startIndex>"
    b"<opensearch:itemsPerPage>100</opensearch:itemsPerPage></feed>\n"
)
READERS = ("ann@example.org", "ben@example.org", "cat@example.org")
CSRF = re.compile(r'name="csrf_token" value="([^"]+)"')


def probe_bib(entries: int) -> bytes:
    return "".join(f"@article{{k{n}, eprint={{2401.{n % 100_000:05d}}}}}\n" for n in range(entries)).encode()


def probe_ids(size: int) -> bytes:
    line_count = size // 11
    return "".join(f"2401.{n % 100_000:05d}\n" for n in range(line_count)).encode()


def rss_mib(pid: int, field: str = "VmRSS") -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    return float("nan")


@dataclass
class Sampler:
    pid: int
    peak: float = 0.0
    _stop: threading.Event | None = None

    def __enter__(self) -> Sampler:
        self.peak = rss_mib(self.pid)
        self._stop = threading.Event()
        threading.Thread(target=self._run, daemon=True).start()
        return self

    def _run(self) -> None:
        assert self._stop is not None
        while not self._stop.is_set():
            self.peak = max(self.peak, rss_mib(self.pid))
            time.sleep(0.02)

    def __exit__(self, *_: object) -> None:
        assert self._stop is not None
        self._stop.set()


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _readers(data: Path, env: dict[str, str], src: Path) -> list[tuple[str, str]]:
    """Three verified readers, each with a session and an API token (made by the code under test)."""
    script = (
        "import sys\n"
        "from paperfeed.bootstrap import build_app\n"
        "from paperfeed.settings import Settings\n"
        "app = build_app(Settings())\n"
        "accounts = app.readers.accounts\n"
        "for email in sys.argv[1:]:\n"
        "    accounts.sign_up(email, None, None, client='bench', base_url='http://bench')\n"
        "    user = accounts.user_by_email(email)\n"
        "    accounts.store.mark_verified(user.id, accounts.clock())\n"
        "    user = accounts.user_by_email(email)\n"
        "    print(accounts.create_session(user).session, accounts.create_api_token(user, 'b')[1])\n"
        "app.close()\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", script, *READERS],
        env={**env, "PYTHONPATH": str(src)},
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return [tuple(line.split()) for line in out.splitlines()]  # type: ignore[misc]


def _page_upload(base: str, session: str, name: str, body: bytes) -> tuple[int, int, float]:
    started = time.monotonic()
    with httpx.Client(base_url=base, timeout=600, cookies={"pf_session": session}) as client:
        page = client.get("/library/import", headers={"accept": "text/html"})
        token = CSRF.search(page.text)
        assert token is not None, page.status_code
        got = client.post(
            "/library/import",
            data={"csrf_token": token[1]},
            files={"file": (name, body, "text/plain")},
            headers={"accept": "text/html"},
        )
    return got.status_code, len(got.content), time.monotonic() - started


def _api_upload(base: str, token: str, name: str, body: bytes) -> tuple[int, int, float]:
    started = time.monotonic()
    with httpx.Client(base_url=base, timeout=600, headers={"authorization": f"Bearer {token}"}) as client:
        got = client.post("/api/me/library/import", files={"file": (name, body, "text/plain")})
    return got.status_code, len(got.content), time.monotonic() - started


def _wait_for_jobs(base: str, tokens: list[str], limit: float = 600) -> float:
    started = time.monotonic()
    while time.monotonic() - started < limit:
        running = 0
        for token in tokens:
            got = httpx.get(f"{base}/api/me/library/import", headers={"authorization": f"Bearer {token}"})
            if got.status_code == 200 and (got.json().get("job") or {}).get("state") == "running":
                running += 1
        if not running:
            return time.monotonic() - started
        time.sleep(0.5)
    return float("nan")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--src", type=Path, default=ROOT / "src", help="the paperfeed sources to serve")
    parser.add_argument("--entries", type=int, default=520_000, help="entries of the .bib")
    parser.add_argument("--ids-bytes", type=int, default=20_000_000, help="size of the id list")
    parser.add_argument("--rounds", default="bib,ids", help="which rounds, in order")
    parser.add_argument("--settle", type=float, default=5.0, help="seconds after a round before 'after'")
    args = parser.parse_args()

    bib, ids = probe_bib(args.entries), probe_ids(args.ids_bytes)
    print(f"files: .bib {len(bib) / 1e6:.1f} MB ({args.entries:,} entries), ids {len(ids) / 1e6:.1f} MB")
    with tempfile.TemporaryDirectory() as tmp, replay_server() as arxiv:
        arxiv.add("/api/query", Reply(200, EMPTY_FEED, {"Content-Type": "application/atom+xml"}))
        port = _free_port()
        base = f"http://127.0.0.1:{port}"
        env = {k: v for k, v in os.environ.items() if not k.startswith("PAPERFEED_")}
        env.update(
            PAPERFEED_DATA_DIR=str(Path(tmp) / "data"),
            PAPERFEED_EMBEDDING_BACKEND="fake",
            PAPERFEED_SECRET_KEY="bench-" + "x" * 40,
            PAPERFEED_BASE_URL=base,
            PAPERFEED_ARXIV_API_URL=arxiv.base_url + "/api/query",
            PAPERFEED_ARXIV_DELAY="0",
            PAPERFEED_HTTP_RETRIES="0",
        )
        readers = _readers(Path(tmp), env, args.src)
        server = subprocess.Popen(
            [sys.executable, "-m", "paperfeed", "serve", "--port", str(port), "--log-level", "warning"],
            env={**env, "PYTHONPATH": str(args.src)},
        )
        try:
            deadline = time.monotonic() + 60
            while True:
                try:
                    if httpx.get(f"{base}/api/papers", timeout=2).status_code == 200:
                        break
                except httpx.HTTPError:
                    pass
                if time.monotonic() > deadline:
                    raise SystemExit("the server did not start")
                time.sleep(0.2)
            pid = server.pid
            print(f"server pid {pid}, code {args.src}; RSS at start {rss_mib(pid):.0f} MiB")
            for name in args.rounds.split(","):
                before = rss_mib(pid)
                with Sampler(pid) as sampler, ThreadPoolExecutor(3) as pool:
                    if name == "bib":
                        jobs = [pool.submit(_page_upload, base, s, "probe.bib", bib) for s, _ in readers]
                    else:
                        jobs = [pool.submit(_api_upload, base, t, "probe.txt", ids) for _, t in readers]
                    answers = [job.result() for job in jobs]
                time.sleep(args.settle)
                after = rss_mib(pid)
                peak = sampler.peak
                print(
                    f"round {name} ×3: RSS before {before:.0f} MiB, peak {peak:.0f} MiB "
                    f"(+{peak - before:.0f}), {args.settle:g} s after {after:.0f} MiB (+{after - before:.0f})"
                )
                for status, size, seconds in answers:
                    print(f"  answer {status}, {size:,} bytes, {seconds:.1f} s")
            waited = _wait_for_jobs(base, [t for _, t in readers])
            print(
                f"background fetches done {waited:.1f} s later; RSS {rss_mib(pid):.0f} MiB, "
                f"peak over the run (VmHWM) {rss_mib(pid, 'VmHWM'):.0f} MiB"
            )
        finally:
            server.terminate()
            server.wait(30)


if __name__ == "__main__":
    main()
