"""ast_grep against its anchor, the ast-grep CLI (PyPI `ast-grep-cli`, the version the tests use),
on the same corpus in one process pair, copied into a temporary folder so both walk exactly the
same files.

The corpus argument is one or more parts joined by `+`: `stdlib` (this interpreter's standard
library), an installed package (`pandas`), a project of the real-world corpus
(scripts/corpus.toml, fetched with `scripts/corpus.py fetch NAME`) or a folder. The language is
the corpus's most common one unless `--language` says.

For each case: wall-time medians of both, and the ratio ours/CLI (lower is better).
Ours goes through a real run (`run.call("ast_grep", ...)`), workers and all; "cold" opens a new
run per measurement (fresh workers, empty caches), "warm" repeats a query in the same run.
`--oneshot` instead times `livetools call ast_grep` (a new process per call, start-up and worker
spawn included) against `ast-grep run`; with `--resident` those processes talk to a resident run
started for the corpus copy (`livetools resident start`; one untimed warm-up call per case,
then the timed ones; stopped at the end). `--warm` adds, per case, the same search repeated in
the run that just made it (trees cached: what an agent's later searches cost).

`--floor` adds what no matcher built on this parser can beat: every file parsed once and one C
query for the pattern's root kind run over it, in this process (CPU seconds), and that CPU spread
over the machine's cores (wall), each next to the CLI's. Both tools parse every file with the
same tree-sitter C code; a floor above 1x means the goal is below the parser's own cost.

    uv run python bench/astgrep_vs_cli.py [CORPUS] [--runs 3] [--quick] [--oneshot] [--only TEXT]
    uv run python bench/astgrep_vs_cli.py stdlib+pandas
    uv run python bench/astgrep_vs_cli.py regex+serde-json --only all
    uv run python bench/astgrep_vs_cli.py openjdk --only all
    uv run python bench/astgrep_vs_cli.py rxjs --oneshot
    uv run python bench/astgrep_vs_cli.py rxjs --oneshot --resident
    uv run python bench/astgrep_vs_cli.py openjdk --only all --warm --floor
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import importlib.util
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

from livetools import Host
from livetools_astgrep import plugin as astgrep_plugin
from livetools_astgrep.grammar import builtin_grammars
from livetools_astgrep.languages import load
from livetools_astgrep.pattern import Compiler

REPO = Path(__file__).resolve().parent.parent

# (label, pattern, max_results for ours, target ratio from the issue); Python-only cases need
# Python code, the full enumeration and its default-limited form run on every language.
PYTHON_CASES = [
    ("selective", "os.path.join($$$A)", 0, 0.8),
    ("rare identifier", "$X.dispose()", 0, 0.05),
]
GENERAL_CASES = [
    ("non-selective, all", "$F($$$ARGS)", 0, 1.0),
    ("non-selective, default 50", "$F($$$ARGS)", 50, 0.2),
]
PYTHON_TAIL = [("repeated metavariable", "$A == $A", 0, None)]
LANGUAGES = {
    ".py": "python",
    ".rs": "rust",
    ".java": "java",
    ".ts": "typescript",
    ".go": "go",
    ".c": "c",
    ".cc": "cpp",
    ".cpp": "cpp",
    ".hpp": "cpp",
    ".dart": "dart",
    ".php": "php",
    ".kt": "kotlin",
    ".swift": "swift",
    ".cs": "csharp",
    ".rb": "ruby",
    ".lua": "lua",
    ".sol": "solidity",
    ".js": "javascript",
    ".tsx": "tsx",
    ".css": "css",
    ".json": "json",
    ".yml": "yaml",
    ".scala": "scala",
    ".ex": "elixir",
    ".hs": "haskell",
    ".hcl": "hcl",
    ".nix": "nix",
}
# One selective case per language nobody tuned (issue 30): a call whose name is rare in its
# corpus project, so the literal prefilter decides most files; run with the general cases.
SELECTIVE = {
    "php": "sprintf($$$A)",
    "kotlin": "listOf($$$A)",
    "swift": "$X.append($Y)",
    "csharp": "nameof($X)",
    "ruby": "raise $E",
    "lua": "error($$$A)",
    "solidity": "emit $E($$$A);",
    "javascript": "require($A)",
    "tsx": "React.useEffect($$$)",
    "css": "rgba($$$A)",
    "json": '"anonymous": false',
    "yaml": "register: $R",
    "scala": "require($$$A)",
    "elixir": "Enum.reduce($$$A)",
    "haskell": "mapM_ $F $X",
    "hcl": "type = $T",
    "nix": "builtins.toFile $$$A",
}
# Data formats have no calls: their non-selective case is every pair.
NON_SELECTIVE = {"yaml": "$K: $V", "json": '"$K": $V', "css": "$P: $V", "hcl": "$K = $V"}


def _source(part: str) -> Path:
    """The folder a corpus part names."""
    if part == "stdlib":
        return Path(sysconfig.get_paths()["stdlib"])
    folder = Path(part).expanduser()
    if folder.is_dir():
        return folder
    fetched = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "corpus.py"), "path", part],
        capture_output=True,
        text=True,
    )
    if fetched.returncode == 0 and Path(fetched.stdout.strip()).is_dir():
        return Path(fetched.stdout.strip())
    spec = importlib.util.find_spec(part)
    if spec is not None and spec.origin:
        return Path(spec.origin).parent
    raise SystemExit(
        f"corpus part {part!r} is not stdlib, a folder, a fetched corpus project "
        f"(scripts/corpus.py fetch {part}) or an installed package"
    )


def build_corpus(dest: Path, corpus: str, quick: bool) -> tuple[int, int, str]:
    """Copy every part's files into dest/<part>; the count, bytes and most common language."""
    files = size = 0
    kinds: collections.Counter[str] = collections.Counter()
    for part in corpus.split("+"):
        root = _source(part)
        for path in sorted(root.rglob("*")):
            rel = path.relative_to(root)
            if "site-packages" in rel.parts or any(p.startswith(".") for p in rel.parts):
                continue
            if not path.is_file() or path.is_symlink() or path.suffix not in LANGUAGES:
                continue
            if quick and len(rel.parts) > 1 and rel.parts[0] not in ("email", "json", "asyncio"):
                continue
            target = dest / Path(part).name / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, target)
            files += 1
            size += target.stat().st_size
            kinds[LANGUAGES[path.suffix]] += 1
    language = kinds.most_common(1)[0][0] if kinds else "python"
    return files, size, language


# CPU seconds (user + system) per measurement: the machine is shared, and under load the wall
# ratio swings by a third while CPU time stays put. Ours counts this process over the whole run
# (open, call, close) plus the parse workers it started and reaped.
CPU: dict[str, list[float]] = {"cli": [], "ours": []}


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def cli_time(
    binary: str, pattern: str, corpus: Path, sink: Path, language: str = "python"
) -> tuple[float, int]:
    cpu = _children_cpu()
    started = time.perf_counter()
    with sink.open("w") as out:
        proc = subprocess.run(
            [binary, "run", "-p", pattern, "-l", language, "--json=stream", str(corpus)],
            stdout=out,
            stderr=subprocess.DEVNULL,
        )
    elapsed = time.perf_counter() - started
    CPU["cli"].append(_children_cpu() - cpu)
    assert proc.returncode in (0, 1)
    with sink.open() as out:
        count = sum(1 for _ in out)
    return elapsed, count


def host() -> Host:
    return Host(plugins=[("astgrep", astgrep_plugin)], entry_points=False)


async def ours_cold(
    corpus: Path, pattern: str, limit: int, language: str = "python"
) -> tuple[float, int]:
    cpu = time.process_time() + _children_cpu()
    async with host().open_run(corpus) as run:
        started = time.perf_counter()
        args = {"pattern": pattern, "max_results": limit, "language": language}
        result = await run.call("ast_grep", args)
        elapsed = time.perf_counter() - started
    CPU["ours"].append(time.process_time() + _children_cpu() - cpu)
    assert not result.is_error, result.text
    return elapsed, len(result.data["matches"])


async def ours_warm(
    corpus: Path, first: str, pattern: str, limit: int = 0, language: str = "python"
) -> tuple[float, int]:
    """`pattern` in a run that has just searched `first` (the corpus's trees are cached)."""
    async with host().open_run(corpus) as run:
        await run.call("ast_grep", {"pattern": first, "max_results": 0, "language": language})
        started = time.perf_counter()
        args = {"pattern": pattern, "max_results": limit, "language": language}
        result = await run.call("ast_grep", args)
        elapsed = time.perf_counter() - started
    assert not result.is_error, result.text
    return elapsed, len(result.data["matches"])


def floor_cpu(corpus: Path, pattern: str, language: str) -> float:
    """CPU seconds to parse every file of `language` once and run one C query for the
    pattern's root kind (the cheapest candidate search py-tree-sitter offers) over each tree."""
    from tree_sitter import Query, QueryCursor

    grammar = next(g for g in builtin_grammars() if g.id == language)
    loaded = load(grammar.id, grammar.loader)
    root = Compiler(grammar, loaded).compile(pattern).root
    query = Query(loaded.language, f"({root.kind}) @c" if root.named else f'"{root.kind}" @c')
    parser = loaded.parser()
    suffixes = {s for s, lang in LANGUAGES.items() if lang == language}
    sources = [p.read_bytes() for p in sorted(corpus.rglob("*")) if p.suffix in suffixes]
    started = time.process_time()
    for data in sources:
        QueryCursor(query).captures(parser.parse(data).root_node)
    return time.process_time() - started


def report(label: str, cli: list[float], mine: list[float], counts: str, target: float | None):
    c, m = statistics.median(cli), statistics.median(mine)
    goal = f"target ≤ {target:g}x" if target else ""
    print(f"{label:34} CLI {c:7.2f} s   ours {m:7.2f} s   ratio {m / c:6.3f}x  {counts} {goal}")
    if CPU["cli"] and CPU["ours"]:
        cc, mc = statistics.median(CPU["cli"]), statistics.median(CPU["ours"])
        print(f"{'':34} CPU: CLI {cc:6.2f} s   ours {mc:6.2f} s   ratio {mc / cc:6.3f}x")
    CPU["cli"].clear()
    CPU["ours"].clear()


def _livetools() -> str:
    """The `livetools` script of this environment (as a user runs it)."""
    beside = Path(sys.executable).parent / "livetools"
    found = str(beside) if beside.exists() else shutil.which("livetools")
    if found is None:
        raise SystemExit("livetools not on PATH: uv sync")
    return found


def oneshot_time(pattern: str, limit: int, corpus: Path, language: str) -> tuple[float, int]:
    args = json.dumps({"pattern": pattern, "max_results": limit, "language": language})
    command = [_livetools(), "call", "ast_grep", args, "--root", str(corpus), "--json"]
    cpu = _children_cpu()
    started = time.perf_counter()
    proc = subprocess.run(
        command,
        capture_output=True,
        text=True,
    )
    elapsed = time.perf_counter() - started
    CPU["ours"].append(_children_cpu() - cpu)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return elapsed, len(json.loads(proc.stdout)["data"]["matches"])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("corpus", nargs="?", default="stdlib+pandas", help="see the docstring")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--language", default="", help="default: the corpus's most common")
    parser.add_argument("--quick", action="store_true", help="a small corpus, for a smoke run")
    parser.add_argument("--oneshot", action="store_true", help="time `livetools call` processes")
    parser.add_argument("--only", default="", help="run only the cases whose label has this text")
    parser.add_argument("--warm", action="store_true", help="also time each case repeated in a run")
    parser.add_argument("--floor", action="store_true", help="also measure parse + one C query")
    parser.add_argument(
        "--resident", action="store_true", help="--oneshot calls answered by a resident run"
    )
    args = parser.parse_args()
    if args.resident and not args.oneshot:
        raise SystemExit("--resident goes with --oneshot")
    binary = shutil.which("ast-grep")
    if binary is None:
        raise SystemExit("ast-grep not on PATH: uv sync (ast-grep-cli is in the test extra)")
    version = subprocess.run([binary, "--version"], capture_output=True, text=True).stdout
    with tempfile.TemporaryDirectory() as tmp:
        corpus = Path(tmp) / "corpus"
        files, size, found = build_corpus(corpus, args.corpus, args.quick)
        language = args.language or found
        sink = Path(tmp) / "cli.json"
        print(
            f"corpus {args.corpus}: {files} files, {size / 1e6:.1f} MB, {language}; "
            f"{version.strip()}; runs: {args.runs}"
        )
        cases = GENERAL_CASES
        if language in SELECTIVE:
            every = NON_SELECTIVE.get(language)
            general = [(label, every, n, t) for label, _, n, t in GENERAL_CASES] if every else []
            cases = [("selective", SELECTIVE[language], 0, None), *(general or GENERAL_CASES)]
        if language == "python":
            cases = PYTHON_CASES + GENERAL_CASES + PYTHON_TAIL
        if args.resident:
            start_resident(corpus)
        try:
            run_cases(args, cases, binary, corpus, sink, language)
        finally:
            if args.resident:
                stop_resident(corpus)


def start_resident(corpus: Path) -> None:
    command = [_livetools(), "resident", "start", "--root", str(corpus), "--idle-ttl", "3600"]
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL)


def stop_resident(corpus: Path) -> None:
    """Stop it, after checking it answered every call (a silent fallback would time the
    in-process path)."""
    listed = subprocess.run(
        [_livetools(), "resident", "list", "--json"], capture_output=True, text=True, check=True
    )
    calls = [json.loads(line) for line in listed.stdout.splitlines()]
    subprocess.run([_livetools(), "resident", "stop", "--root", str(corpus)], check=True)
    served = sum(r["calls"] for r in calls if r["root"] == str(corpus.resolve()))
    print(f"the resident answered {served} calls (warm-ups included)")


def run_cases(
    args: argparse.Namespace,
    cases: list[tuple[str, str, int, float | None]],
    binary: str,
    corpus: Path,
    sink: Path,
    language: str,
) -> None:
    for label, pattern, limit, target in cases:
        if args.only not in label:
            continue
        cli_runs, our_runs, cli_n, our_n = [], [], 0, 0
        if args.resident:  # untimed: the resident parses the trees and compiles the pattern
            oneshot_time(pattern, limit, corpus, language)
            CPU["ours"].clear()
        for _ in range(args.runs):
            t, cli_n = cli_time(binary, pattern, corpus, sink, language)
            cli_runs.append(t)
            if args.oneshot:
                t, our_n = oneshot_time(pattern, limit, corpus, language)
            else:
                t, our_n = asyncio.run(ours_cold(corpus, pattern, limit, language))
            our_runs.append(t)
        kind = ("resident " if args.resident else "one-shot ") if args.oneshot else ""
        counts = f"({cli_n} vs {our_n})"
        cli_cpu = statistics.median(CPU["cli"])  # before report() clears it
        report(f"{kind}{label} `{pattern}`", cli_runs, our_runs, counts, target)
        if args.floor:
            cpu = statistics.median(floor_cpu(corpus, pattern, language) for _ in cli_runs)
            cores = os.cpu_count() or 1
            cli_wall = statistics.median(cli_runs)
            print(
                f"{'':34} floor (parse + root-kind query): CPU {cpu:6.2f} s = "
                f"{cpu / cli_cpu:.2f}x the CLI's; over {cores} cores {cpu / cores:6.2f} s = "
                f"{cpu / cores / cli_wall:.2f}x the CLI's wall"
            )
        if args.warm and not args.oneshot:
            warm = [
                asyncio.run(ours_warm(corpus, pattern, pattern, limit, language)) for _ in cli_runs
            ]
            w = statistics.median(t for t, _ in warm)
            print(
                f"{'':34} warm (repeated in the run): {w:7.2f} s   ratio "
                f"{w / statistics.median(cli_runs):6.3f}x  ({warm[0][1]} matches)"
            )
    if language != "python" or args.oneshot:
        return
    cli_runs, our_runs, cli_n, our_n = [], [], 0, 0
    for _ in range(args.runs if args.only in "warm" else 0):
        t, cli_n = cli_time(binary, "isinstance($X, str)", corpus, sink)
        cli_runs.append(t)
        t, our_n = asyncio.run(ours_warm(corpus, "$F($$$ARGS)", "isinstance($X, str)"))
        our_runs.append(t)
    if cli_runs:
        report("warm `isinstance($X, str)`", cli_runs, our_runs, f"({cli_n} vs {our_n})", 0.1)


if __name__ == "__main__":
    main()
