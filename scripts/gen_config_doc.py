"""Write docs/configuration.md from the Settings model, so every setting is documented exactly once.

.venv/bin/python scripts/gen_config_doc.py          # rewrite the file
.venv/bin/python scripts/gen_config_doc.py --check  # exit 1 if it is out of date (the tests do this)
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from pydantic_core import PydanticUndefined

from paperfeed.settings import Settings

DOC = Path(__file__).resolve().parents[1] / "docs" / "configuration.md"

HEADER = """# Configuration

Every setting is an environment variable prefixed
`PAPERFEED_`; CLI flags such as `--data-dir` override them. Values are validated at start-up: a bad value
stops the command with one line naming the variable and the problem.

This file is generated from `src/paperfeed/settings.py` by `scripts/gen_config_doc.py`; a test fails when
the two disagree.

| variable | default | what |
|---|---|---|
"""


def _default(field: Any) -> str:
    if field.default_factory is not None:
        return (
            "(computed)"
            if field.default_factory.__name__ != "default_data_dir"
            else "`~/.local/share/paperfeed`"
        )
    if field.default is PydanticUndefined or field.default is None:
        return "(none)"
    return f"`{field.default}`"


def render() -> str:
    rows = []
    for name, field in Settings.model_fields.items():
        desc = (field.description or "").replace("|", "\\|")
        rows.append(f"| `PAPERFEED_{name.upper()}` | {_default(field)} | {desc} |")
    return HEADER + "\n".join(rows) + "\n"


def main() -> None:
    text = render()
    if "--check" in sys.argv:
        if not DOC.exists() or DOC.read_text() != text:
            print(f"{DOC} is out of date: run scripts/gen_config_doc.py", file=sys.stderr)
            sys.exit(1)
        return
    DOC.write_text(text)


if __name__ == "__main__":
    main()
