"""The npm web-and-data servers on real registry projects (issue 33 §2): our `lsp` answers against
a raw client of the same server (tests/lsp/differential.py), and diagnostics of unmodified files
against the server's own CLI where it has one. Installed by plugins/lsp/deps/npm.sh; projects in
scripts/corpus.d/npm-servers.toml (bootstrap, html5-boilerplate and ansible-core: corpus.toml)."""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

from livetools_lsp.servers import BUILTIN
from livetools_lsp.spec import ServerSpec
from tests.corpus import corpus_copy, realworld, sample
from tests.lsp import differential as harness
from tests.lsp.conftest import lsp_run
from tests.lsp.differential import Case, Position, binary, check, differential, our_diagnostics
from tests.support import missing

NPM = "bash plugins/lsp/deps/npm.sh"
TOMBI = "uv tool install tombi==1.9.6 (plugins/lsp/deps/npm.sh)"
OUTLINE = ("symbols", "hover")
ALL = ("symbols", "definition", "references", "hover")
NO_REFERENCES = ("symbols", "definition", "hover")  # docker-langserver: "Unhandled method"


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


_INSTRUCTION = re.compile(r"^([A-Z]+)\s")
_VARIABLE = re.compile(r"\$\{?([A-Za-z_]\w*)|^ARG ([A-Za-z_]\w*)")


def _docker_positions(root: Path, files: list[Path], count: int) -> list[Position]:
    """Instructions (hover) and build arguments (definition, references): the harness's
    identifiers in a Dockerfile are mostly words of shell commands, where nothing answers."""
    pool: list[Position] = []
    for path in files:
        rel = path.relative_to(root).as_posix()
        for number, content in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if m := _INSTRUCTION.match(content):
                pool.append(Position(rel, number, m.group(1), 0))
            for m in _VARIABLE.finditer(content):
                group = 1 if m.group(1) else 2
                name = m.group(group)
                if content.count(name) == 1:
                    pool.append(Position(rel, number, name, m.start(group)))
    return sample(pool, count, seed=12)


def _graphql_config(root: Path) -> None:
    """The config a GraphQL project keeps beside its schema (the package ships none)."""
    (root / ".graphqlrc.yml").write_text("schema: testdata/swapi.graphql\n", encoding="utf-8")


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
        package=kw.pop("package", NPM),
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
    _case("maturin", "tombi", "toml", ".toml", actions=ALL, package=TOMBI),
    _case(
        "devcontainers-cli",
        "docker-langserver",
        "dockerfile",
        ".Dockerfile",
        actions=NO_REFERENCES,
        positions=10,
    ),
    _case("carbon-svelte", "svelte-language-server", "svelte", ".svelte", actions=ALL),
    _case(
        "gqlparser",
        "graphql-lsp",
        "graphql",
        ".graphql",
        under="testdata",
        actions=ALL,
        setup=_graphql_config,
    ),
    _case("create-t3-app", "prisma-language-server", "prisma", ".prisma", actions=ALL),
]


@realworld
@pytest.mark.parametrize("case", CASES, ids=[f"{c.server}-{c.project}" for c in CASES])
async def test_npm_server_agrees_with_a_raw_client(
    tmp_path: Path, case: Case, monkeypatch: pytest.MonkeyPatch
) -> None:
    if case.language in ("json", "jsonc"):
        monkeypatch.setattr(harness, "positions", _key_positions)
    if case.language == "dockerfile":
        monkeypatch.setattr(harness, "positions", _docker_positions)
    check(await differential(case, tmp_path), case)


# -- diagnostics vs the server's own CLI -------------------------------------------------------


async def _cli(argv: list[str], root: Path, bound: float = 120.0) -> tuple[int, str]:
    proc = await asyncio.create_subprocess_exec(
        *argv, cwd=root, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT
    )
    out, _ = await asyncio.wait_for(proc.communicate(), bound)
    assert proc.returncode is not None
    return proc.returncode, out.decode(errors="replace")


def _break(path: Path) -> None:
    """Drop the `;` of a statement that closes a block: `php -l` and intelephense both report
    the `}` after it (seen: Registry.php, line 65 on both sides)."""
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    at = next(
        i
        for i in range(len(lines) // 2, len(lines) - 1)
        if lines[i].rstrip().endswith(";") and lines[i + 1].strip() == "}"
    )
    lines[at] = lines[at].rstrip()[:-1] + "\n"
    path.write_text("".join(lines), encoding="utf-8")


@realworld
async def test_intelephense_syntax_errors_agree_with_php_lint(tmp_path: Path) -> None:
    """Each sampled file as shipped (both: no syntax error) and a copy of it with one `;`
    removed (both: the same line)."""
    php = binary("php", "php-cli (Debian; plugins/lsp/deps/npm.sh)")
    binary("intelephense", NPM)
    root = corpus_copy("monolog", tmp_path)
    pool = sorted(p.relative_to(root).as_posix() for p in root.rglob("*.php"))
    files = sample(pool, 3, seed=7)
    for rel in files:
        broken = root / rel.replace(".php", "Broken.php")
        broken.write_text((root / rel).read_text(encoding="utf-8"), encoding="utf-8")
        _break(broken)
    checked = files + [f.replace(".php", "Broken.php") for f in files]
    cli: dict[str, int | None] = {}
    for rel in checked:
        code, out = await _cli([php, "-l", rel], root)
        line = re.search(r"on line (\d+)", out)
        cli[rel] = int(line.group(1)) if code and line else None
    ours: dict[str, int | None] = {}
    async with lsp_run(root, ["intelephense"]) as run:
        for rel in checked:
            syntax = [
                d["line"]
                for d in await our_diagnostics(run, rel)
                if d["severity"] == "error" and str(d.get("code") or "").startswith("P")
            ]
            ours[rel] = min(syntax) if syntax else None
    agreed = sum(ours[f] == cli[f] for f in checked)
    print(f"\nintelephense syntax errors vs php -l: {agreed}/{len(checked)} files agree")
    for f in checked:
        print(f"  {f}: ours {ours[f]}, php -l {cli[f]}")
    assert agreed == len(checked)
    assert all(cli[f] for f in checked if "Broken" in f)


@realworld
async def test_tombi_diagnostics_agree_with_tombi_lint(tmp_path: Path) -> None:
    tombi = binary("tombi", TOMBI)
    root = corpus_copy("maturin", tmp_path)
    files = sorted(p.relative_to(root).as_posix() for p in root.rglob("*.toml"))
    argv = [tombi, "lint", "--offline", "--quiet", "--diagnostics-format", "json"]
    _, out = await _cli([*argv, "--diagnostics-file", "/dev/stdout", *files], root)
    cli: dict[str, set[tuple[int, str]]] = {f: set() for f in files}
    for item in json.loads(out[out.index("[") :]):
        cli[item["path"]].add((item["range"]["start"]["line"], item["code"]))
    ours: dict[str, set[tuple[int, str]]] = {}
    async with lsp_run(root, ["tombi"]) as run:
        for rel in files:
            ours[rel] = {(d["line"], str(d["code"])) for d in await our_diagnostics(run, rel)}
    agreed = sum(ours[f] == cli[f] for f in files)
    print(f"\ntombi diagnostics vs tombi lint: {agreed}/{len(files)} files agree")
    for f in files:
        print(f"  {f}: ours {sorted(ours[f])}, CLI {sorted(cli[f])}")
    assert agreed == len(files)
    assert any(cli.values()), "tombi lint reported nothing: nothing was compared"


@realworld
async def test_json_errors_agree_with_python_json_tool(tmp_path: Path) -> None:
    """Shipped files (both: valid) and copies with a comma dropped (both: the same line), by
    `python -m json.tool`; and a tsconfig.json with a comment and a trailing comma is JSONC,
    not an error (the spec's schema setting)."""
    binary("vscode-json-language-server", NPM)
    root = corpus_copy("ajv", tmp_path)
    files = sample(sorted(p.relative_to(root).as_posix() for p in root.rglob("*.json")), 3, 4)
    for rel in files:
        lines = (root / rel).read_text(encoding="utf-8").splitlines(keepends=True)
        at = next(i for i in range(len(lines) // 2, len(lines)) if lines[i].rstrip().endswith(","))
        lines[at] = lines[at].rstrip()[:-1] + "\n"
        (root / rel.replace(".json", "-broken.json")).write_text("".join(lines), encoding="utf-8")
    checked = files + [f.replace(".json", "-broken.json") for f in files]
    cli: dict[str, int | None] = {}
    for rel in checked:
        code, out = await _cli([sys.executable, "-m", "json.tool", rel], root)
        line = re.search(r": line (\d+) column", out)
        cli[rel] = int(line.group(1)) if code and line else None
    (root / "tsconfig.json").write_text('{\n  // c\n  "compilerOptions": {"strict": true,},\n}\n')
    ours: dict[str, int | None] = {}
    async with lsp_run(root, ["vscode-json-language-server"]) as run:
        for rel in [*checked, "tsconfig.json"]:
            errors = [
                d["line"] for d in await our_diagnostics(run, rel) if d["severity"] == "error"
            ]
            ours[rel] = min(errors) if errors else None
    agreed = sum(ours[f] == cli[f] for f in checked)
    print(f"\nvscode-json-language-server vs python -m json.tool: {agreed}/{len(checked)} agree")
    for f in checked:
        print(f"  {f}: ours {ours[f]}, json.tool {cli[f]}")
    assert agreed == len(checked)
    assert all(cli[f] for f in checked if "broken" in f)
    assert ours["tsconfig.json"] is None


def _yaml_cli() -> str:
    """The `yaml` CLI of the yaml library yaml-language-server parses with."""
    server = Path(os.path.realpath(binary("yaml-language-server", NPM)))
    for package in server.parents:
        cli = package / "node_modules" / "yaml" / "bin.mjs"
        if cli.is_file():
            return str(cli)
        if package.name == "node_modules":
            break
    missing("the yaml library's CLI not found beside yaml-language-server")
    raise AssertionError("unreachable")


@realworld
async def test_yaml_errors_agree_with_the_yaml_cli(tmp_path: Path) -> None:
    """ansible-core's YAML as shipped (both: valid) and copies starting with a flow sequence
    left open (both: an error, on the same first line), by `yaml valid` of the library the
    server parses with."""
    cli_path = _yaml_cli()
    root = corpus_copy("ansible-core", tmp_path)
    base = root / "lib/ansible/plugins/filter"
    files = sample(sorted(p.relative_to(root).as_posix() for p in base.glob("*.yml")), 3, 5)
    for rel in files:
        text = (root / rel).read_text(encoding="utf-8")
        (root / rel.replace(".yml", "-broken.yml")).write_text("open: [1, 2\n" + text, "utf-8")
    checked = files + [f.replace(".yml", "-broken.yml") for f in files]
    cli: dict[str, int | None] = {}
    for rel in checked:
        text = (root / rel).read_bytes()
        proc = await asyncio.create_subprocess_exec(
            "node",
            cli_path,
            "valid",
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        _, err = await asyncio.wait_for(proc.communicate(text), 60)
        line = re.search(r" at line (\d+), column", err.decode(errors="replace"))
        cli[rel] = int(line.group(1)) if proc.returncode and line else None
    ours: dict[str, int | None] = {}
    async with lsp_run(root, ["yaml-language-server"]) as run:
        for rel in checked:
            errors = [
                d["line"] for d in await our_diagnostics(run, rel) if d["severity"] == "error"
            ]
            ours[rel] = min(errors) if errors else None
    agreed = sum(ours[f] == cli[f] for f in checked)
    print(f"\nyaml-language-server vs yaml valid: {agreed}/{len(checked)} files agree")
    for f in checked:
        print(f"  {f}: ours {ours[f]}, yaml valid {cli[f]}")
    assert agreed == len(checked)
    assert all(cli[f] for f in checked if "broken" in f)


_MACHINE = re.compile(r'^\d+ (ERROR|WARNING) "([^"]+)" (\d+):\d+ ', re.M)


@realworld
async def test_svelte_diagnostics_agree_with_svelte_check(tmp_path: Path) -> None:
    """carbon-components-svelte as shipped: the files svelte-check flags (its a11y warnings,
    svelte 4's, the compiler svelte-language-server bundles) and some it does not, plus a copy
    with an element left open; (line, severity) per file."""
    check_bin = binary("svelte-check", NPM)
    binary("svelteserver", NPM)
    root = corpus_copy("carbon-svelte", tmp_path)
    text = (root / "src/Tag/Tag.svelte").read_text(encoding="utf-8")
    (root / "src/Tag/TagBroken.svelte").write_text(text + "\n<div>\n", encoding="utf-8")
    argv = [check_bin, "--workspace", ".", "--output", "machine"]
    _, out = await _cli(argv, root, bound=300.0)  # the whole workspace: 38 s on a quiet machine
    flagged: dict[str, set[tuple[int, str]]] = {}
    for kind, rel, line in _MACHINE.findall(out):
        flagged.setdefault(rel, set()).add((int(line), kind.lower()))
    clean = sorted(p.relative_to(root).as_posix() for p in root.rglob("*.svelte"))
    files = sample(sorted(flagged), 4, seed=2) + sample(
        [f for f in clean if f not in flagged], 2, seed=2
    )
    assert "src/Tag/TagBroken.svelte" in flagged, out[-2000:]
    files += [] if "src/Tag/TagBroken.svelte" in files else ["src/Tag/TagBroken.svelte"]
    ours: dict[str, set[tuple[int, str]]] = {}
    async with lsp_run(root, ["svelte-language-server"]) as run:
        for rel in files:
            ours[rel] = {
                (d["line"], d["severity"])
                for d in await our_diagnostics(run, rel)
                if d["severity"] in ("error", "warning")
            }
    agreed = sum(ours[f] == flagged.get(f, set()) for f in files)
    print(f"\nsvelte-language-server vs svelte-check: {agreed}/{len(files)} files agree")
    for f in files:
        print(f"  {f}: ours {sorted(ours[f])}, svelte-check {sorted(flagged.get(f, set()))}")
    assert agreed == len(files)


def _dockerfile_utils() -> str:
    """The dockerfile-utils CLI docker-langserver ships (the library it diagnoses with)."""
    server = Path(os.path.realpath(binary("docker-langserver", NPM)))
    nested = server.parents[1] / "node_modules" / "dockerfile-utils" / "bin" / "dockerfile-utils"
    found = str(nested) if nested.is_file() else shutil.which("dockerfile-utils")
    if not found:
        missing("dockerfile-utils not found beside docker-langserver: npm install -g it")
    assert found
    return found


@realworld
async def test_docker_langserver_diagnostics_agree_with_dockerfile_utils(tmp_path: Path) -> None:
    """The shipped file, and a copy with what dockerfile-utils warns about or rejects appended
    (a second CMD, MAINTAINER, an instruction without arguments)."""
    utils = _dockerfile_utils()
    root = corpus_copy("devcontainers-cli", tmp_path)
    shipped = "scripts/updateUID.Dockerfile"
    broken = "scripts/updateUID-broken.Dockerfile"
    text = (root / shipped).read_text(encoding="utf-8")
    extra = 'CMD ["sh"]\nCMD ["bash"]\nMAINTAINER someone\nEXPOSE\n'
    (root / broken).write_text(text + extra, encoding="utf-8")
    cli: dict[str, set[tuple[int, str]]] = {}
    for rel in (shipped, broken):
        _, out = await _cli(["node", utils, "lint", rel], root)
        found = re.findall(r"^Line: (\d+)\n.*\n.*\n(Warning|Error):", out, re.M)
        cli[rel] = {(int(n), kind.lower()) for n, kind in found}
    ours: dict[str, set[tuple[int, str]]] = {}
    async with lsp_run(root, ["docker-langserver"]) as run:
        for rel in (shipped, broken):
            ours[rel] = {(d["line"], d["severity"]) for d in await our_diagnostics(run, rel)}
    print(f"\ndocker-langserver vs dockerfile-utils lint: ours {ours}, CLI {cli}")
    assert ours == cli
    assert len(cli[broken]) >= 3


@realworld
async def test_graphql_lsp_diagnostics_agree_with_graphql_lsp_validate(tmp_path: Path) -> None:
    """gqlparser's schemas as shipped, a copy of swapi.graphql with a brace dropped, and a query
    document with an unknown field, each by `graphql-lsp validate` against swapi.graphql."""
    lsp = binary("graphql-lsp", NPM)
    root = corpus_copy("gqlparser", tmp_path)
    schema = "testdata/swapi.graphql"
    (root / ".graphqlrc.yml").write_text(f"schema: {schema}\ndocuments: queries/*.graphql\n")
    (root / "queries").mkdir()
    query = "query Hero {\n  hero(episode: EMPIRE) {\n    name\n    nope\n  }\n}\n"
    (root / "queries/hero.graphql").write_text(query, encoding="utf-8")
    text = (root / schema).read_text(encoding="utf-8")
    (root / "testdata/swapi-broken.graphql").write_text(text.replace("}", "", 1), "utf-8")
    files = sorted(p.relative_to(root).as_posix() for p in root.rglob("*.graphql"))
    cli: dict[str, set[tuple[int, str]]] = {}
    for rel in files:
        _, out = await _cli([lsp, "validate", "-f", rel, "-s", schema], root)
        report, _ = json.JSONDecoder().raw_decode(out, out.index("{"))
        cli[rel] = {
            (d["range"]["start"]["line"] + 1, "error" if d["severity"] == 1 else "warning")
            for d in report.values()
        }
    ours: dict[str, set[tuple[int, str]]] = {}
    async with lsp_run(root, ["graphql-lsp"]) as run:
        for rel in files:
            ours[rel] = {(d["line"], d["severity"]) for d in await our_diagnostics(run, rel)}
    agreed = sum(ours[f] == cli[f] for f in files)
    print(f"\ngraphql-lsp vs graphql-lsp validate: {agreed}/{len(files)} files agree")
    for f in files:
        print(f"  {f}: ours {sorted(ours[f])}, CLI {sorted(cli[f])}")
    assert agreed == len(files)
    assert cli["queries/hero.graphql"] and cli["testdata/swapi-broken.graphql"]


BIOME_CASES = [
    ("express", ".js", "", "typescript-language-server"),
    ("express", ".json", "", "vscode-json-language-server"),
    ("reveal-js", ".css", "dist", "vscode-css-language-server"),
]


@realworld
@pytest.mark.parametrize(("project", "suffix", "under", "navigator"), BIOME_CASES)
async def test_biome_linter_agrees_with_biome_lint(
    tmp_path: Path, project: str, suffix: str, under: str, navigator: str
) -> None:
    """Biome's items beside the navigating server (labelled `biome`) against `biome lint` on the
    same files, the project configured with Biome's defaults (a biome.json, as a project that
    uses Biome keeps in its repository)."""
    biome = binary("biome", NPM)
    root = corpus_copy(project, tmp_path)
    (root / "biome.json").write_text("{}\n", encoding="utf-8")
    base = root / under if under else root
    pool = sorted(p.relative_to(root).as_posix() for p in base.rglob(f"*{suffix}"))
    files = sample([f for f in pool if ".min." not in f and f != "biome.json"], 4, seed=9)
    argv = [biome, "lint", "--reporter=json", "--max-diagnostics=none", *files]
    _, out = await _cli(argv, root)
    cli: dict[str, list[tuple[int, str]]] = {f: [] for f in files}
    report, _ = json.JSONDecoder().raw_decode(out, out.index("{"))  # its summary follows
    for item in report["diagnostics"]:
        cli[item["location"]["path"]].append((item["location"]["start"]["line"], item["category"]))
    ours: dict[str, list[tuple[int, str]]] = {}
    async with lsp_run(root, [navigator]) as run:
        # Biome publishes a file opened during its project scan empty, then linted; `diagnostics`
        # takes the first publish, so the scan's end is awaited here (see the spec's ready_log).
        await our_diagnostics(run, files[0])
        for server in run.resource("lsp").servers.values():
            if server.spec.id == "biome":
                assert await server.ready(30.0) is None
        for rel in files:
            ours[rel] = [
                (d["line"], str(d["code"]))
                for d in await our_diagnostics(run, rel)
                if d.get("source") == "biome"
            ]
    agreed = sum(sorted(ours[f]) == sorted(cli[f]) for f in files)
    print(f"\nbiome on {project} {suffix} vs biome lint: {agreed}/{len(files)} files agree")
    for f in files:
        only_ours = sorted(set(ours[f]) - set(cli[f]))[:4]
        only_cli = sorted(set(cli[f]) - set(ours[f]))[:4]
        print(
            f"  {f}: ours {len(ours[f])}, CLI {len(cli[f])}; only ours {only_ours} CLI {only_cli}"
        )
    assert agreed == len(files)
