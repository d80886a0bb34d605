"""The npm web-and-data servers on real registry projects (issue 33 §2): our `lsp` answers against
a raw client of the same server (tests/lsp/differential.py), and diagnostics of unmodified files
against the server's own CLI where it has one. Installed by plugins/lsp/deps/npm.sh; projects in
scripts/corpus.d/npm-servers.toml (bootstrap, html5-boilerplate and ansible-core: corpus.toml)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from livetools_lsp.servers import BUILTIN
from livetools_lsp.spec import ServerSpec
from tests.corpus import realworld, sample
from tests.lsp import differential as harness
from tests.lsp.differential import Case, Position, check, differential

NPM = "bash plugins/lsp/deps/npm.sh"
OUTLINE = ("symbols", "hover")
ALL = ("symbols", "definition", "references", "hover")


_KEY = re.compile(r'"([A-Za-z_$][\w$-]*)"\s*:')


def _key_positions(root: Path, files: list[Path], count: int) -> list[Position]:
    """JSON keys that occur once on their line: the harness's positions skip everything inside
    quotes, which in JSON is every name."""
    pool: list[Position] = []
    for path in files:
        rel = path.relative_to(root).as_posix()
        for number, content in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            for m in _KEY.finditer(content):
                if content.count(m.group(1)) == 1:
                    pool.append(Position(rel, number, m.group(1), m.start(1)))
    return sample(pool, count, seed=12)


def _spec(server: str) -> ServerSpec:
    return next(s for s in BUILTIN if s.id == server)


def _case(project: str, server: str, language: str, suffix: str, **kw: Any) -> Case:
    """A case whose raw server gets the spec's own argv, settings and init options."""
    spec = _spec(server)
    init = dict(spec.init_options) if spec.init_options else None
    return Case(
        project,
        server,
        spec.command,
        language,
        (suffix,),
        settings=dict(spec.settings),
        init_options=kw.pop("init_options", init),
        package=NPM,
        **kw,
    )


CASES = [
    _case("ajv", "vscode-json-language-server", "json", ".json", actions=OUTLINE),
    _case(
        "reveal-js", "vscode-css-language-server", "css", ".css", under="dist/theme", actions=ALL
    ),
    _case("bootstrap-scss", "vscode-css-language-server", "scss", ".scss", actions=ALL),
    _case("html5-boilerplate", "vscode-html-language-server", "html", ".html", actions=OUTLINE),
    _case("reveal-js", "vscode-html-language-server", "html", ".html", actions=OUTLINE),
    _case(
        "ansible-core",
        "yaml-language-server",
        "yaml",
        ".yml",
        under="lib/ansible/plugins/filter",
        actions=OUTLINE,
    ),
    _case("monolog", "intelephense", "php", ".php", actions=ALL),
]


@realworld
@pytest.mark.parametrize("case", CASES, ids=[f"{c.server}-{c.project}" for c in CASES])
async def test_npm_server_agrees_with_a_raw_client(
    tmp_path: Path, case: Case, monkeypatch: pytest.MonkeyPatch
) -> None:
    if case.language in ("json", "jsonc"):
        monkeypatch.setattr(harness, "positions", _key_positions)
    check(await differential(case, tmp_path), case)
