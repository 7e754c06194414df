"""A serving process freezes its start-up heap, so the garbage collector never walks it again (#30, 15).

A fresh server's first full collection walked ~218k long-lived objects for ~160 ms and stalled its 14th
request. Each case runs in a process of its own (a freeze is for the whole process): the app as `paperfeed
serve` makes it, started, then one request. bench/first_requests.py measures the latency it saves.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

SCRIPT = """
import gc, json, sys
from pathlib import Path
from fastapi.testclient import TestClient
from paperfeed.bootstrap import build_app
from paperfeed.settings import Settings
from paperfeed.web.app import create_app

settings = Settings(data_dir=Path(sys.argv[1]), embedding_backend="fake", keyword_engine="fts5")
app = create_app(lambda: build_app(settings), serving=sys.argv[2] == "serving")
with TestClient(app) as client:
    assert client.get("/", headers={"accept": "text/html"}).status_code == 200
    print(json.dumps({"frozen": gc.get_freeze_count(), "tracked": len(gc.get_objects())}))
"""


def _start(tmp_path: Path, how: str, **env: str) -> dict[str, int]:
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(tmp_path / how), how],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, **env},
    )
    assert done.returncode == 0, done.stderr[-3000:]
    counts: dict[str, int] = json.loads(done.stdout.strip().splitlines()[-1])
    return counts


def test_a_serving_process_freezes_what_it_loaded_at_start(tmp_path: Path) -> None:
    served = _start(tmp_path, "serving")
    assert served["frozen"] > 50_000  # modules, SQLAlchemy's tables, the compiled templates
    assert served["tracked"] < served["frozen"] / 3  # what a full collection still walks


def test_a_test_process_or_the_setting_leaves_the_collector_alone(tmp_path: Path) -> None:
    assert _start(tmp_path, "in-test")["frozen"] == 0
    assert _start(tmp_path, "serving", PAPERFEED_WEB_GC_FREEZE="false")["frozen"] == 0
