"""Linters beside the navigating server (issue 33 §2): ruff's language server, configured as a
linter, runs where the project configures ruff; its items appear in `lsp diagnostics` and in a
write's report labelled with their source, counted in their own ledger account, and agree with
`ruff check` on real code (click from the corpus). Without the project's ruff configuration the
linter is not started."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from typing import Any

from tests.corpus import corpus_copy, realworld, sample
from tests.lsp.conftest import lsp_run
from tests.support import require_binary

RUFF: dict[str, Any] = {
    "command": ["ruff", "server"],
    "extensions": [".py", ".pyi"],
    "root_markers": ["ruff.toml", ".ruff.toml", "pyproject.toml:[tool.ruff"],
    "linter": True,
}
RULES = '[lint]\nselect = ["F", "E9", "B"]\n'


def _servers(**extra: Any) -> dict[str, Any]:
    return {"servers": {"ruff-lint": RUFF, **extra}}


async def _ruff_check(root: Path, files: list[str]) -> dict[str, list[tuple[int, str]]]:
    proc = await asyncio.create_subprocess_exec(
        require_binary("ruff", "uv sync"),
        "check",
        "--output-format",
        "json",
        "--no-cache",
        *files,
        cwd=root,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, _ = await asyncio.wait_for(proc.communicate(), 120)
    return _by_file(json.loads(out), root, files)


def _by_file(items: list[Any], root: Path, files: list[str]) -> dict[str, list[tuple[int, str]]]:
    found: dict[str, list[tuple[int, str]]] = {f: [] for f in files}
    for item in items:
        rel = os.path.relpath(item["filename"], root.resolve()).replace(os.sep, "/")
        found[rel].append((item["location"]["row"], item["code"]))
    return found


@realworld
async def test_linter_items_agree_with_ruff_check(tmp_path: Path) -> None:
    root = corpus_copy("click", tmp_path)
    (root / "ruff.toml").write_text(RULES)
    pool = sorted(p.relative_to(root).as_posix() for p in (root / "src/click").glob("*.py"))
    files = sample(pool, 4, seed=7)
    cli = await _ruff_check(root, files)
    agreed = 0
    async with lsp_run(root, ["basedpyright"], **_servers()) as run:
        for rel in files:
            r = await run.call("lsp", {"action": "diagnostics", "file": rel})
            assert not r.is_error, r.text
            ours = sorted(
                (d["line"], d["code"])
                for d in (r.data or {}).get("diagnostics", [])
                if d.get("source") == "ruff-lint"
            )
            agreed += ours == sorted(cli[rel])
            print(f"{rel}: ours {len(ours)} ruff items, ruff check {len(cli[rel])}")
    assert agreed == len(files)


@realworld
async def test_a_write_reports_ruff_beside_basedpyright(tmp_path: Path) -> None:
    require_binary("basedpyright", "uv sync")
    root = corpus_copy("click", tmp_path)
    (root / "ruff.toml").write_text(RULES)
    rel = "src/click/globals.py"
    text = (root / rel).read_text()
    async with lsp_run(root, ["basedpyright"], **_servers()) as run:
        before = await run.call("lsp", {"action": "diagnostics", "file": rel})
        assert not before.is_error, before.text
        broken = "import fnmatch\n" + text + "\nnot_defined_anywhere(1)\n"
        r = await run.call("write", {"path": rel, "content": broken})
        assert not r.is_error, r.text
        assert "[F401] (ruff-lint)" in r.text, r.text  # the unused import, labelled
        assert "(basedpyright)" in r.text and "not_defined_anywhere" in r.text, r.text
        # Each source's account: writing the same breakage again is not news.
        again = await run.call("write", {"path": rel, "content": broken + "\n"})
        assert "new diagnostics" not in again.text, again.text
        status = await run.call("lsp", {"action": "status"})
        assert "ruff-lint lints .py .pyi" in status.text, status.text


async def test_no_project_configuration_no_linter(project) -> None:
    require_binary("ruff", "uv sync")
    root = project("py")
    async with lsp_run(root, ["basedpyright"], **_servers()) as run:
        r = await run.call("lsp", {"action": "diagnostics", "file": "app.py"})
        assert "ruff-lint" not in r.text, r.text
        sup = run.resource("lsp")
        assert not any(s.spec.linter for s in sup.servers.values())
        status = await run.call("lsp", {"action": "status"})
        assert "not usable: ruff-lint: marker missing" in status.text, status.text


async def test_a_linter_alone_still_checks(project) -> None:
    """With every navigating Python server disabled, diagnostics come from the linter and a
    navigation question says no server answers it."""
    require_binary("ruff", "uv sync")
    root = project("py")
    (root / "ruff.toml").write_text(RULES)
    off = {"disabled": True}
    options = _servers(basedpyright=off, pyright=off, pylsp=off)
    for other in ("jedi-language-server", "ty", "pyrefly", "ruff"):
        options["servers"][other] = off
    async with lsp_run(root, **options) as run:
        r = await run.call("write", {"path": "extra.py", "content": "import os\n"})
        assert "[F401]" in r.text and "ruff-lint" in r.text, r.text
        r = await run.call("lsp", {"action": "diagnostics", "file": "extra.py"})
        assert "1 warning (ruff-lint)" in r.text or "1 error (ruff-lint)" in r.text, r.text
        r = await run.call(
            "lsp", {"action": "definition", "file": "app.py", "line": 1, "symbol": "Square"}
        )
        assert r.is_error, r.text


def test_each_server_keeps_a_share_of_the_cap() -> None:
    """Under the cap, a linter's few items are not pushed out by the type checker's many
    (requests' models.py: basedpyright 444 items, ruff 13, the cap 100)."""
    from livetools_lsp.actions import _shares

    items = [("basedpyright", i) for i in range(444)] + [("ruff", 1000 + i) for i in range(13)]
    items.sort(key=lambda pair: pair[1] % 500)
    kept = _shares(items, 100)
    assert len(kept) == 100
    assert sum(1 for source, _ in kept if source == "ruff") == 13
    assert [pair for pair in items if pair in kept] == kept  # in the list's own order
