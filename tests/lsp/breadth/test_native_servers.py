"""Breadth: servers for native, shell and scripting languages on real registry projects (the
harness is tests/lsp/differential.py). Each case compares our `lsp` answers with a raw client of
a second process of the same server; where the server wraps a CLI checker (shellcheck, ...), our
`diagnostics` of unmodified files are counted against that CLI."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.corpus import realworld
from tests.lsp.differential import Case, Outcome, check, differential
from tests.support import missing

# -- where servers outside PATH live -------------------------------------------------------------


def ts7_bin() -> Path:
    """TypeScript 7's tsc (the native port, `tsc --lsp`), which plugins/lsp/test-deps.sh installs
    in the user cache beside the global TypeScript 6 (LIVETOOLS_TS7_BIN names another folder)."""
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    folder = Path(os.environ.get("LIVETOOLS_TS7_BIN") or cache / "livetools" / "ts7/node_modules/.bin")
    if not (folder / "tsc").exists():
        missing(f"TypeScript 7's tsc not in {folder}: run plugins/lsp/test-deps.sh")
    return folder


# -- project setups ------------------------------------------------------------------------------


def _rxjs(root: Path) -> None:
    """rxjs ships no tsconfig.json in its package: the one its repository builds src/ with."""
    config = {
        "compilerOptions": {
            "strict": True,
            "target": "es2017",
            "lib": ["es2018", "dom"],
            "skipLibCheck": True,
            "baseUrl": ".",
            "paths": {"rxjs": ["./"], "rxjs/*": ["./*"]},
        },
        "include": ["./**/*.ts"],
    }
    (root / "src" / "tsconfig.json").write_text(json.dumps(config))


# -- the cases -----------------------------------------------------------------------------------

CASES = [
    Case(
        "rxjs",
        "tsgo",
        ("tsc", "--lsp", "--stdio"),
        "typescript",
        (".ts",),
        "src/internal",
        _rxjs,
        actions=("symbols", "definition", "references", "hover"),
        server_root="src",
        package="typescript@7 (plugins/lsp/test-deps.sh)",
    ),
    Case(
        "bats",
        "bash-language-server",
        ("bash-language-server", "start"),
        "shellscript",
        (".bash",),
        "lib",
        actions=("symbols", "definition", "references", "hover"),
        package="npm install -g bash-language-server@5.8.1",
    ),
]


@realworld
@pytest.mark.parametrize("case", CASES, ids=[c.server for c in CASES])
async def test_navigation_agrees_with_a_raw_client(
    tmp_path: Path, case: Case, monkeypatch: pytest.MonkeyPatch
) -> None:
    if case.server == "tsgo":  # its `tsc` ahead of the global TypeScript 6's, for both sides
        monkeypatch.setenv("PATH", f"{ts7_bin()}{os.pathsep}{os.environ['PATH']}")
    for name, value in case.env.items():
        monkeypatch.setenv(name, value)
    outcome = await differential(case, tmp_path)
    print("\n" + tally(outcome, case))
    check(outcome, case)


def tally(outcome: Outcome, case: Case) -> str:
    """Agreement per action (the harness counts only the total), for the report's table."""
    parts = []
    for action in case.actions:
        total = case.files if action == "symbols" else case.positions
        total = min(total, outcome.total)
        differ = sum(d.startswith(action + " ") for d in outcome.differences)
        parts.append(f"{action} {total - differ}/{total}")
    return f"{case.server} on {case.project}: " + ", ".join(parts)
