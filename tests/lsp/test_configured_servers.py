"""A language server defined only by configuration is the same object as a built-in: here pylsp
and bash-language-server as `[lsp.servers.*]` entries in `.livetools.toml`, the built-ins of their
languages disabled by the same file, answer definitions and diagnostics on write; status names
the configured server; a built-in's settings change key by key."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from livetools import Host
from livetools.options import OptionError
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


LSP_JSON = {
    "my-pylsp": {
        "command": "pylsp",
        "args": [],
        "extensionToLanguage": {".py": "python"},
        "settings": {"pylsp": {"plugins": {"pycodestyle": {"enabled": False}}}},
        "startupTimeout": 30000,
    }
}
PYTHON_OFF = "[lsp.servers.basedpyright]\ndisabled = true\n[lsp.servers.pyright]\ndisabled = true\n"


async def test_a_claude_code_lsp_json_works_unchanged(project, monkeypatch) -> None:
    """`.lsp.json` as a Claude Code plugin ships it: the server answers like a built-in, and
    status says where it came from; `.livetools.toml` still wins over it key by key."""
    require_binary("pylsp", "uv sync")
    monkeypatch.setenv("XDG_CONFIG_HOME", "/nonexistent-livetools-config")
    root = project("py")
    write(root / ".lsp.json", json.dumps(LSP_JSON))
    write(root / ".livetools.toml", PYTHON_OFF + "[lsp.servers.pylsp]\ndisabled = true\n")
    async with lsp_run(root) as run:
        r = await run.call(
            "lsp", {"action": "definition", "file": "app.py", "line": 3, "symbol": "Square"}
        )
        assert "shapes.py:15: class Square(Shape):" in r.text, r.text
        assert run.option_sources["lsp.servers.my-pylsp.command"] == ".lsp.json"
        status = await run.call("lsp", {"action": "status"})
        assert "running: my-pylsp root=." in status.text, status.text


@pytest.mark.parametrize(
    ("entry", "said"),
    [
        ({"command": "x", "extensionToLanguage": {".x": "x"}, "transport": "socket"}, "transport"),
        ({"command": "${CLAUDE_PLUGIN_ROOT}/bin/x", "extensionToLanguage": {".x": "x"}}, "only"),
        ({"command": "x"}, "extensionToLanguage must map suffixes"),
        ({"command": "x", "extensionToLanguage": {".x": "x"}, "restart": True}, "restart is not"),
        ({"command": ["x"], "extensionToLanguage": {".x": "x"}}, "command must be a non-empty"),
    ],
)
async def test_a_bad_lsp_json_entry_is_named(tmp_path: Path, entry: dict, said: str) -> None:
    write(tmp_path / ".lsp.json", json.dumps({"srv": entry}))
    with pytest.raises(OptionError) as caught:
        await Host().open_run(tmp_path)
    assert str(caught.value).startswith(".lsp.json: server 'srv': "), caught.value
    assert said in str(caught.value), caught.value


async def test_an_untrusted_lsp_json_starts_nothing(tmp_path: Path, monkeypatch) -> None:
    marker = tmp_path / "STARTED"
    entry = {
        "command": "sh",
        "args": ["-c", f"touch {marker}"],
        "extensionToLanguage": {".zz": "z"},
    }
    write(tmp_path / ".lsp.json", json.dumps({"evil": entry}))
    write(tmp_path / "a.zz", "x\n")
    options = {"trust_project_config": False}
    async with Host().open_run(tmp_path, options=options) as run:
        r = await run.call("lsp", {"action": "symbols", "file": "a.zz"})
        assert r.is_error and "no language server handles .zz files" in r.text, r.text
        assert any(".lsp.json: ignored lsp.servers" in p for p in run.problems), run.problems
    assert not marker.exists()
