"""Breadth: servers for native, shell and scripting languages on real registry projects (the
harness is tests/lsp/differential.py). Each case compares our `lsp` answers with a raw client of
a second process of the same server; where the server wraps a CLI checker (shellcheck, ...), our
`diagnostics` of unmodified files are counted against that CLI."""

from __future__ import annotations

import asyncio
import json
import os
import re
from pathlib import Path
from typing import Any

import pytest

from livetools_lsp.servers.perl import SERVERS as PERL
from livetools_lsp.servers.vim import SERVERS as VIM
from tests.corpus import corpus_copy, realworld, sample
from tests.lsp import differential as differential_module
from tests.lsp.conftest import lsp_run
from tests.lsp.differential import (
    Case,
    Outcome,
    RawClient,
    binary,
    check,
    differential,
    our_diagnostics,
)
from tests.lsp.test_realworld_differential import _brotli
from tests.support import missing

PERL_SETTINGS = dict(PERL[0].settings)

# -- where servers outside PATH live -------------------------------------------------------------


def ts7_bin() -> Path:
    """TypeScript 7's tsc (the native port, `tsc --lsp`), which plugins/lsp/test-deps.sh installs
    in the user cache beside the global TypeScript 6 (LIVETOOLS_TS7_BIN names another folder)."""
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    folder = Path(
        os.environ.get("LIVETOOLS_TS7_BIN") or cache / "livetools" / "ts7/node_modules/.bin"
    )
    if not (folder / "tsc").exists():
        missing(f"TypeScript 7's tsc not in {folder}: run plugins/lsp/test-deps.sh")
    return folder


# -- project setups ------------------------------------------------------------------------------


def _rxjs(root: Path) -> None:
    """rxjs ships no tsconfig.json in its package: the one its repository builds src/ with, less
    `baseUrl` (TypeScript 7 removed it; `paths` are relative to the tsconfig.json)."""
    config = {
        "compilerOptions": {
            "strict": True,
            "target": "es2017",
            "lib": ["es2018", "dom"],
            "skipLibCheck": True,
            "paths": {"rxjs": ["./"], "rxjs/*": ["./*"]},
        },
        "include": ["./**/*.ts"],
    }
    (root / "src" / "tsconfig.json").write_text(json.dumps(config))


def _uri(root: Path) -> None:
    """The Makefile.PL of URI's distribution, which its Debian package does not install."""
    (root / "Makefile.PL").write_text("use ExtUtils::MakeMaker;\nWriteMakefile(NAME => 'URI');\n")


def _tools(root: Path) -> None:
    """The DESCRIPTION that R's build writes from DESCRIPTION.in (arity reads the package's)."""
    pkg = root / "src/library/tools"
    text = (pkg / "DESCRIPTION.in").read_text(encoding="utf-8")
    (pkg / "DESCRIPTION").write_text(text.replace("@VERSION@", "4.2.2"), encoding="utf-8")


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
        positions=10,
        package="npm install -g bash-language-server@5.8.1",
    ),
    Case(
        "dracut",
        "bash-language-server",
        ("bash-language-server", "start"),
        "shellscript",
        (".sh",),
        "modules.d",
        actions=("symbols", "definition", "references", "hover"),
        positions=10,
        package="npm install -g bash-language-server@5.8.1",
    ),
    Case(
        "brotli",
        "ccls",
        ("ccls",),
        "c",
        (".c",),
        "c/dec",
        _brotli,
        actions=("symbols", "definition", "references", "hover"),
        init_options={"cache": {"directory": ""}},
        package="apt-get install ccls",
        progress_stalls=True,
    ),
    Case(
        "perl-uri",
        "perl-languageserver",
        ("perl", "-MPerl::LanguageServer", "-e", "Perl::LanguageServer::run"),
        "perl",
        (".pm",),
        "URI",
        _uri,
        actions=("symbols", "definition", "references"),  # it has no hover
        positions=10,
        settings=PERL_SETTINGS,
        env=dict(PERL[0].env),
        package="apt-get install libperl-languageserver-perl",
    ),
    Case(
        "vim-runtime",
        "vim-language-server",
        ("vim-language-server", "--stdio"),
        "vim",
        (".vim",),
        "autoload",
        actions=("symbols", "definition", "references", "hover"),
        init_options=dict(VIM[0].init_options or {}),
        package="npm install -g vim-language-server@2.3.1",
    ),
    Case(
        "virtualfish",
        "fish-lsp",
        ("fish-lsp", "start"),
        "fish",
        (".fish",),
        "virtualfish",
        actions=("symbols", "definition", "references", "hover"),
        positions=10,
        package="npm install -g fish-lsp@1.1.4 (and apt-get install fish)",
    ),
    Case(
        "r-tools",
        "arity",
        ("arity", "lsp"),
        "r",
        (".R",),
        "src/library/tools/R",
        _tools,
        actions=("symbols", "definition", "references", "hover"),
        positions=10,
        package="uv tool install arity==0.27.0",
    ),
]


@realworld
@pytest.mark.parametrize("case", CASES, ids=[f"{c.server}-{c.project}" for c in CASES])
async def test_navigation_agrees_with_a_raw_client(
    tmp_path: Path, case: Case, monkeypatch: pytest.MonkeyPatch
) -> None:
    if case.server == "tsgo":  # its `tsc` ahead of the global TypeScript 6's, for both sides
        monkeypatch.setenv("PATH", f"{ts7_bin()}{os.pathsep}{os.environ['PATH']}")
    for name, value in case.env.items():
        monkeypatch.setenv(name, value)
    if case.server in CONFIGURED_BY_NOTIFICATION:
        monkeypatch.setattr(RawClient, "start", classmethod(_start_and_configure))
    if case.server in READY_ON_STDERR:
        monkeypatch.setattr(differential_module, "compare_symbols", _parsed_first)
    outcome = await differential(case, tmp_path)
    print("\n" + tally(outcome, case))
    check(outcome, case)


# Servers that read their settings only from `workspace/didChangeConfiguration` (the plugin sends
# it after `initialized` when a spec has settings; the harness's raw client does not).
CONFIGURED_BY_NOTIFICATION = {"perl-languageserver"}
_raw_start = RawClient.start


async def _start_and_configure(cls: type[RawClient], argv: list[str], root: Path, **kw: Any) -> Any:
    raw = await _raw_start(argv, root, **kw)
    settings = kw.get("settings") or {}
    params = {"settings": settings}
    await raw.send(
        {"jsonrpc": "2.0", "method": "workspace/didChangeConfiguration", "params": params}
    )
    return raw


# Servers that say they have parsed the project only on stderr, which the plugin does not read
# for readiness (its `ready_log` matches window/logMessage): an answer before it misses files
# (Perl::LanguageServer: 103 of 107 lines at 1.4 s). Until the plugin can wait for it, the
# comparison waits for the line itself, at most READY_BOUND.
READY_ON_STDERR = {"perl-languageserver": "initial parsing done"}
READY_BOUND = 60.0
_compare_symbols = differential_module.compare_symbols


async def _parsed_first(run: Any, raw: RawClient, root: Path, rel: str) -> Any:
    answer = await _compare_symbols(run, raw, root, rel)  # (starts our server)
    if id(run) in _waited:
        return answer
    _waited.add(id(run))
    loop = asyncio.get_running_loop()
    end = loop.time() + READY_BOUND
    for server in run.resource("lsp").servers.values():
        line = READY_ON_STDERR.get(server.spec.id)
        while line and server.child and loop.time() < end:
            if line in server.child.stderr_tail(400):
                print(f"{server.spec.id}: {line!r} on stderr")
                break
            await asyncio.sleep(0.2)
    return answer


_waited: set[int] = set()


def tally(outcome: Outcome, case: Case) -> str:
    """Agreement per action (the harness counts only the total), for the report's table."""
    parts = []
    for action in case.actions:
        total = case.files if action == "symbols" else case.positions
        total = min(total, outcome.total)
        differ = sum(d.startswith(action + " ") for d in outcome.differences)
        parts.append(f"{action} {total - differ}/{total}")
    return f"{case.server} on {case.project}: " + ", ".join(parts)


# -- diagnostics against the server's own CLI ----------------------------------------------------


def differs(rel: str, ours: list[tuple[int, str]], cli: list[tuple[int, str]]) -> str:
    line = f"  {rel}: ours {len(ours)}, CLI {len(cli)}"
    if ours != cli:
        line += f"; only ours {sorted(set(ours) - set(cli))[:4]}"
        line += f" only CLI {sorted(set(cli) - set(ours))[:4]}"
    return line


async def _shellcheck(root: Path, rel: str) -> list[tuple[int, str]]:
    """shellcheck as bash-language-server runs it: from the root, following sources (-x) with the
    file's folder as a source path, and bash for a file with no shebang or shell directive (the
    server's fallback). Style findings are dropped: the server sends them as hints, which
    `lsp diagnostics` leaves out."""
    text = (root / rel).read_text(encoding="utf-8")
    argv = ["shellcheck", "-f", "json1", "-x", "-P", str(Path(rel).parent)]
    if not text.startswith("#!") and "shellcheck shell=" not in text:
        argv.insert(1, "--shell=bash")
    proc = await asyncio.create_subprocess_exec(
        *argv, rel, cwd=root, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL
    )
    out, _ = await asyncio.wait_for(proc.communicate(), 60)
    comments = json.loads(out)["comments"]
    return sorted((c["line"], f"SC{c['code']}") for c in comments if c["level"] != "style")


@realworld
async def test_dracut_diagnostics_agree_with_shellcheck(tmp_path: Path) -> None:
    binary("bash-language-server", "npm install -g bash-language-server@5.8.1")
    binary("shellcheck", "apt-get install shellcheck")
    root = corpus_copy("dracut", tmp_path)
    pool = sorted(p.relative_to(root).as_posix() for p in root.rglob("*.sh"))
    files = sample(pool, 6, seed=7)
    agreed = 0
    async with lsp_run(root, ["bash-language-server"]) as run:
        for rel in files:
            ours = sorted((d["line"], str(d["code"])) for d in await our_diagnostics(run, rel))
            cli = await _shellcheck(root, rel)
            agreed += ours == cli
            print(differs(rel, ours, cli))
    print(f"bash-language-server diagnostics vs shellcheck: {agreed}/{len(files)} files agree")
    assert agreed == len(files)


async def _perl_c(root: Path, rel: str) -> list[tuple[int, str]]:
    """`perl -c` as Perl::LanguageServer runs it: the text on stdin, the spec's perlInc as -I,
    from the root; on failure every stderr line naming "- line N" is one error at line N."""
    argv = ["perl", "-c"] + [f"-I{inc}" for inc in PERL_SETTINGS["perl"]["perlInc"]] + ["-"]
    proc = await asyncio.create_subprocess_exec(
        *argv,
        cwd=root,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE,
    )
    _, err = await asyncio.wait_for(proc.communicate((root / rel).read_bytes()), 60)
    if proc.returncode == 0:
        return []
    lines = re.findall(r" at - line (\d+)[,.]", err.decode())
    return sorted((int(n), "") for n in lines)


@realworld
async def test_uri_diagnostics_agree_with_perl_c(tmp_path: Path) -> None:
    """Clean files agree exactly. A file with errors is published twice by Perl::LanguageServer
    2.5.0 in one burst, once empty and once with its errors, in Perl's hash order (Workspace.pm
    add_diagnostic_messages keeps a placeholder "-" key beside the file's own): the last one
    wins, so ours is either perl -c's errors or nothing, never anything else."""
    binary("perl")
    root = corpus_copy("perl-uri", tmp_path)
    _uri(root)
    pool = sorted(p.relative_to(root).as_posix() for p in (root / "URI").rglob("*.pm"))
    # isbn.pm needs Business::ISBN, which is not installed: the one file `perl -c` fails on.
    broken = "URI/urn/isbn.pm"
    files = [broken, *sample([f for f in pool if "isbn" not in f], 3, seed=7)]
    agreed = 0
    async with lsp_run(root, ["perl-languageserver"]) as run:
        for rel in files:
            ours = sorted((d["line"], "") for d in await our_diagnostics(run, rel))
            cli = await _perl_c(root, rel)
            print(differs(rel, ours, cli))
            if rel == broken:
                assert cli, "perl -c passed isbn.pm: Business::ISBN is installed here"
                assert ours in (cli, []), (ours, cli)
            else:
                agreed += ours == cli
    print(
        f"perl-languageserver diagnostics vs perl -c: {agreed}/{len(files) - 1} clean files agree"
    )
    assert agreed == len(files) - 1


@realworld
async def test_rxjs_diagnostics_agree_with_tsc_7(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """tsgo's errors against TypeScript 7's own `tsc --noEmit` on the same tsconfig.json."""
    monkeypatch.setenv("PATH", f"{ts7_bin()}{os.pathsep}{os.environ['PATH']}")
    root = corpus_copy("rxjs", tmp_path)
    _rxjs(root)
    proc = await asyncio.create_subprocess_exec(
        "tsc",
        "--noEmit",
        "--pretty",
        "false",
        "-p",
        "src/tsconfig.json",
        cwd=root,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
    )
    out, _ = await asyncio.wait_for(proc.communicate(), 300)
    cli: dict[str, list[tuple[int, str]]] = {}
    for m in re.finditer(r"^(\S+)\((\d+),\d+\): error (TS\d+):", out.decode(), re.M):
        cli.setdefault(m.group(1), []).append((int(m.group(2)), m.group(3)))
    pool = sorted(p.relative_to(root).as_posix() for p in (root / "src/internal").rglob("*.ts"))
    # WebSocketSubject.ts: TS2345 under TypeScript 7's DOM types (the file with an error).
    files = sorted(set(cli) | set(sample(pool, 3, seed=7)))
    agreed = 0
    async with lsp_run(root, ["tsgo"]) as run:
        for rel in files:
            items = await our_diagnostics(run, rel)
            ours = sorted((d["line"], f"TS{d['code']}") for d in items if d["severity"] == "error")
            mine_cli = sorted(cli.get(rel, []))
            agreed += ours == mine_cli
            print(differs(rel, ours, mine_cli))
    print(f"tsgo diagnostics vs tsc 7: {agreed}/{len(files)} files agree")
    assert cli, "tsc 7 found no error in rxjs: the file this test was built on changed"
    assert agreed == len(files)


@realworld
async def test_tools_diagnostics_agree_with_arity_lint(tmp_path: Path) -> None:
    """arity's findings through `lsp diagnostics` against `arity lint` over the whole package
    (both see the package: DESCRIPTION, NAMESPACE, every file's definitions)."""
    arity = binary("arity", "uv tool install arity==0.27.0")
    root = corpus_copy("r-tools", tmp_path)
    _tools(root)
    package = "src/library/tools/R"
    proc = await asyncio.create_subprocess_exec(
        *(arity, "lint", "--output", "concise", "--color", "never", package),
        cwd=root,
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE,
    )
    _, out = await asyncio.wait_for(proc.communicate(), 120)  # it reports on stderr
    cli: dict[str, list[tuple[int, str]]] = {}
    for m in re.finditer(r"^(\S+?):(\d+):\d+: \w+ \[([\w-]+)\]", out.decode(), re.M):
        cli.setdefault(m.group(1), []).append((int(m.group(2)), m.group(3)))
    pool = sorted(p.relative_to(root).as_posix() for p in (root / package).glob("*.R"))
    files = sample(pool, 4, seed=7)
    agreed = 0
    async with lsp_run(root, ["arity"]) as run:
        for rel in files:
            ours = sorted((d["line"], str(d["code"])) for d in await our_diagnostics(run, rel))
            theirs = sorted(cli.get(rel, []))
            agreed += ours == theirs
            print(differs(rel, ours, theirs))
    print(f"arity diagnostics vs arity lint: {agreed}/{len(files)} files agree")
    assert sum(len(v) for v in cli.values()), "arity lint found nothing: check its output format"
    assert agreed == len(files)
