"""The ``paperfeed`` command starts fast: its import and ``--help`` load none of the heavy stacks.

Each check runs in a fresh interpreter (this test process has imported everything long ago). A command
module that imports the web app, the store, numpy or a model library at module level makes ``--help``
and every command take seconds (bench/cli_speed.py measures it); this test names the module to blame.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import orjson
import pytest

ROOT = Path(__file__).resolve().parents[1]
HEAVY = (
    "torch",
    "transformers",
    "fastapi",
    "sqlalchemy",
    "numpy",
    "onnxruntime",
    "tantivy",
    "faiss",
    "starlette",
    "uvicorn",
    "alembic",
    "email_validator",
)
# typer itself validates the options of a command it runs through pydantic (a sub-command's --help runs
# the root callback), so pydantic is kept out of the import and of the root --help only
NO_PYDANTIC = {"pydantic", "pydantic_core", "pydantic_settings"}

PROBE = """
import sys, orjson
{body}
heavy = {heavy!r} + ("pydantic", "pydantic_core", "pydantic_settings")
print(orjson.dumps(sorted(m for m in sys.modules if m.split(".")[0] in heavy)).decode())
"""


def _loaded(body: str) -> list[str]:
    code = PROBE.format(body=body, heavy=HEAVY)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    modules: list[str] = orjson.loads(done.stdout.strip().splitlines()[-1])
    return modules


def _culprits(modules: list[str]) -> set[str]:
    return {m.split(".")[0] for m in modules}


def test_importing_the_cli_loads_no_heavy_library() -> None:
    assert _culprits(_loaded("import paperfeed.cli")) == set()


def test_root_help_does_not_even_load_pydantic() -> None:
    body = (
        "from paperfeed.cli import main\n"
        "sys.argv = ['paperfeed', '--help']\n"
        "try:\n"
        "    main()\n"
        "except SystemExit:\n"
        "    pass\n"
    )
    assert _culprits(_loaded(body)) == set()


@pytest.mark.parametrize(
    "argv",
    [["--help"], ["search", "--help"], ["similar", "--help"], ["stats", "--help"], ["digest", "--help"]],
    ids=lambda a: " ".join(a),
)
def test_help_loads_no_heavy_library(argv: list[str]) -> None:
    body = (
        "from paperfeed.cli import cli_app\n"
        "try:\n"
        f"    cli_app({argv!r}, prog_name='paperfeed')\n"
        "except SystemExit as exc:\n"
        "    assert exc.code in (0, None), exc.code\n"
    )
    assert _culprits(_loaded(body)) - NO_PYDANTIC == set()


def test_the_installed_command_prints_help() -> None:
    """The real entry point, as a person runs it (``python -m paperfeed`` is the same ``main``)."""
    done = subprocess.run(
        [sys.executable, "-m", "paperfeed", "--help"], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    for command in ("search", "similar", "stats", "import", "serve", "index"):
        assert command in done.stdout
