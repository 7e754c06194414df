"""Documentation tests: a setting, command or set-up step that is not documented fails the build."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import typer.main

from paperfeed.cli import cli_app as app

ROOT = Path(__file__).resolve().parents[1]
DOCS = "\n".join(p.read_text() for p in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))])


def _commands(group: Any, prefix: str = "paperfeed") -> list[str]:
    """Every command and sub-command name (typer ships its own click, so go by shape, not class;
    through list_commands/get_command, as the root loads its commands lazily)."""
    found = []
    ctx = group.make_context(prefix, [], resilient_parsing=True)
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        found.append(f"{prefix} {name}")
        if hasattr(command, "list_commands"):
            found.extend(_commands(command, f"{prefix} {name}"))
    return found


def test_configuration_doc_matches_the_settings() -> None:
    result = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "gen_config_doc.py"), "--check"], check=False
    )
    assert result.returncode == 0, "docs/configuration.md is stale: run scripts/gen_config_doc.py"


def test_every_cli_command_is_documented() -> None:
    group = typer.main.get_command(app)
    assert hasattr(group, "commands")
    missing = [c for c in _commands(group) if c not in DOCS]
    assert not missing, f"commands missing from README/docs: {missing}"


def test_readme_first_screen_has_exactly_the_two_setup_commands() -> None:
    first_screen = "\n".join((ROOT / "README.md").read_text().splitlines()[:40])
    block = re.search(r"```sh\n(.*?)```", first_screen, re.DOTALL)
    assert block is not None
    commands = [line.split("#")[0].strip() for line in block.group(1).splitlines() if line.strip()]
    assert commands == ["make run", "make test"]
    ci = (ROOT / ".ci" / "run").read_text()
    assert "make test" in ci


def test_docs_link_to_files_that_exist() -> None:
    for target in re.findall(r"\]\(((?:docs/)?[\w./-]+\.md)\)", (ROOT / "README.md").read_text()):
        assert (ROOT / target).exists(), target
