"""The first full ``paperfeed index`` of a new data folder against ``paperfeed index --no-sentences`` (#39).

Issue #39's bar: on the same papers, the first full index of a fresh data folder (the papers' vectors, their
sentences, roles and one-line summaries) costs at most 1.5x the CPU of the vectors alone. Each run is the
installed command in a process of its own (``python -m paperfeed``), on a fresh data folder with the papers
imported first (not timed); its CPU is the child's own rusage (user + system, every thread).

The backend is calibrated once, in a throwaway folder, and its record copied into each measured folder,
so neither run pays for the calibration (it is the same for both: it would only dilute the ratio). The
ONNX export is the machine's shared cache (``PAPERFEED_MODEL_CACHE``), built before any timing.

``--variant NAME=PYTHONPATH`` measures another checkout the same way (main before #39 trains the
sentence-role model in every new data folder, then embeds every sentence again).

    /work/bin/heavy .venv/bin/python -m bench.index_cost --corpus seeds \\
        --variant before=/work/scratch-pipeline/before/src --variant after=src
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

from bench.sentence_roles import cpu_flags
from bench.time_to_capability import hf_papers
from bench.vector_cache import CACHE_ROOT, SHARED

ROOT = Path(__file__).resolve().parents[1]
SCRATCH = Path(os.environ.get("PAPERFEED_BENCH_SCRATCH", "/work/scratch-pipeline/index-cost"))


def run(command: list[str], env: dict[str, str]) -> tuple[float, float, str]:
    """Wall and CPU seconds of ``command`` and its output (the CPU from the children's rusage delta)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.monotonic()
    done = subprocess.run(command, env=env, capture_output=True, text=True)
    wall = time.monotonic() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed:\n{done.stdout}\n{done.stderr}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, done.stdout + done.stderr


def measure(
    name: str, pythonpath: Path, papers: Path, namespace: list[str]
) -> dict[str, tuple[float, float]]:
    env = {
        **os.environ,
        "PYTHONPATH": str(pythonpath.resolve()),
        "PAPERFEED_MODEL_CACHE": str(CACHE_ROOT / "models"),
        "HF_HUB_OFFLINE": "1",
    }
    folder = SCRATCH / name
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    base = [sys.executable, "-m", "paperfeed"]
    calibration = folder / "calibrate"
    run([*base, "--data-dir", str(calibration), "index", "--calibrate", "--limit", "0"], env)
    record = calibration / "embedding-calibration.json"
    out: dict[str, tuple[float, float]] = {}
    for label, flags in (("vectors only (--no-sentences)", ["--no-sentences"]), ("full index", [])):
        data = folder / label.split()[0]
        run([*base, "--data-dir", str(data), "import", *namespace, str(papers)], env)
        if record.is_file():
            shutil.copy(record, data / record.name)
        wall, cpu, text = run([*base, "--data-dir", str(data), "index", *flags], env)
        out[label] = (wall, cpu)
        lines = [ln for ln in text.splitlines() if "embedded" in ln or "sentences" in ln or "trained" in ln]
        print(
            f"  [{name}] {label}: {wall:,.1f} s, {cpu:,.1f} CPU-s; " + " | ".join(ln.strip() for ln in lines)
        )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--corpus", choices=["seeds", "hf"], default="seeds")
    parser.add_argument("--papers", type=int, default=1500, help="Hugging Face papers (--corpus hf)")
    parser.add_argument("--variant", action="append", default=None, help="NAME=PYTHONPATH (repeatable)")
    args = parser.parse_args()
    print(f"CPU: {os.cpu_count()} cores, {cpu_flags()}; {time.strftime('%Y-%m-%d %H:%M')}")
    SCRATCH.mkdir(parents=True, exist_ok=True)
    if args.corpus == "seeds":
        papers, namespace = SHARED / "seeds" / "seed_papers.jsonl", ["--id-namespace", "seed"]
    else:
        lines, _ = hf_papers(args.papers)
        papers, namespace = SCRATCH / f"hf{args.papers}.jsonl", []
        papers.write_bytes(b"\n".join(lines) + b"\n")
    variants = [v.split("=", 1) for v in (args.variant or [f"after={ROOT / 'src'}"])]
    found = {name: measure(name, Path(path), papers, namespace) for name, path in variants}
    print(
        f"\n## first index of a fresh data folder ({args.corpus}): wall s, CPU s, CPU against --no-sentences"
    )
    for name, rows in found.items():
        alone = rows["vectors only (--no-sentences)"][1]
        for label, (wall, cpu) in rows.items():
            print(f"{name:<10}{label:<34}{wall:>9,.1f}{cpu:>10,.1f}{cpu / max(alone, 1e-9):>8.2f}x")


if __name__ == "__main__":
    main()
