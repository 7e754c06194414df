"""The ``paperfeed`` command starts fast: its import and ``--help`` load none of the heavy stacks.

Each check runs in a fresh interpreter (this test process has imported everything long ago). A command
module that imports the web app, the store, numpy or a model library at module level makes ``--help``
and every command take seconds (bench/cli_speed.py measures it); this test names the module to blame.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
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


def test_root_help_loads_no_command_module_and_no_rich() -> None:
    """``paperfeed --help`` lists the commands from COMMANDS: no command's module is imported, and the
    help is click's plain one (rich's help renderer cost more than the whole start-up budget)."""
    body = (
        "from paperfeed.cli import main\n"
        "sys.argv = ['paperfeed', '--help']\n"
        "try:\n"
        "    main()\n"
        "except SystemExit:\n"
        "    pass\n"
    )
    code = body + (
        "import orjson\n"
        "mods = [m for m in sys.modules if m.startswith('paperfeed.cli.') or m.split('.')[0] == 'rich']\n"
        "print(orjson.dumps(sorted(mods)).decode())\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", "import sys\n" + code], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    assert "Commands:" in done.stdout
    assert "search" in done.stdout
    assert orjson.loads(done.stdout.strip().splitlines()[-1]) == ["paperfeed.cli.context"]


def test_the_lazy_root_lists_every_command_with_its_own_summary() -> None:
    """COMMANDS (what the root lists without importing the modules) names every command each module
    defines, with the first paragraph of that command's own help, so ``--help`` cannot drift."""
    from paperfeed.cli import COMMANDS, load_commands

    modules = {module for module, _ in COMMANDS.values()}
    built: dict[str, object] = {}
    for module in modules:
        built.update(load_commands(module))
    assert sorted(built) == sorted(COMMANDS)
    for name, (_, summary) in COMMANDS.items():
        command = built[name]
        first_paragraph = (getattr(command, "help", None) or "").split("\n\n")[0]
        assert " ".join(first_paragraph.split()) == summary, name
    # a module that defines a root command or group is one COMMANDS knows
    cli = ROOT / "src" / "paperfeed" / "cli"
    defining = {
        p.stem
        for p in cli.glob("*.py")
        if "@app.command(" in p.read_text() or "app.add_typer(" in p.read_text()
    }
    assert defining <= modules, defining - modules


def test_an_unknown_command_gets_close_names_suggested() -> None:
    from typer.testing import CliRunner

    from paperfeed.cli import cli_app

    result = CliRunner().invoke(cli_app, ["serch", "graphs"])
    assert result.exit_code == 2
    assert "No such command 'serch'. Did you mean 'search'" in result.output


SEARCH_PROBE = """
import sys, orjson
sys.argv = ["paperfeed", "search", "quokka", "--format", "jsonl"]
from paperfeed.cli import main
try:
    main()
except SystemExit as exc:
    assert exc.code in (0, None), exc.code
print(orjson.dumps(sorted({m.split(".")[0] for m in sys.modules} & {"numpy", "faiss"})).decode())
"""


def _search_in_fresh_process(data: Path) -> tuple[list[str], list[str], str]:
    """(hit ids, vector-stack modules loaded, stderr) of `paperfeed search quokka` in a new process."""
    env = {**os.environ, "PAPERFEED_DATA_DIR": str(data), "PAPERFEED_EMBEDDING_BACKEND": "fake"}
    done = subprocess.run(
        [sys.executable, "-c", SEARCH_PROBE], capture_output=True, text=True, check=False, env=env
    )
    assert done.returncode == 0, done.stderr
    *hits, loaded = done.stdout.strip().splitlines()
    return [orjson.loads(h)["id"] for h in hits], orjson.loads(loaded), done.stderr


def test_a_search_that_cannot_use_vectors_loads_neither_numpy_nor_faiss(tmp_path: Path) -> None:
    """No vector index yet, or one built with another model (the index refused from its manifest):
    the search is keyword-only and starts without the vector stack (docs/cli.md, "Start-up time")."""
    from typer.testing import CliRunner

    from paperfeed.adapters.vector import open_vector_index
    from paperfeed.cli import cli_app
    from paperfeed.domain.search import VectorRecord
    from tests.importing.conftest import rec, write_jsonl

    data = tmp_path / "data"
    papers = [rec("2503.00001", title="Quokka counts"), rec("2503.00002", title="Numbat diets")]
    source = write_jsonl(tmp_path / "papers.jsonl", papers)
    imported = CliRunner().invoke(
        cli_app, ["--data-dir", str(data), "import", str(source)], env={"PAPERFEED_EMBEDDING_BACKEND": "fake"}
    )
    assert imported.exit_code == 0, imported.output

    hits, loaded, _ = _search_in_fresh_process(data)
    assert hits == ["2503.00001"]
    assert loaded == []

    # an index of another model: refused, with the same message opening it gives, and still no NumPy
    index = open_vector_index(data / "vectors", kind="exact", model_id="another-model", dimension=8)
    vector = np.ones(8, dtype=np.float32) / np.sqrt(8)
    index.upsert([VectorRecord("2503.00001", vector, None, (), False)])
    index.save()
    hits, loaded, err = _search_in_fresh_process(data)
    assert hits == ["2503.00001"]
    assert loaded == []
    assert "built with model 'another-model'" in err
    assert "semantic search is unavailable" in err


LOOK_PROBE = """
import sys, orjson
sys.argv = ["paperfeed", *{argv!r}]
from paperfeed.cli import main
try:
    main()
except SystemExit as exc:
    assert exc.code in (0, None), exc.code
heavy = ("sqlalchemy", "pydantic_settings", "alembic", "tantivy", "numpy", "faiss", "asyncio")
print(orjson.dumps(sorted({{m.split(".")[0] for m in sys.modules}} & set(heavy))).decode())
"""


def _look(data: Path, *argv: str) -> tuple[list[str], list[str]]:
    """(output lines, heavy modules loaded) of ``paperfeed ARGV`` in a fresh process."""
    env = {**os.environ, "PAPERFEED_DATA_DIR": str(data), "PAPERFEED_EMBEDDING_BACKEND": "fake"}
    code = LOOK_PROBE.format(argv=list(argv))
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False, env=env)
    assert done.returncode == 0, done.stderr
    *lines, loaded = done.stdout.strip().splitlines()
    return lines, orjson.loads(loaded)


def _imported_store(tmp_path: Path) -> Path:
    from typer.testing import CliRunner

    from paperfeed.cli import cli_app
    from tests.importing.conftest import rec, write_jsonl

    data = tmp_path / "data"
    papers = [rec("2503.00001", title="Quokka counts"), rec("2503.00002", title="Numbat diets")]
    source = write_jsonl(tmp_path / "papers.jsonl", papers)
    imported = CliRunner().invoke(
        cli_app, ["--data-dir", str(data), "import", str(source)], env={"PAPERFEED_EMBEDDING_BACKEND": "fake"}
    )
    assert imported.exit_code == 0, imported.output
    return data


def test_stats_and_a_keyword_search_start_without_sqlalchemy_or_pydantic_settings(tmp_path: Path) -> None:
    """On a SQLite store at the current schema, ``stats`` reads through the stdlib driver and a keyword
    search opens a current tantivy index for searching only: neither imports SQLAlchemy, Alembic or
    pydantic-settings (its asyncio included), and ``stats`` not tantivy either (docs/cli.md)."""
    from paperfeed.adapters.store import open_store

    data = _imported_store(tmp_path)
    lines, loaded = _look(data, "stats", "--json")
    assert loaded == []
    fast = orjson.loads(lines[-1])
    store = open_store(f"sqlite+pysqlite:///{data / 'paperfeed.db'}")
    try:  # the same answer as the SQL store's
        assert fast == {
            **orjson.loads(orjson.dumps(store.stats())),
            **orjson.loads(orjson.dumps(store.derived_stats())),
        }
    finally:
        store.close()
    assert fast["papers"] == 2
    lines, loaded = _look(data, "stats")
    assert loaded == []
    assert any("papers" in line and "2" in line for line in lines)

    lines, loaded = _look(data, "search", "quokka", "--format", "jsonl")
    assert [orjson.loads(line)["id"] for line in lines] == ["2503.00001"]
    assert loaded == ["tantivy"]


def test_a_search_behind_the_store_catches_up_first(tmp_path: Path) -> None:
    """Papers written while no keyword index followed (here: straight into the store) make the index
    stale: the search then opens it with the store, which catches it up, and finds them."""
    from paperfeed.adapters.store import open_store
    from paperfeed.domain.ingest import Batch
    from paperfeed.domain.models import Paper

    data = _imported_store(tmp_path)
    store = open_store(f"sqlite+pysqlite:///{data / 'paperfeed.db'}")
    try:
        store.apply_batch(Batch(papers=[Paper(id="2503.00003", title="Wombat burrows", sources={"x": "1"})]))
    finally:
        store.close()
    lines, loaded = _look(data, "search", "wombat", "--format", "jsonl")
    assert [orjson.loads(line)["id"] for line in lines] == ["2503.00003"]
    assert "sqlalchemy" in loaded  # the full path, not the read-only one
    lines, loaded = _look(data, "search", "wombat", "--format", "jsonl")  # caught up: fast again
    assert [orjson.loads(line)["id"] for line in lines] == ["2503.00003"]
    assert "sqlalchemy" not in loaded


def test_stats_of_a_new_data_folder_creates_the_store(tmp_path: Path) -> None:
    lines, loaded = _look(tmp_path / "new", "stats", "--json")
    assert orjson.loads(lines[-1])["papers"] == 0
    assert "sqlalchemy" in loaded  # nothing to read yet: the SQL store creates it
    assert (tmp_path / "new" / "paperfeed.db").is_file()
