"""Workspaces on real code (issue 32 §1): members of real multi-project repositories from the
registries, laid out again as their repositories do, served from the topmost project.

- TanStack Query 4 (a pnpm workspace): query-core, query-persist-client-core and
  query-sync-storage-persister from npm, each with its sources, under packages/ with the solution
  tsconfig, per-member composite tsconfigs and the node_modules links pnpm makes; and the same
  members as a yarn workspace with tsconfig `paths` and no solution.
- A go.work set of Debian Go sources: cobra with pflag, go-md2man, blackfriday and yaml.v3.

The oracle is a raw server started at the workspace root (tests/lsp/differential.py's RawClient):
`lsp references` equals its answer, `lsp_rename` writes exactly the text its WorkspaceEdit gives,
and the project's own checker (`tsc -b`; `go build ./...` and `go vet ./...`) counts the same
errors before and after the rename; `lsp diagnostics "*"` checks every member. Each test prints
the figures."""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

import pytest

from tests.corpus import corpus_project, realworld
from tests.lsp.conftest import lsp_run
from tests.lsp.differential import (
    Position,
    RawClient,
    binary,
    our_pages,
    raw_locations,
    raw_request,
    uri_of,
)

pytestmark = realworld

CHECK_BOUND = 300.0

# -- layouts -----------------------------------------------------------------------------------

# name -> the members it depends on: package.json `dependencies`, and query-core for the
# persister's tests (a devDependency in the repository; the published package.json drops those)
TANSTACK = {
    "query-core": [],
    "query-persist-client-core": ["query-core"],
    "query-sync-storage-persister": ["query-persist-client-core", "query-core"],
}
TS_OPTIONS = {
    "strict": True,
    "target": "ES2020",
    "lib": ["DOM", "ES2020"],
    "module": "ESNext",
    "moduleResolution": "bundler",
    "declaration": True,
    "skipLibCheck": True,
    "noUncheckedIndexedAccess": True,
}


def tanstack(root: Path) -> None:
    """The repository's shape: pnpm-workspace.yaml over packages/*, a solution tsconfig with the
    shared options, each member a composite project referencing what it imports (`tsc --build`
    is its `build:types`), and packages/<m>/node_modules/@tanstack/<dep> linked to the member as
    pnpm links a `workspace:` dependency. The members' tests stay in their projects, as
    `tsc` type-checks them there; jest's and testing-library's types are not in the corpus, so
    their uses are errors, the same on every side and before and after a rename."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "package.json").write_text(json.dumps({"name": "query", "private": True}))
    (root / "pnpm-workspace.yaml").write_text("packages:\n  - 'packages/*'\n")
    solution = {
        "compilerOptions": TS_OPTIONS,
        "files": [],
        "references": [{"path": f"./packages/{m}"} for m in TANSTACK],
    }
    (root / "tsconfig.json").write_text(json.dumps(solution, indent=2))
    for name, deps in TANSTACK.items():
        member = root / "packages" / name
        shutil.copytree(corpus_project(f"tanstack-{name}"), member)
        config = {
            "extends": "../../tsconfig.json",
            "compilerOptions": {
                "composite": True,
                "rootDir": "./src",
                "outDir": "./build/lib",
                "tsBuildInfoFile": "./build/.tsbuildinfo",
            },
            "include": ["src"],
            "references": [{"path": f"../{d}"} for d in deps],
        }
        (member / "tsconfig.json").write_text(json.dumps(config, indent=2))
        for dep in deps:
            link = member / "node_modules" / "@tanstack" / dep
            link.parent.mkdir(parents=True, exist_ok=True)
            link.symlink_to(Path("..", "..", "..", dep))


def tanstack_yarn(root: Path) -> None:
    """The same members as a yarn workspace in the other common shape: `workspaces` in the
    root package.json, root node_modules/@tanstack/<m> links, one tsconfig.base.json whose
    `paths` map each member's name to its sources, and per-member tsconfigs with no references
    and no solution: the server sees one member's project at a time."""
    root.mkdir(parents=True, exist_ok=True)
    manifest = {"name": "query", "private": True, "workspaces": ["packages/*"]}
    (root / "package.json").write_text(json.dumps(manifest))
    paths = {f"@tanstack/{m}": [f"./packages/{m}/src"] for m in TANSTACK}
    base = {"compilerOptions": {**TS_OPTIONS, "paths": paths}}
    (root / "tsconfig.base.json").write_text(json.dumps(base, indent=2))
    for name in TANSTACK:
        member = root / "packages" / name
        shutil.copytree(corpus_project(f"tanstack-{name}"), member)
        config = {"extends": "../../tsconfig.base.json", "include": ["src"]}
        (member / "tsconfig.json").write_text(json.dumps(config, indent=2))
        link = root / "node_modules" / "@tanstack" / name
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(Path("..", "..", "packages", name))


# go.work member -> its corpus project and module path
GO_MODULES = {
    "cobra": "github.com/spf13/cobra",
    "pflag": "github.com/spf13/pflag",
    "go-md2man": "github.com/cpuguy83/go-md2man/v2",
    "blackfriday": "github.com/russross/blackfriday/v2",
    "yaml-v3": "gopkg.in/yaml.v3",
}
# GOFLAGS=-mod=mod is refused in workspace mode ("-mod may only be set to readonly"): cleared.
GO_ENV = {"GOPROXY": "off", "GOFLAGS": ""}


def go_work(root: Path) -> None:
    """cobra beside the modules it imports, one go.work over them all. Their go.mod files keep
    their module lines and lose their `require`s: in workspace mode the other members provide
    those packages, and nothing can be downloaded here (GOPROXY=off)."""
    root.mkdir(parents=True, exist_ok=True)
    for folder, module in GO_MODULES.items():
        shutil.copytree(corpus_project(folder), root / folder)
        (root / folder / "go.mod").write_text(f"module {module}\n\ngo 1.18\n")
        (root / folder / "go.sum").unlink(missing_ok=True)
    uses = "".join(f"\t./{folder}\n" for folder in GO_MODULES)
    (root / "go.work").write_text(f"go 1.18\n\nuse (\n{uses})\n")


# -- helpers -----------------------------------------------------------------------------------


def spot(root: Path, rel: str, pattern: str, symbol: str) -> Position:
    """The first line of `rel` matching `pattern`, at `symbol` on it."""
    for number, line in enumerate((root / rel).read_text(encoding="utf-8").splitlines(), 1):
        if re.search(pattern, line):
            column = len(line[: line.index(symbol)].encode("utf-16-le")) // 2
            return Position(rel, number, symbol, column)
    raise AssertionError(f"{pattern!r} not in {rel}")


def rel_of(root: Path, uri: str) -> str:
    path = os.path.realpath(unquote(urlparse(uri).path))
    return os.path.relpath(path, os.path.realpath(root)).replace(os.sep, "/")


def offset_of(text: str, position: dict[str, int]) -> int:
    """A UTF-16 LSP position as an index into `text`."""
    lines = text.splitlines(keepends=True)
    line = position["line"]
    if line >= len(lines):
        return len(text)
    start = sum(len(x) for x in lines[:line])
    units, index, content = 0, 0, lines[line]
    while index < len(content) and units < position["character"]:
        units += 2 if ord(content[index]) > 0xFFFF else 1
        index += 1
    return start + index


def applied(root: Path, edit: dict[str, Any]) -> dict[str, str]:
    """rel path -> the file's text after the raw server's WorkspaceEdit (nothing written)."""
    by_uri: dict[str, list[dict[str, Any]]] = {}
    for uri, edits in (edit.get("changes") or {}).items():
        by_uri.setdefault(uri, []).extend(edits)
    for change in edit.get("documentChanges") or []:
        assert "textDocument" in change, f"a resource operation in a rename: {change}"
        by_uri.setdefault(change["textDocument"]["uri"], []).extend(change["edits"])
    out: dict[str, str] = {}
    for uri, edits in by_uri.items():
        rel = rel_of(root, uri)
        text = (root / rel).read_text(encoding="utf-8")
        spans = [
            (offset_of(text, e["range"]["start"]), offset_of(text, e["range"]["end"]), e["newText"])
            for e in edits
        ]
        for start, end, new in sorted(spans, reverse=True):
            text = text[:start] + new + text[end:]
        out[rel] = text
    return out


async def command(argv: list[str], cwd: Path, env: dict[str, str] | None = None) -> str:
    proc = await asyncio.create_subprocess_exec(
        *argv,
        cwd=cwd,
        env={**os.environ, **(env or {})},
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    out, _ = await asyncio.wait_for(proc.communicate(), CHECK_BOUND)
    return out.decode(errors="replace")


def ts_errors(output: str) -> list[str]:
    return [line for line in output.splitlines() if re.search(r"error TS\d+", line)]


async def tsc_errors(tsc: str, root: Path) -> list[str]:
    """`tsc -b` on a scratch copy (the build writes outputs beside the sources)."""
    scratch = root.parent / f"{root.name}.check"
    shutil.rmtree(scratch, ignore_errors=True)
    shutil.copytree(root, scratch, symlinks=True)
    try:
        return ts_errors(await command([tsc, "-b", "--pretty", "false"], scratch))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


async def member_errors(tsc: str, root: Path) -> dict[str, int]:
    """`tsc --noEmit -p` per member: its error count (errors in the members it imports too)."""
    out: dict[str, int] = {}
    for name in TANSTACK:
        argv = [tsc, "--noEmit", "--pretty", "false", "-p", f"packages/{name}"]
        out[name] = len(ts_errors(await command(argv, root)))
    return out


def go_problems(output: str) -> list[str]:
    """Compiler and vet findings (file:line:col: message) and the go command's own errors
    (`go: ...`), not the package headers."""
    return [line for line in output.splitlines() if re.match(r"\S+\.go:\d+:\d+: |go: ", line)]


async def go_checks(go: str, root: Path) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for module in ("cobra", "pflag"):
        build = await command([go, "build", "./..."], root / module, GO_ENV)
        vet = await command([go, "vet", "./..."], root / module, GO_ENV)
        out[f"{module} build"] = go_problems(build)
        out[f"{module} vet"] = go_problems(vet)
    return out


async def references(run: Any, raw: RawClient, root: Path, at: Position) -> tuple[set, set, str]:
    """(our locations, the raw server's, our first page's text)."""
    pages = await our_pages(run, "references", at)
    assert not pages[0].is_error, pages[0].text
    ours: set[tuple[str, int]] = set()
    for page in pages:
        for loc in (page.data or {}).get("locations") or []:
            path = loc["path"]
            if os.path.isabs(path):
                path = rel_of(root, Path(path).as_uri())
            ours.add((path, loc["line"]))
    return ours, set(await raw_references(raw, root, at)), pages[0].text


async def raw_references(raw: RawClient, root: Path, at: Position) -> list[tuple[str, int]]:
    """A raw server's references at `at`, declaration included, as (path, line)."""
    params = {
        "textDocument": {"uri": uri_of(root / at.rel)},
        "position": {"line": at.line - 1, "character": at.column},
        "context": {"includeDeclaration": True},
    }
    answer = await raw_request(raw, "textDocument/references", params)
    assert not isinstance(answer, str), answer
    return raw_locations(root, answer)


async def rename_both(
    run: Any, raw: RawClient, root: Path, at: Position, new_name: str
) -> tuple[dict[str, str], dict[str, str], Any]:
    """The raw server's edit applied in memory, then ours written: (expected texts, our texts of
    the same files and of every file ours changed, our result)."""
    params = {
        "textDocument": {"uri": uri_of(root / at.rel)},
        "position": {"line": at.line - 1, "character": at.column},
        "newName": new_name,
    }
    edit = await raw_request(raw, "textDocument/rename", params)
    assert isinstance(edit, dict), edit
    expected = applied(root, edit)
    args = {"file": at.rel, "line": at.line, "symbol": at.symbol, "new_name": new_name}
    result = await run.call("lsp_rename", args)
    changed = set(expected) | set((result.data or {}).get("edits") or {})
    ours = {rel: (root / rel).read_text(encoding="utf-8") for rel in changed}
    return expected, ours, result


def show(label: str, ours: set, theirs: set) -> str:
    return (
        f"{label}: ours {len(ours)} raw {len(theirs)}; only ours {sorted(ours - theirs)[:6]} "
        f"only raw {sorted(theirs - ours)[:6]}"
    )


# -- TanStack Query: a pnpm workspace ----------------------------------------------------------

TS_SERVER = ("typescript-language-server", "--stdio")
# As our spec starts it: a rename renames the declaration, not an alias kept at the export
# (`export { dehydrateState as dehydrate }` would leave every dependent untouched).
TS_INIT = {"preferences": {"providePrefixAndSuffixTextForRename": False}}


async def test_pnpm_workspace_references_and_rename_equal_a_raw_server(
    tmp_path: Path,
) -> None:
    server = binary("typescript-language-server", "npm install -g typescript-language-server")
    tsc = binary("tsc", "npm install -g typescript@6")
    root = tmp_path / "query"
    tanstack(root)
    spots = [
        # exported by query-core, used by query-persist-client-core
        spot(
            root,
            "packages/query-core/src/hydration.ts",
            r"^export function dehydrate\(",
            "dehydrate",
        ),
        # exported by query-persist-client-core, used by query-sync-storage-persister
        spot(
            root,
            "packages/query-persist-client-core/src/persist.ts",
            r"^export interface PersistedClient",
            "PersistedClient",
        ),
        # the same two, asked at a use in the dependent member
        spot(
            root,
            "packages/query-persist-client-core/src/persist.ts",
            r"clientState: dehydrate\(",
            "dehydrate",
        ),
        spot(
            root,
            "packages/query-sync-storage-persister/src/index.ts",
            r"serialize\?: \(client: PersistedClient\)",
            "PersistedClient",
        ),
    ]
    before = await tsc_errors(tsc, root)
    raw = await RawClient.start([server, *TS_SERVER[1:]], root, init_options=TS_INIT)
    try:
        async with lsp_run(root, ["typescript-language-server"]) as run:
            for rel in sorted({at.rel for at in spots}):
                await raw.open(root / rel, "typescript")
            figures = []
            for at in spots:
                ours, theirs, text = await references(run, raw, root, at)
                figures.append(show(f"references {at.symbol}", ours, theirs))
                assert ours == theirs, figures[-1] + "\n" + text
                members = {p.split("/")[1] for p, _ in theirs}
                assert len(members) >= 2, f"{at.symbol}: no use outside its member: {theirs}"
            status = await run.call("lsp", {"action": "status"})
            assert "typescript-language-server root=." in status.text, status.text
            at = spots[0]
            expected, written, result = await rename_both(run, raw, root, at, "dehydrateState")
            assert not result.is_error, result.text
    finally:
        await raw.close()
    after = ts_errors(await command([tsc, "-b", "--pretty", "false"], root))
    figures.append(
        f"rename {at.symbol}: files ours {len(result.data['edits'])} raw {len(expected)}; "
        f"tsc -b errors before {len(before)} after {len(after)}"
    )
    print("\n" + "\n".join(figures))
    assert sorted(result.data["edits"]) == sorted(expected), (
        f"{figures[-1]}; raw {sorted(expected)}"
    )
    assert written == expected
    assert len(after) == len(before), sorted(set(after) - set(before))


async def test_pnpm_workspace_rename_blames_no_old_error(tmp_path: Path) -> None:
    """A first call that renames: the files it opens to write get their real baseline."""
    binary("typescript-language-server", "npm install -g typescript-language-server")
    tsc = binary("tsc", "npm install -g typescript@6")
    root = tmp_path / "query"
    tanstack(root)
    at = spot(
        root, "packages/query-core/src/hydration.ts", r"^export function dehydrate\(", "dehydrate"
    )
    before = await tsc_errors(tsc, root)
    args = {"file": at.rel, "line": at.line, "symbol": at.symbol, "new_name": "dehydrateState"}
    async with lsp_run(root, ["typescript-language-server"]) as run:
        result = await run.call("lsp_rename", args)
    assert not result.is_error, result.text
    after = await tsc_errors(tsc, root)
    claim = re.search(r"new diagnostics after this write \((\d+)", result.text)
    print(f"\ntsc -b errors before {len(before)} after {len(after)}; ours: {claim and claim[0]}")
    assert len(after) == len(before)
    assert claim is None, result.text[-1500:]


async def test_yarn_workspace_without_a_solution_rename_is_complete(tmp_path: Path) -> None:
    """No solution tsconfig: the raw server at the root knows only the projects of the files
    opened in it, so its rename of a query-core export stops at query-core. Ours searches the
    workspace for the name, opens the members that use it and asks again: every file the raw
    edit changes gets the same text, the dependents are renamed too, and `tsc --noEmit -p` of
    each member counts the same errors after as before (the raw edit alone adds some)."""
    server = binary("typescript-language-server", "npm install -g typescript-language-server")
    tsc = binary("tsc", "npm install -g typescript@6")
    root = tmp_path / "query"
    tanstack_yarn(root)
    at = spot(
        root, "packages/query-core/src/hydration.ts", r"^export function dehydrate\(", "dehydrate"
    )
    before = await member_errors(tsc, root)
    raw = await RawClient.start([server, *TS_SERVER[1:]], root, init_options=TS_INIT)
    try:
        async with lsp_run(root, ["typescript-language-server"]) as run:
            await raw.open(root / at.rel, "typescript")
            ours, theirs, _ = await references(run, raw, root, at)
            figures = [show(f"references {at.symbol}", ours, theirs)]
            status = await run.call("lsp", {"action": "status"})
            assert "typescript-language-server root=." in status.text, status.text
            expected, written, result = await rename_both(run, raw, root, at, "dehydrateState")
            assert not result.is_error, result.text
    finally:
        await raw.close()
    after = await member_errors(tsc, root)
    raw_only = tmp_path / "raw-only"
    tanstack_yarn(raw_only)
    for rel, text in expected.items():
        (raw_only / rel).write_text(text, encoding="utf-8")
    raw_after = await member_errors(tsc, raw_only)
    figures.append(
        f"rename {at.symbol}: files ours {len(result.data['edits'])} raw {len(expected)}; "
        f"tsc --noEmit -p per member: before {before}, after ours {after}, "
        f"after the raw edit alone {raw_after}"
    )
    print("\n" + "\n".join(figures))
    assert set(expected) <= set(result.data["edits"]), f"{figures[-1]}; raw {sorted(expected)}"
    assert {rel: written[rel] for rel in expected} == expected
    assert after == before, figures[-1]


async def test_yarn_workspace_project_check_checks_every_member(tmp_path: Path) -> None:
    """`lsp diagnostics "*"` at the root of the yarn shape runs the members' checks."""
    binary("typescript-language-server", "npm install -g typescript-language-server")
    tsc = binary("tsc", "npm install -g typescript@6")
    root = tmp_path / "query"
    tanstack_yarn(root)
    oracle = await member_errors(tsc, root)
    async with lsp_run(root, ["typescript-language-server"]) as run:
        r = await run.call("lsp", {"action": "diagnostics", "file": "*"})
    (check,) = [c for c in r.data["checks"] if c["checker"].startswith("tsc")]
    print(f"\ntsc --noEmit -p per member: {oracle}; ours: {r.text[:300]}")
    assert "skipped" not in check, r.text
    assert check["exit"] not in (0, None), r.text  # every member has errors (no jest types)


# -- cobra + pflag: a go.work module set -------------------------------------------------------


def go_work_offline(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[str, str, Path]:
    """gopls, go and the go.work set in `tmp_path`, with GO_ENV for our gopls too (no module
    download is tried)."""
    gopls = binary("gopls", "apt-get install gopls")
    go = binary("go", "apt-get install golang-go")
    for name, value in GO_ENV.items():
        monkeypatch.setenv(name, value)
    root = tmp_path / "gowork"
    go_work(root)
    return gopls, go, root


async def test_go_work_references_and_rename_equal_a_raw_gopls(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    gopls, go, root = go_work_offline(tmp_path, monkeypatch)
    spots = [
        # a method cobra calls for its flag annotations (completions, required flags)
        spot(root, "pflag/flag.go", r"^func \(f \*FlagSet\) SetAnnotation\(", "SetAnnotation"),
        # a field of pflag's Flag that cobra reads for completions
        spot(root, "pflag/flag.go", r"^\s+NoOptDefVal\s", "NoOptDefVal"),
        # the same field, asked at a use in cobra
        spot(root, "cobra/command.go", r"return flag\.NoOptDefVal != ", "NoOptDefVal"),
    ]
    before = await go_checks(go, root)
    raw = await RawClient.start([gopls], root, env=GO_ENV)
    try:
        async with lsp_run(root, ["gopls"]) as run:
            for rel in sorted({at.rel for at in spots}):
                await raw.open(root / rel, "go")
            figures = []
            for at in spots:
                ours, theirs, text = await references(run, raw, root, at)
                figures.append(show(f"references {at.symbol}", ours, theirs))
                assert ours == theirs, figures[-1] + "\n" + text
                assert any(p.startswith("cobra/") for p, _ in theirs), theirs
            status = await run.call("lsp", {"action": "status"})
            assert "gopls root=." in status.text, status.text
            at = spots[0]
            expected, written, result = await rename_both(run, raw, root, at, "SetFlagAnnotation")
            assert not result.is_error, result.text
    finally:
        await raw.close()
    after = await go_checks(go, root)
    counts = ", ".join(f"{k} {len(before[k])}/{len(after[k])}" for k in before)
    figures.append(
        f"rename {at.symbol}: files ours {len(result.data['edits'])} raw {len(expected)}; "
        f"problems before/after: {counts}"
    )
    print("\n" + "\n".join(figures))
    assert sorted(result.data["edits"]) == sorted(expected), (
        f"{figures[-1]}; raw {sorted(expected)}"
    )
    assert written == expected
    assert not before["cobra build"] and not before["pflag build"], before
    assert {k: len(v) for k, v in after.items()} == {k: len(v) for k, v in before.items()}, after


async def test_go_work_project_check_vets_every_module(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`lsp diagnostics "*"` at the go.work root finds what `go vet` finds in its modules."""
    binary("gopls", "apt-get install gopls")
    go = binary("go", "apt-get install golang-go")
    for name, value in GO_ENV.items():
        monkeypatch.setenv(name, value)
    root = tmp_path / "gowork"
    go_work(root)
    patterns = [f"./{folder}/..." for folder in GO_MODULES]
    oracle = go_problems(await command([go, "vet", *patterns], root, GO_ENV))
    findings = {line.split(": ")[0] for line in oracle if not line.startswith("go: ")}
    assert "pflag/flag_test.go:1242:3" in findings, oracle
    async with lsp_run(root, ["gopls"]) as run:
        r = await run.call("lsp", {"action": "diagnostics", "file": "*"})
    (check,) = [c for c in r.data["checks"] if c["checker"].startswith("go vet")]
    print(f"\ngo vet over the modules: {sorted(findings)}; ours: exit {check['exit']}")
    print(check["output"][-600:])
    assert "does not contain modules" not in check["output"], check["output"]
    assert findings <= {line.split(": ")[0] for line in go_problems(check["output"])}
