"""The built wheel holds every file of the package (issue #30, item 3).

`pip wheel .` left out 20 files -- the templates of four folders and Alembic's script template -- because
package data was listed folder by folder; CI installed in editable mode and never saw it. This builds the
wheel the way a user's `pip install .` does and compares it with the source tree. The first-hour test
(tests/first_hour) then runs the product from a wheel installed in a fresh venv.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.slow


def test_the_wheel_holds_every_file_of_the_source_package(tmp_path: Path) -> None:
    project = tmp_path / "project"  # a clean copy: a build/ folder left by an earlier build would mask it
    project.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, project / name)
    shutil.copytree(ROOT / "src", project / "src", ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(tmp_path),
            str(project),
        ],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=project,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    (wheel,) = tmp_path.glob("paperfeed-*.whl")
    packaged = set(zipfile.ZipFile(wheel).namelist())
    source = ROOT / "src"
    expected = {
        path.relative_to(source).as_posix()
        for path in (source / "paperfeed").rglob("*")
        if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc"
    }
    missing = sorted(expected - packaged)
    assert not missing, f"{len(missing)} files of src/ are not in the wheel: {missing}"
    assert "paperfeed/web/templates/library/library.html" in packaged
    assert "paperfeed/adapters/store/migrations/script.py.mako" in packaged
