"""A short run of ``bench/faults.py``: kill -9 of the importer, harvester, indexer and digest sender —
once at a random moment, once when a random share of the work is committed (seeded) — then a rerun;
nothing lost or doubled, ``paperfeed check`` clean."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from bench import faults

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("target", ["import", "index", "digest"])
def test_kill_9_then_rerun(target: str, tmp_path: Path) -> None:
    trials = faults.TARGETS[target](tmp_path, 2, random.Random(11), lambda _trial: None)
    assert len(trials) == 2
    assert [t.problems for t in trials] == [[], []]
    assert all(t.rerun_code == 0 for t in trials)
    assert trials[1].killed  # the second kill waits for committed work: it always hits a running job
    assert trials[1].done > 0  # and some work was committed before it


@pytest.mark.shared
def test_kill_9_the_harvester_then_rerun(shared_dir: Path, tmp_path: Path) -> None:
    trials = faults.TARGETS["harvest"](tmp_path, 2, random.Random(11), lambda _trial: None)
    assert [t.problems for t in trials] == [[], []]
    assert trials[1].killed
