"""A language server defined only by configuration is the same object as a built-in: here pylsp
and bash-language-server as `[lsp.servers.*]` entries in `.livetools.toml`, the built-ins of their
languages disabled by the same file, answer definitions and diagnostics on write; status names
the configured server; a built-in's settings change key by key."""

from __future__ import annotations

from pathlib import Path

from tests.lsp.conftest import lsp_run
from tests.support import require_binary

CONFIG = """
[lsp.servers.my-pylsp]
command = ["pylsp"]
extensions = [".py"]
root_markers = ["pyproject.toml"]
settings = { pylsp = { plugins = { pycodestyle = { enabled = false } } } }

[lsp.servers.basedpyright]
disabled = true
[lsp.servers.pyright]
disabled = true
[lsp.servers.pylsp]
disabled = true

[lsp.servers.bash-language-server]
checker = ["shellcheck", "-f", "gcc", "-x", "{file}"]
"""


def write(path: Path, text: str) -> None:
    path.write_text(text)


async def test_a_configured_server_answers_like_a_built_in(project, monkeypatch) -> None:
    require_binary("pylsp", "uv sync")
    monkeypatch.setenv("XDG_CONFIG_HOME", "/nonexistent-livetools-config")
    root = project("py")
    write(root / ".livetools.toml", CONFIG)
    async with lsp_run(root) as run:
        r = await run.call(
            "lsp", {"action": "definition", "file": "app.py", "line": 3, "symbol": "Square"}
        )
        assert not r.is_error, r.text
        assert "shapes.py:15: class Square(Shape):" in r.text
        status = await run.call("lsp", {"action": "status"})
        assert "running: my-pylsp root=." in status.text, status.text
        r = await run.call(
            "edit", {"path": "app.py", "old": "big = Square(3.0)\n", "new": "big = Squar(3.0)\n"}
        )
        assert "undefined name 'Squar'" in r.text, r.text
        sup = run.resource("lsp")
        bash = next(s for s in sup.specs if s.id == "bash-language-server")
        assert bash.checker == ("shellcheck", "-f", "gcc", "-x", "{file}")
        assert bash.command == ("bash-language-server", "start")  # unchanged keys stay
        assert not any(s.id in ("basedpyright", "pyright", "pylsp") for s in sup.specs)
