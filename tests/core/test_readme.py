"""The README's Python snippet runs exactly as printed, against a real language server."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from tests.support import require_binary

README = Path(__file__).resolve().parents[2] / "README.md"


def python_blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), re.S)


def test_readme_python_snippet_runs_as_printed(tmp_path: Path) -> None:
    require_binary("basedpyright-langserver", "uv sync (basedpyright comes with livetools-lsp)")
    (snippet,) = python_blocks()
    (tmp_path / "app.py").write_text("def parse(text: str) -> str:\n    return text.strip()\n")
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "app"\nversion = "0"\n')
    script = tmp_path.parent / f"{tmp_path.name}-readme.py"
    script.write_text(snippet, encoding="utf-8")
    out = subprocess.run(
        [sys.executable, str(script)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert re.fullmatch(r"\d+ tools for the model", lines[0]), lines
    assert "def parse(text: str) -> str" in out.stdout
    # The write returned `text` where an int is declared: the LSP plugin's note says so.
    assert "app.py:2" in lines[-1] and "int" in lines[-1], lines[-1]
