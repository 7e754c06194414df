"""Fault trials: kill -9 paperfeed's writers at random moments, run them again, and verify nothing was
lost or doubled and the indexes agree with the store.

    .venv/bin/python -m bench.faults                       # 20 trials of each target (several minutes)
    .venv/bin/python -m bench.faults --trials 3 --targets import,index

Targets (each a real ``paperfeed`` subprocess in its own process group, SIGKILLed — odd trials at a
uniformly random moment between its start and its measured uninterrupted duration (start-up included),
even trials the moment a random 5-95 % of its work is committed (so work is on both sides of the kill) —
then its worker processes, if any, killed too; then run again to completion). The
table counts the kills that hit a running process and those that left part of the work committed
("partial work": the case that matters most):

* ``import``  — ``paperfeed import`` of a file with 3,000 new papers and 300 new versions of earlier ones,
  into one data folder that grows trial after trial. After: the store holds exactly the expected ids,
  each revised paper has its newest text, ``paperfeed check`` is clean.
* ``harvest`` — ``paperfeed harvest arxiv --format oai_dc`` against a loopback server replaying the
  recorded 3-page OAI-PMH harvest (2,265 records, ``/work/shared/fixtures``), into a fresh folder. After:
  exactly those 2,265 papers, check clean.
* ``index``   — ``paperfeed index --batch-size 16`` (fake embedder: the kill points matter, not the
  model) after 400 papers got new text. After: check clean (every vector current, vector index equal
  to the stored vectors).
* ``digest``  — ``paperfeed digest send`` to 24 subscribers through a recording SMTP server (aiosmtpd)
  from a fresh copy of a prepared folder. After: every subscriber received exactly one digest (none
  lost, none doubled), and a further run sends nothing.

"check clean" is :class:`paperfeed.services.check.CheckService` (what ``paperfeed check`` runs) after
the rerun. Prints one row per trial with ``--verbose``, and a summary table per target.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import random
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

import orjson

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # tests.support helpers (replay HTTP server, SMTP recorder)

from paperfeed.bootstrap import build_app  # noqa: E402
from paperfeed.settings import Settings  # noqa: E402

PAPERFEED = [sys.executable, "-c", "from paperfeed.cli import main; main()"]
FIXTURES = Path(os.environ.get("PAPERFEED_SHARED", ROOT.parent / "shared")) / "fixtures"
TOKENS = ("6511260|1001", "6511260|2001")


@dataclass
class Trial:
    target: str
    number: int
    kill_at: float
    killed: bool = False  # the process was still running when the signal came
    rerun_code: int | None = None
    problems: list[str] = field(default_factory=list)
    seconds: float = 0.0
    done: int = 0  # how far the killed run got: committed work found after the kill ...
    total: int = 0  # ... out of this much
    unit: str = ""

    @property
    def progress(self) -> str:
        return f"{self.done}/{self.total} {self.unit}"

    @property
    def partial(self) -> bool:
        """The kill left some but not all of the work committed: the interesting case."""
        return 0 < self.done < self.total

    @property
    def ok(self) -> bool:
        return not self.problems


def base_env(data: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PAPERFEED_")}
    env.update(PAPERFEED_DATA_DIR=str(data), PAPERFEED_EMBEDDING_BACKEND="fake", **extra)
    return env


def run(args: list[str], env: dict[str, str], timeout: float = 300) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([*PAPERFEED, *args], env=env, capture_output=True, timeout=timeout, check=False)


def run_killed(
    args: list[str], env: dict[str, str], at: float, when: Callable[[], bool] | None = None
) -> tuple[bool, float]:
    """Start the command in its own process group and SIGKILL it after ``at`` seconds, or — with
    ``when`` — as soon as ``when()`` holds (polled every few ms; ``at`` is then only a time limit), then
    any worker processes it left. Returns (the kill hit a running process, seconds since start)."""
    started = time.monotonic()
    proc = subprocess.Popen(
        [*PAPERFEED, *args],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        if when is None:
            try:
                proc.wait(timeout=at)
                return False, time.monotonic() - started
            except subprocess.TimeoutExpired:
                pass
        else:
            while proc.poll() is None and not when() and time.monotonic() - started < at:
                time.sleep(0.005)
            if proc.poll() is not None:
                return False, time.monotonic() - started
        os.kill(proc.pid, signal.SIGKILL)  # the command itself, as kill -9 PID would
        proc.wait()
        return True, time.monotonic() - started
    finally:
        with contextlib.suppress(ProcessLookupError):  # then its workers (import validation): the group
            os.killpg(proc.pid, signal.SIGKILL)


def kill_plan(
    number: int, rng: random.Random, duration: float, total: int, done: Callable[[], int]
) -> tuple[float, Callable[[], bool] | None]:
    """Odd trials: a uniformly random moment of the run (start-up included). Even trials: the moment a
    random share (5-95 %) of the work is committed, so the kill lands mid-run with work on both sides."""
    if number % 2:
        return rng.uniform(0.0, duration * 1.1), None
    threshold = max(1, int(rng.uniform(0.05, 0.95) * total))
    return duration * 10 + 60, lambda: done() >= threshold


def paper_count(db: Path, minus: int = 0) -> int:
    """Papers committed to ``db`` so far (less ``minus``), read without disturbing the writer."""
    if not db.exists():
        return 0
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=1) as conn:
            return int(conn.execute("SELECT count(*) FROM papers").fetchone()[0]) - minus
    except sqlite3.OperationalError:  # not created yet
        return 0


def timed(args: list[str], env: dict[str, str]) -> float:
    started = time.monotonic()
    done = run(args, env)
    if done.returncode != 0:
        raise SystemExit(f"calibration run {args} failed: {done.stderr.decode()[-500:]}")
    return time.monotonic() - started


def check_problems(data: Path, **settings: object) -> list[str]:
    """What ``paperfeed check`` finds, as short strings (empty: consistent)."""
    app = build_app(Settings(data_dir=data, database_url=None, embedding_backend="fake", **settings))  # type: ignore[arg-type]
    try:
        report = app.maintenance.check.check()
    finally:
        app.close()
    return [f"check: {f.count} {f.problem}" for p in report.probes for f in p.findings]


def paper_rows(db: Path) -> tuple[int, dict[str, str]]:
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
        rows = conn.execute("SELECT id, abstract FROM papers").fetchall()
    return len(rows), dict(rows)


# -- import -------------------------------------------------------------------------------------------


def record(i: int, revision: int) -> bytes:
    extra = f" Revised {revision} times." if revision else ""
    return orjson.dumps(
        {
            "id": f"2502.{i:05d}",
            "title": f"Fault trial paper {i}",
            "abstract": f"Paper {i} on something measurable.{extra}",
            "authors": ["Ada Lovelace", f"Author {i % 11}"],
            "categories": ["cs.LG"] if i % 2 else ["astro-ph.CO"],
            "published": f"2025-02-{1 + i % 28:02d}",
            "version": 1 + revision,
        }
    )


def import_trials(work: Path, trials: int, rng: random.Random, log: Callable[[Trial], None]) -> list[Trial]:
    data = work / "import"
    env = base_env(data)
    expected: dict[str, int] = {}  # id -> newest revision

    def write(k: int) -> Path:
        path = work / f"import-{k}.jsonl"
        new = range(k * 3000, k * 3000 + 3000)
        old = rng.sample(sorted(expected), min(300, len(expected))) if expected else []
        with path.open("wb") as fh:
            for i in new:
                fh.write(record(i, 0) + b"\n")
            for pid in old:
                fh.write(record(int(pid.split(".")[1]), k) + b"\n")
        for i in new:
            expected[f"2502.{i:05d}"] = 0
        for pid in old:
            expected[pid] = k
        return path

    duration = timed(["import", str(write(0)), "--batch-size", "200"], env)
    results = []
    for n in range(1, trials + 1):
        started = time.monotonic()
        path = write(n)
        before = paper_count(data / "paperfeed.db")
        at, when = kill_plan(n, rng, duration, 3000, partial(paper_count, data / "paperfeed.db", before))
        trial = Trial("import", n, at)
        trial.killed, trial.kill_at = run_killed(["import", str(path), "--batch-size", "200"], env, at, when)
        trial.done, trial.total, trial.unit = (
            paper_rows(data / "paperfeed.db")[0] - before,
            3000,
            "new papers",
        )
        done = run(["import", str(path), "--batch-size", "200"], env)
        trial.rerun_code = done.returncode
        if done.returncode != 0:
            trial.problems.append(f"rerun exit {done.returncode}: {done.stderr.decode()[-200:]}")
        count, abstracts = paper_rows(data / "paperfeed.db")
        if count != len(expected) or set(abstracts) != set(expected):
            trial.problems.append(f"store holds {count} papers, expected {len(expected)}")
        stale = [
            pid
            for pid, rev in expected.items()
            if rev and not abstracts.get(pid, "").endswith(f"{rev} times.")
        ]
        if stale:
            trial.problems.append(f"{len(stale)} papers without their newest text (e.g. {stale[0]})")
        trial.problems += check_problems(data)
        trial.seconds = time.monotonic() - started
        log(trial)
        results.append(trial)
    return results


# -- harvest ------------------------------------------------------------------------------------------


def harvest_trials(work: Path, trials: int, rng: random.Random, log: Callable[[Trial], None]) -> list[Trial]:
    from tests.support.http_server import Reply, replay_server

    folder = FIXTURES / "oai_pmh" / "oai_dc_2023_SciXHarvester"
    pages = [(folder / f"ListRecords_data_{n}.xml").read_bytes() for n in range(3)]
    expected = {
        i.decode() for page in pages for i in re.findall(rb"<identifier>oai:arXiv\.org:([^<]+)<", page)
    }
    results = []
    with replay_server() as server:
        server.add("/oai", Reply(200, pages[0]), params={"verb": "ListRecords", "metadataPrefix": "oai_dc"})
        server.add("/oai", Reply(200, pages[1]), params={"resumptionToken": TOKENS[0]})
        server.add("/oai", Reply(200, pages[2]), params={"resumptionToken": TOKENS[1]})
        endpoint = f"{server.base_url}/oai"
        args = ["harvest", "arxiv", "--format", "oai_dc"]
        duration = min(
            timed(args, base_env(work / f"harvest-calibration-{k}", PAPERFEED_ARXIV_OAI_URL=endpoint))
            for k in range(2)
        )
        for n in range(1, trials + 1):
            started = time.monotonic()
            data = work / f"harvest-{n}"
            env = base_env(data, PAPERFEED_ARXIV_OAI_URL=endpoint, PAPERFEED_ARXIV_DELAY="0")
            db = data / "paperfeed.db"
            at, when = kill_plan(n, rng, duration, len(expected), partial(paper_count, db))
            trial = Trial("harvest", n, at)
            trial.killed, trial.kill_at = run_killed(args, env, at, when)
            trial.done, trial.total, trial.unit = paper_rows(db)[0] if db.exists() else 0, 2265, "papers"
            done = run(args, env)
            trial.rerun_code = done.returncode
            if done.returncode != 0:
                trial.problems.append(f"rerun exit {done.returncode}: {done.stderr.decode()[-200:]}")
            count, abstracts = paper_rows(db)
            if count != len(expected) or set(abstracts) != expected:
                trial.problems.append(
                    f"store holds {count} papers ({len(set(abstracts))} ids), expected 2265"
                )
            trial.problems += check_problems(data)
            trial.seconds = time.monotonic() - started
            shutil.rmtree(data, ignore_errors=True)
            log(trial)
            results.append(trial)
    return results


# -- index --------------------------------------------------------------------------------------------


def index_trials(work: Path, trials: int, rng: random.Random, log: Callable[[Trial], None]) -> list[Trial]:
    data = work / "index"
    env = base_env(data)
    total = 3000
    seed = work / "index-seed.jsonl"
    seed.write_bytes(b"".join(record(i, 0) + b"\n" for i in range(total)))
    if run(["import", str(seed)], env).returncode != 0:
        raise SystemExit("index trials: the seed import failed")
    duration = timed(["index", "--batch-size", "16"], env) * 400 / total + 1.5  # a 400-paper backlog
    results = []
    for n in range(1, trials + 1):
        started = time.monotonic()
        changed = work / f"index-{n}.jsonl"
        ids = rng.sample(range(total), 400)
        changed.write_bytes(b"".join(record(i, n) + b"\n" for i in ids))
        if run(["import", str(changed)], env).returncode != 0:
            raise SystemExit("index trials: an import failed")
        at, when = kill_plan(n, rng, duration, 400, lambda: 400 - backlog(data))
        trial = Trial("index", n, at)
        trial.killed, trial.kill_at = run_killed(["index", "--batch-size", "16"], env, at, when)
        trial.done, trial.total, trial.unit = 400 - backlog(data), 400, "re-embedded"
        done = run(["index"], env)
        trial.rerun_code = done.returncode
        if done.returncode != 0:
            trial.problems.append(f"rerun exit {done.returncode}: {done.stderr.decode()[-200:]}")
        trial.problems += check_problems(data)
        trial.seconds = time.monotonic() - started
        log(trial)
        results.append(trial)
    return results


def backlog(data: Path) -> int:
    with sqlite3.connect(f"file:{data / 'paperfeed.db'}?mode=ro", uri=True) as conn:
        return int(
            conn.execute(
                "SELECT count(*) FROM papers p LEFT JOIN embeddings e ON e.paper_id = p.id "
                "WHERE e.paper_id IS NULL OR e.content_hash != p.content_hash"
            ).fetchone()[0]
        )


# -- digest -------------------------------------------------------------------------------------------

NOW = "2025-03-20T09:00Z"


def digest_trials(work: Path, trials: int, rng: random.Random, log: Callable[[Trial], None]) -> list[Trial]:
    from tests.support.digests import BASE_URL, SECRET, digest_settings, load_papers, subscribe_active
    from tests.support.smtp_server import smtp_test_server

    template = work / "digest-template"
    emails = [f"reader{i:02d}@example.org" for i in range(24)]
    results = []
    with smtp_test_server() as smtp:
        app = build_app(digest_settings(template, smtp))
        try:
            load_papers(app)
            for email in emails:
                subscribe_active(app, email)
        finally:
            app.close()

        def env_for(data: Path) -> dict[str, str]:
            return base_env(
                data,
                PAPERFEED_SECRET_KEY=SECRET,
                PAPERFEED_BASE_URL=BASE_URL,
                PAPERFEED_KEYWORD_ENGINE="fts5",
                **smtp.environ(),
            )

        args = ["digest", "send", "--now", NOW]
        calibration = work / "digest-calibration"
        shutil.copytree(template, calibration)
        duration = timed(args, env_for(calibration))
        smtp.clear()
        for n in range(1, trials + 1):
            started = time.monotonic()
            data = work / f"digest-{n}"
            shutil.copytree(template, data)
            env = env_for(data)
            at, when = kill_plan(n, rng, duration, 24, lambda: len(smtp.messages))
            trial = Trial("digest", n, at)
            trial.killed, trial.kill_at = run_killed(args, env, at, when)
            trial.done, trial.total, trial.unit = len(smtp.messages), 24, "mailed"
            done = run(args, env)
            trial.rerun_code = done.returncode
            if done.returncode != 0:
                trial.problems.append(f"rerun exit {done.returncode}: {done.stdout.decode()[-200:]}")
            again = run(args, env)  # nothing may be left to send
            counts = smtp.per_recipient()
            lost = [e for e in emails if counts.get(e, 0) == 0]
            doubled = [e for e in emails if counts.get(e, 0) > 1]
            if lost:
                trial.problems.append(f"{len(lost)} digests lost (e.g. {lost[0]})")
            if doubled:
                trial.problems.append(f"{len(doubled)} digests doubled (e.g. {doubled[0]})")
            if again.returncode != 0:
                trial.problems.append(f"a further run exited {again.returncode}")
            smtp.clear()
            trial.seconds = time.monotonic() - started
            shutil.rmtree(data, ignore_errors=True)
            log(trial)
            results.append(trial)
    return results


TARGETS: dict[str, Callable[[Path, int, random.Random, Callable[[Trial], None]], list[Trial]]] = {
    "import": import_trials,
    "harvest": harvest_trials,
    "index": index_trials,
    "digest": digest_trials,
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trials", type=int, default=20)
    parser.add_argument("--targets", default=",".join(TARGETS))
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--verbose", action="store_true", help="One line per trial as it finishes.")
    parser.add_argument("--keep", action="store_true", help="Keep the work folder.")
    args = parser.parse_args()
    rng = random.Random(args.seed)
    work = Path(tempfile.mkdtemp(prefix="paperfeed-faults-"))

    def log(trial: Trial) -> None:
        if args.verbose or not trial.ok:
            status = "ok" if trial.ok else "FAIL " + "; ".join(trial.problems)
            print(
                f"  {trial.target:<8}#{trial.number:<3} kill at {trial.kill_at:5.2f}s "
                f"{'(running)' if trial.killed else '(had exited)'} {trial.progress:<26} "
                f"rerun {trial.rerun_code}  {status}",
                flush=True,
            )

    results: list[Trial] = []
    try:
        for name in args.targets.split(","):
            print(f"{name}: {args.trials} trials", flush=True)
            results += TARGETS[name](work, args.trials, rng, log)
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
        else:
            print(f"work folder kept: {work}")
    print()
    print(
        f"{'target':<9}{'trials':>7}{'killed running':>16}{'partial work':>14}"
        f"{'passed':>8}{'failed':>8}{'s/trial':>9}"
    )
    for name in args.targets.split(","):
        mine = [t for t in results if t.target == name]
        if not mine:
            continue
        seconds = sum(t.seconds for t in mine) / len(mine)
        print(
            f"{name:<9}{len(mine):>7}{sum(t.killed for t in mine):>16}{sum(t.partial for t in mine):>14}"
            f"{sum(t.ok for t in mine):>8}"
            f"{sum(not t.ok for t in mine):>8}{seconds:>9.1f}"
        )
    if any(not t.ok for t in results):
        sys.exit(1)


if __name__ == "__main__":
    main()
