"""Where `status` looks for a sub-project's root marker: one listing of the checkout's first two
levels must find what globbing `*/MARKER` then `*/*/MARKER` per marker found (the oracle below,
the code it replaced), on built trees and on the real-world corpus, without entering the
folders no project lives in."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from livetools_lsp import subprojects as subprojects_module
from livetools_lsp.servers import BUILTIN
from livetools_lsp.subprojects import SKIP_DIRS, Subprojects
from tests.corpus import corpus_project, realworld

MARKER_SETS = [
    *sorted({spec.markers for spec in BUILTIN if spec.markers}),
    ("*.csproj", "*.sln"),
    ("gleam.toml",),
]


def by_glob(root: Path, markers: tuple[str, ...]) -> Path | None:
    for depth in ("*", "*/*"):
        for marker in markers:
            for hit in sorted(root.glob(f"{depth}/{marker}")):
                if not SKIP_DIRS.intersection(hit.relative_to(root).parts):
                    return hit.parent
    return None


def touch(root: Path, *paths: str) -> None:
    for rel in paths:
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text("")


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "checkout"
    touch(
        root,
        "web/package.json",
        "app/tsconfig.json",  # a later marker in an earlier folder
        "node_modules/left-pad/package.json",  # never a sub-project
        "services/api/go.mod",
        "services/web/go.work",  # the earlier marker wins over path order
        "tools/rs/Cargo.toml",
        ".hidden/pubspec.yaml",  # a glob's `*` takes hidden folders too
        "dotnet/App.csproj",
        "a/b/c/pyproject.toml",  # three levels down: not looked at
        "build/gen/compile_commands.json",
        "native/x/compile_flags.txt",
    )
    (root / "gleam").mkdir()
    (root / "gleam" / "gleam.toml").symlink_to(root / "nowhere.toml")  # dangling: no marker
    (root / "linked").symlink_to(root / "tools")  # a linked folder is walked, as by a glob
    return root


@pytest.mark.parametrize("markers", MARKER_SETS, ids="/".join)
def test_the_listing_finds_what_the_globs_found(tree: Path, markers: tuple[str, ...]) -> None:
    assert Subprojects(tree).first_with(markers) == by_glob(tree, markers)


def test_found_where_expected(tree: Path) -> None:
    found = Subprojects(tree)
    assert found.first_with(("tsconfig.json", "jsconfig.json", "package.json")) == tree / "app"
    assert found.first_with(("go.work", "go.mod")) == tree / "services" / "web"
    assert found.first_with(("Cargo.toml",)) == tree / "linked" / "rs"
    assert found.first_with(("gleam.toml",)) is None
    assert found.first_with(("pyproject.toml",)) is None


def test_skipped_folders_are_never_listed(tree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for i in range(50):
        touch(tree, f"node_modules/pkg{i}/package.json", f"target/t{i}/Cargo.toml")
    listed: list[str] = []
    real = os.scandir

    def scandir(path: str | os.PathLike[str]) -> object:
        listed.append(str(path))
        return real(path)

    monkeypatch.setattr(subprojects_module.os, "scandir", scandir)
    found = Subprojects(tree)
    for markers in MARKER_SETS:  # one listing serves every spec
        found.first_with(markers)
    assert not [p for p in listed if SKIP_DIRS.intersection(Path(p).relative_to(tree).parts)]
    assert len(listed) == len(set(listed))


@realworld
@pytest.mark.parametrize("name", ["rxjs", "cobra", "fmt", "click", "serde-json", "openjdk"])
def test_the_listing_agrees_with_the_globs_on_real_checkouts(name: str) -> None:
    root = corpus_project(name)
    found = Subprojects(root)
    for markers in MARKER_SETS:
        assert found.first_with(markers) == by_glob(root, markers), markers
