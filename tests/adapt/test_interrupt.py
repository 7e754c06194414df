"""The real ``paperfeed model adapt`` process interrupted: Ctrl+C saves a checkpoint and says how to resume;
kill -9 loses only the steps since the last checkpoint; the same command then resumes and finishes."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from .conftest import EVAL_OPTIONS, TRAIN_OPTIONS, make_instance, run

pytestmark = [pytest.mark.shared, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]


def _start(data: Path, *extra: str) -> subprocess.Popen[str]:
    cmd = [sys.executable, "-m", "paperfeed", "--data-dir", str(data), "model", "adapt", *TRAIN_OPTIONS]
    env = {**os.environ, "PAPERFEED_EMBEDDING_BACKEND": "torch", "PYTHONUNBUFFERED": "1"}
    return subprocess.Popen(
        [*cmd, *extra], cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def _checkpoints(data: Path) -> list[int]:
    """Steps of the checkpoints the trainer finished writing (it writes trainer_state.json last)."""
    found = (data / "models" / "adapt-runs").glob("*/checkpoints/checkpoint-*/trainer_state.json")
    return sorted(int(p.parent.name.rsplit("-", 1)[1]) for p in found)


def _wait_for(condition: object, timeout: float = 240) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if callable(condition) and condition():
            return
        time.sleep(0.2)
    raise AssertionError("timed out")


def test_ctrl_c_saves_a_checkpoint_and_the_same_command_resumes(tmp_path: Path, shared_dir: Path) -> None:
    data = make_instance(tmp_path, shared_dir, 48)
    proc = _start(data, "--save-steps", "1000", *EVAL_OPTIONS)  # no periodic checkpoint: only Ctrl+C's
    _wait_for(lambda: any((data / "models" / "adapt-runs").glob("*/checkpoints")))
    proc.send_signal(signal.SIGINT)  # while the model loads or during the first steps
    out, err = proc.communicate(timeout=240)
    assert proc.returncode == 130, err
    text = " ".join(out.split())
    assert "stopping after this step and saving a checkpoint" in err
    stopped = re.search(r"stopped at step (\d) of 5", text)
    assert stopped is not None, text + err
    assert "Run the same `paperfeed model adapt` command again to resume" in text
    assert _checkpoints(data) == [int(stopped.group(1))]
    code, resumed, err = run(data, "model", "adapt", *TRAIN_OPTIONS, "--save-steps", "1000", *EVAL_OPTIONS)
    assert code == 0, err
    assert f"resumed at step {stopped.group(1)}, trained to step 5 of 5" in resumed


def test_kill_9_resumes_from_the_last_checkpoint(tmp_path: Path, shared_dir: Path) -> None:
    data = make_instance(tmp_path, shared_dir, 48)
    proc = _start(data, "--save-steps", "1", *EVAL_OPTIONS)
    _wait_for(lambda: bool(_checkpoints(data)) and _checkpoints(data)[-1] >= 2)
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=60)
    saved = _checkpoints(data)
    assert saved, "no checkpoint survived"
    last = saved[-1]
    if last == 5:
        pytest.skip("the kill landed after the last step")  # never seen: 5 steps take seconds each
    code, resumed, err = run(data, "model", "adapt", *TRAIN_OPTIONS, "--save-steps", "1", *EVAL_OPTIONS)
    assert code == 0, err
    assert f"resumed at step {last}, trained to step 5 of 5" in resumed
