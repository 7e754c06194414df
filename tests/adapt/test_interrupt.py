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
    proc = _start(data, *EVAL_OPTIONS, "--save-steps", "1000")  # no periodic checkpoint: only Ctrl+C's
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
    code, resumed, err = run(data, "model", "adapt", *TRAIN_OPTIONS, *EVAL_OPTIONS, "--save-steps", "1000")
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


# Ctrl+C at the racy moment, made deterministic: the process sends itself SIGINT the instant the Hugging
# Face trainer is being built (after the handler is installed and the checkpoints folder exists, which is
# when the test above sends it, "while the model loads or during the first steps"). The trainer adapter
# used to swap the process's sys.stderr for a StringIO around that constructor (to swallow a tqdm bar), so
# the handler's message, printed by a console that writes to whatever sys.stderr is, went into the
# StringIO: exit 130 with an empty stderr, the flake seen once in eight CI runs.
_INTERRUPT_WHILE_BUILDING = """
import os, signal, sys
from sentence_transformers.sentence_transformer import trainer
built = trainer.SentenceTransformerTrainer.__init__
def interrupted(self, *args, **kwargs):
    os.kill(os.getpid(), signal.SIGINT)
    built(self, *args, **kwargs)
trainer.SentenceTransformerTrainer.__init__ = interrupted
from paperfeed.cli import main
sys.argv = ["paperfeed", *sys.argv[1:]]
main()
"""


def test_ctrl_c_while_the_trainer_is_built_is_said_and_saved(tmp_path: Path, shared_dir: Path) -> None:
    data = make_instance(tmp_path, shared_dir, 48)
    cmd = [sys.executable, "-c", _INTERRUPT_WHILE_BUILDING, "--data-dir", str(data), "model", "adapt"]
    env = {
        **os.environ,
        "PAPERFEED_EMBEDDING_BACKEND": "torch",
        "PYTHONUNBUFFERED": "1",
        "HF_HUB_OFFLINE": "1",
    }
    done = subprocess.run(
        [*cmd, *TRAIN_OPTIONS, *EVAL_OPTIONS, "--save-steps", "1000"],  # the last --save-steps wins
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert done.returncode == 130, done.stderr
    assert "stopping after this step and saving a checkpoint" in done.stderr
    assert "Computing widget examples" not in done.stderr  # the library's bar stays out of ours
    assert "stopped at step 1 of 5" in " ".join(done.stdout.split())
    assert _checkpoints(data) == [1]
