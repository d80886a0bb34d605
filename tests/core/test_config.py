"""One configuration (issue 33 §1): the user file, pyproject `[tool.livetools]`, `.livetools.toml`,
the environment and the run option, later winning key by key, each checked against the families'
declarations with an error naming file, option and expected type; `trust_project_config = false`
keeps a checkout's files from starting programs; status says where each entry came from."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from livetools import Host
from livetools.faces.status import render_status, status_report
from livetools.options import OptionError


def put(path: Path, text: str) -> None:
    path.write_text(text)


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    config = tmp_path / "xdg"
    (config / "livetools").mkdir(parents=True)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(config))
    monkeypatch.delenv("LIVETOOLS_OPTIONS", raising=False)
    return config / "livetools" / "config.toml"


@pytest.fixture
def root(tmp_path: Path) -> Path:
    path = tmp_path / "project"
    path.mkdir()
    return path


async def test_layers_win_key_by_key(home: Path, root: Path, monkeypatch) -> None:
    put(home, "[lsp]\nrequest_timeout = 10\nready_timeout = 11\ninit_timeout = 12\n")
    put(
        root / "pyproject.toml",
        "[project]\nname = 'p'\n\n[tool.livetools.lsp]\nrequest_timeout = 20\nready_timeout = 21\n"
        "\n[tool.livetools.vibe]\nfast = 'a-worker {prompt}'\n",  # vibe's own table: left to it
    )
    put(root / ".livetools.toml", "[lsp]\nrequest_timeout = 30\n")
    monkeypatch.setenv("LIVETOOLS_OPTIONS", json.dumps({"lsp": {"request_timeout": "40"}}))
    async with Host().open_run(root) as run:
        lsp = run.options["lsp"]
        assert (lsp["request_timeout"], lsp["ready_timeout"], lsp["init_timeout"]) == (40.0, 21, 12)
        sources = run.option_sources
        assert sources["lsp.request_timeout"] == "$LIVETOOLS_OPTIONS"
        assert sources["lsp.ready_timeout"] == "pyproject.toml [tool.livetools]"
        assert sources["lsp.init_timeout"].startswith("user file ")
        text = render_status(await status_report(run.host, run))
        assert "configured: lsp.ready_timeout from pyproject.toml [tool.livetools]" in text
    async with Host().open_run(root, options={"lsp": {"request_timeout": 50}}) as run:
        assert run.options["lsp"]["request_timeout"] == 50.0


@pytest.mark.parametrize(
    ("where", "text", "error"),
    [
        (
            ".livetools.toml",
            "[lsp]\nrequest_timeout = 'abc'\n",
            ".livetools.toml: option lsp.request_timeout: expected a number of seconds",
        ),
        (".livetools.toml", "[lsp\n", ".livetools.toml: not valid TOML"),
        (
            ".livetools.toml",
            "[lsp.servers.jdtls]\ncommand = 'jdtls'\nextensions = ['.java']\n",
            ".livetools.toml: option lsp.servers.jdtls: expected command as a list of strings",
        ),
        (
            ".livetools.toml",
            "[lsp.servers.x]\ncommand = ['x']\nextensions = ['java']\n",
            'expected extensions as suffixes starting with "."',
        ),
        (
            "pyproject.toml",
            "[tool.livetools]\nreqest_timeout = 1\n",
            "pyproject.toml [tool.livetools]: unknown option reqest_timeout",
        ),
        ("user", "[lsp]\nprefer = 3\n", "option lsp.prefer: expected a list of names"),
    ],
)
async def test_a_bad_entry_is_one_error_naming_file_option_and_type(
    home: Path, root: Path, where: str, text: str, error: str
) -> None:
    put(home if where == "user" else root / where, text)
    with pytest.raises(OptionError) as caught:
        Host().open_run(root)
    assert error in str(caught.value), str(caught.value)
    if where == "user":
        assert str(caught.value).startswith(f"user file {home}: ")


async def test_an_untrusted_checkout_starts_nothing_it_names(home: Path, root: Path) -> None:
    marker = root / "STARTED"
    put(
        root / ".livetools.toml",
        "trust_project_config = true\n\n[lsp.servers.evil]\n"
        f"command = ['sh', '-c', 'touch {marker}']\nprobe = ['true']\nextensions = ['.zz']\n",
    )
    put(root / "a.zz", "x\n")
    put(home, "trust_project_config = false\n")
    async with Host().open_run(root) as run:
        r = await run.call("lsp", {"action": "symbols", "file": "a.zz"})
        assert r.is_error and "no language server handles .zz files" in r.text, r.text
        problems = " ".join(run.problems)
        assert "ignored lsp.servers (trust_project_config = false" in problems
        assert "trust_project_config is taken from the user file or the run only" in problems
    assert not marker.exists()
    put(home, "")  # trusted (the default): the same file starts its program
    async with Host().open_run(root) as run:
        await run.call("lsp", {"action": "symbols", "file": "a.zz"})
    assert marker.exists()


async def test_no_server_for_a_suffix_says_how_to_add_one(home: Path, root: Path) -> None:
    put(root / "A.java", "class A {}\n")
    async with Host().open_run(root) as run:
        r = await run.call("lsp", {"action": "symbols", "file": "A.java"})
    assert r.is_error and "add one in .livetools.toml (jdtls" in r.text, r.text
    assert '[lsp.servers.jdtls] command = ["jdtls"], extensions = [".java"]' in r.text


async def test_the_schemas_do_not_grow_with_servers_or_adapters(home: Path, root: Path) -> None:
    def size(run) -> int:
        return len(json.dumps(run.schemas("agent", format="mcp"), separators=(",", ":")))

    async with Host().open_run(root) as run:
        before = size(run)
    servers = "".join(
        f"[lsp.servers.s{i}]\ncommand = ['s{i}']\nextensions = ['.e{i}']\n"
        f"[debug.adapters.a{i}]\ncommand = ['a{i}']\nextensions = ['.e{i}']\n"
        f"[debug.adapters.a{i}.launch]\nprogram = '${{program}}'\n"
        for i in range(30)
    )
    put(root / ".livetools.toml", servers)
    async with Host().open_run(root) as run:
        assert size(run) == before


def test_an_untrusted_checkout_names_no_vibe_worker(root: Path) -> None:
    """vibe reads its own `[vibe]` table of the project's files: a worker command is a program,
    so with trust_project_config = false the table is not read at all."""
    from livetools_vibe.config import load

    put(root / ".livetools.toml", "[vibe]\nfast = 'sh -c \"touch X\" {prompt}'\n")
    assert load(root, {}, {}).templates["fast"][0] == "sh"
    untrusted = load(root, {"trust_project_config": False}, {})
    assert untrusted.templates == {} and "trust_project_config = false" in untrusted.sources[0]
