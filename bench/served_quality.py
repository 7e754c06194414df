"""Search quality as a user gets it: SciFact through the HTTP API of a served instance, against the bench.

The figure in docs/benchmarks.md must be the product's, not a bench's copy of it. So this bench sets up
an instance with the product's own commands, in subprocesses of this checkout's code, with no
``PAPERFEED_*`` setting but the data folder (so every setting is its default, the embedding backend
``auto`` included, chosen and recorded by ``paperfeed index`` on this machine):

1. ``paperfeed import --id-namespace scifact scifact_corpus.jsonl.gz`` (the 5,183 abstracts);
2. ``paperfeed index`` (measures the backends, then embeds every paper with the chosen one);
3. ``paperfeed serve`` on a free loopback port (a secret key and base URL, as production needs);
4. every SciFact test claim (``--split train`` for the train ones) sent as
   ``GET /api/papers/search?q=...&limit=100``, the ranked ids read from the JSON answer (the API's cap
   is 120, so nDCG@10 and Recall@100 are both whole; no claim is longer than its 250 characters, and
   none uses the query syntax, which the API parses as it parses a user's query).

It prints nDCG@10 and Recall@100 of the served answers next to ``bench/quality.py``'s in-process figure
for the same (shipped) settings and vector space (the vector cache of the backend the instance chose;
torch and ONNX float32 share one), and their difference, which must be within 0.002. ``--data-dir``
keeps the instance (an existing one is reused: import and index then change nothing).

    HF_HUB_OFFLINE=1 nice -n 5 .venv/bin/python -m bench.served_quality [--data-dir D] [--split test]
"""

from __future__ import annotations

import argparse
import os
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
import orjson

from bench.ir_metrics import evaluate, load_qrels
from bench.quality import POOL, SHIPPED, build, describe, service, service_run
from bench.vector_cache import CORPORA, SHARED, VectorCache, load_corpus
from paperfeed.adapters.embed.cpu import cpu_info

TOLERANCE = 0.002  # served vs in-process nDCG@10: the product's figure must be the bench's
LIMIT = 100  # results asked per query (the API allows 120)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def product_env(data_dir: Path) -> dict[str, str]:
    """This process's environment without any ``PAPERFEED_*`` setting: the instance runs its defaults."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PAPERFEED_")}
    env["PAPERFEED_DATA_DIR"] = str(data_dir)
    env.setdefault("HF_HUB_OFFLINE", "1")  # the model ships with the package: never downloaded
    return env


def paperfeed(*args: str, env: dict[str, str]) -> float:
    """Run one ``paperfeed`` command to its end, its output shown; the seconds it took."""
    command = [sys.executable, "-m", "paperfeed", *args]
    print(f"$ paperfeed {' '.join(args)}", flush=True)
    started = time.perf_counter()
    subprocess.run(command, env=env, check=True)
    return time.perf_counter() - started


def wait_until_up(base: str, process: subprocess.Popen[bytes], timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"paperfeed serve exited with {process.returncode}")
        try:
            if httpx.get(f"{base}/api/papers?limit=1", timeout=5.0).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.5)
    raise SystemExit(f"paperfeed serve did not answer within {timeout:.0f} s")


def reader_token(data_dir: Path, secret: str) -> str:
    """A confirmed reader's personal API token, made by the account service the account page uses: a
    script sends its searches with one (anonymous searches are rate-limited per address, issue #31)."""
    from pydantic import SecretStr

    from paperfeed.bootstrap import build_app
    from paperfeed.domain.accounts import AccountExists
    from paperfeed.settings_model import SettingsModel

    app = build_app(SettingsModel(data_dir=data_dir, secret_key=SecretStr(secret)))
    try:
        accounts = app.readers.accounts
        try:
            user = accounts.add_confirmed("bench@example.org", secrets.token_urlsafe(16))
        except AccountExists:  # a kept instance, reused
            found = accounts.user_by_email("bench@example.org")
            assert found is not None
            user = found
        return accounts.create_api_token(user, "bench.served_quality")[1]
    finally:
        app.close()


def served_run(base: str, queries: dict[str, str], token: str) -> tuple[dict[str, list[str]], int, float]:
    """Each query's ranked ids from the API, how many answers carried a search note, and ms per query."""
    run: dict[str, list[str]] = {}
    noted = 0
    started = time.perf_counter()
    headers = {"Authorization": f"Bearer {token}"}
    with httpx.Client(base_url=base, timeout=60.0, headers=headers) as client:
        for qid, text in queries.items():
            answer = client.get("/api/papers/search", params={"q": text, "limit": LIMIT})
            answer.raise_for_status()
            if answer.headers.get("X-Search-Notes"):
                noted += 1
                if noted == 1:
                    print(f"  note on {text!r}: {answer.headers['X-Search-Notes']}")
            run[qid] = [item["paper"]["id"] for item in orjson.loads(answer.content)]
    return run, noted, (time.perf_counter() - started) * 1000 / max(len(queries), 1)


def chosen_backend(data_dir: Path) -> str:
    """The backend ``auto`` chose and recorded on this machine (``paperfeed index``)."""
    record = data_dir / "embedding-calibration.json"
    return str(orjson.loads(record.read_bytes())["backend"])


def in_process(backend: str, queries: dict[str, str], rel: dict[str, dict[str, int]]) -> dict[str, float]:
    """bench/quality.py's figure for the shipped settings in ``backend``'s vector space."""
    cache = VectorCache.default(backend)
    docs = load_corpus("scifact")
    vectors = cache.vectors("scifact", docs, report=print)
    with tempfile.TemporaryDirectory(prefix="pf-served-quality-") as tmp:
        store, keyword, index = build(
            Path(tmp), "scifact", docs, vectors, cache.embedder.model_id, "auto", "scifact:"
        )
        try:
            run, _ = service_run(service(store, keyword, index, cache.embedder, SHIPPED), queries)
        finally:
            store.close()
    return evaluate(run, rel)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--data-dir", type=Path, default=None, help="keep (or reuse) the instance here")
    parser.add_argument("--split", default="test", choices=["test", "train"])
    args = parser.parse_args()
    queries, rel = load_qrels(SHARED / "data" / "qrels_scifact.jsonl.gz", args.split, "scifact:")
    print(f"{cpu_info().describe()}, {time.strftime('%Y-%m-%d %H:%M')}")
    print(f"shipped search settings: {describe(SHIPPED)}; SciFact {args.split}: {len(queries)} claims")
    temporary = args.data_dir is None
    data_dir = Path(tempfile.mkdtemp(prefix="pf-served-")) if temporary else args.data_dir
    env = product_env(data_dir)
    server: subprocess.Popen[bytes] | None = None
    try:
        took = paperfeed("import", "--id-namespace", "scifact", str(CORPORA["scifact"]), env=env)
        print(f"import: {took:.0f} s")
        took = paperfeed("index", env=env)
        print(f"index: {took:.0f} s")
        backend = chosen_backend(data_dir)
        port = free_port()
        base = f"http://127.0.0.1:{port}"
        env_serve = {**env, "PAPERFEED_SECRET_KEY": secrets.token_hex(32)}
        token = reader_token(data_dir, env_serve["PAPERFEED_SECRET_KEY"])
        command = ["serve", "--host", "127.0.0.1", "--port", str(port), "--base-url", base]
        print(f"$ paperfeed {' '.join(command)}", flush=True)
        server = subprocess.Popen(
            [sys.executable, "-m", "paperfeed", *command, "--log-level", "warning"], env=env_serve
        )
        wait_until_up(base, server)
        run, noted, ms = served_run(base, queries, token)
        served = evaluate(run, rel)
    finally:
        if server is not None:
            server.terminate()
            server.wait(timeout=30)
        if temporary:
            shutil.rmtree(data_dir, ignore_errors=True)
    bench = in_process(backend, queries, rel)
    difference = served["ndcg@10"] - bench["ndcg@10"]
    print(f"\nSciFact {args.split}, backend {backend} (auto's choice here), {cpu_info().describe()}")
    print(f"{'':34s} {'nDCG@10':>8s} {'R@100':>7s}")
    print(f"{'served: GET /api/papers/search':34s} {served['ndcg@10']:8.4f} {served['recall@100']:7.4f}")
    print(f"{'bench: HybridSearch in process':34s} {bench['ndcg@10']:8.4f} {bench['recall@100']:7.4f}")
    print(
        f"difference {difference:+.4f} (tolerance {TOLERANCE}); {noted} answers carried a search note; "
        f"{ms:.1f} ms per query over HTTP; pool {POOL}"
    )
    if abs(difference) > TOLERANCE:
        raise SystemExit("the served figure is not the bench's: the product runs something else")


if __name__ == "__main__":
    main()
