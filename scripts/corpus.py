"""Fetch the real-world corpus: pinned projects from the package registries, for tests to check
tools against oracles on code nobody here wrote.

Projects are listed in scripts/corpus.toml and scripts/corpus.d/*.toml (a file per group of tests,
so adding a group touches no shared list). Each is fetched with the registry's ordinary client (pip
for sdists, npm for package tarballs, apt-get for Debian packages and Debian source packages),
unpacked into a cache outside the repository, and marked complete by a stamp file written last,
so an interrupted fetch is redone and a complete one is never fetched twice.

    uv run python scripts/corpus.py fetch [--family lsp] [NAME ...]
    uv run python scripts/corpus.py list
    uv run python scripts/corpus.py path NAME

The cache is $LIVETOOLS_CORPUS, else ~/.cache/livetools/corpus.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import tomllib
import zipfile
from pathlib import Path
from typing import Any

MANIFEST = Path(__file__).with_name("corpus.toml")
MANIFESTS = Path(__file__).with_name("corpus.d")
STAMP_SUFFIX = ".stamp.json"


def cache_dir() -> Path:
    env = os.environ.get("LIVETOOLS_CORPUS")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "livetools" / "corpus"


def load_manifest() -> list[dict[str, Any]]:
    projects: list[dict[str, Any]] = []
    for path in [MANIFEST, *sorted(MANIFESTS.glob("*.toml"))]:
        with path.open("rb") as f:
            projects += tomllib.load(f).get("project", [])
    names = [p["name"] for p in projects]
    if len(names) != len(set(names)):
        raise SystemExit(f"corpus manifests: duplicate project names in {names}")
    return projects


def stamp_path(name: str) -> Path:
    return cache_dir() / f"{name}{STAMP_SUFFIX}"


def read_stamp(name: str) -> dict[str, Any] | None:
    try:
        return json.loads(stamp_path(name).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def is_fetched(project: dict[str, Any]) -> bool:
    stamp = read_stamp(project["name"])
    return bool(stamp) and stamp.get("pinned") == project["version"]  # type: ignore[union-attr]


def _run(argv: list[str], cwd: Path) -> str:
    proc = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=900)
    if proc.returncode != 0:
        tail = (proc.stderr or proc.stdout).strip()[-1500:]
        raise RuntimeError(f"{' '.join(argv)} exited {proc.returncode}:\n{tail}")
    return proc.stdout


def _pip() -> list[str]:
    """A pip to download with: this interpreter's, else its base interpreter's (a uv venv has no
    pip), else one that uv runs for the occasion."""
    base = getattr(sys, "_base_executable", sys.executable)
    for python in dict.fromkeys([sys.executable, base]):
        if subprocess.run([python, "-m", "pip", "--version"], capture_output=True).returncode == 0:
            return [python, "-m", "pip"]
    return ["uv", "tool", "run", "pip"]


def _download(project: dict[str, Any], work: Path) -> tuple[Path, str]:
    """The downloaded archive and the version it really is."""
    source, package, version = project["source"], project["package"], project["version"]
    if source == "pypi":
        _run(
            [
                *_pip(),
                "download",
                "--quiet",
                "--no-deps",
                "--no-binary",
                ":all:",
                f"{package}=={version}",
                "-d",
                str(work),
            ],
            work,
        )
        (archive,) = [p for p in work.iterdir() if p.name.endswith((".tar.gz", ".zip"))]
        return archive, version
    if source == "npm":
        _run(
            ["npm", "pack", "--silent", f"{package}@{version}", "--pack-destination", str(work)],
            work,
        )
        (archive,) = list(work.glob("*.tgz"))
        return archive, version
    if source == "deb":
        try:
            _run(["apt-get", "download", "-q", f"{package}={version}"], work)
        except RuntimeError as exc:
            print(
                f"corpus: {package}={version} not in the archive ({exc}); taking the candidate",
                file=sys.stderr,
            )
            _run(["apt-get", "download", "-q", package], work)
        (archive,) = list(work.glob("*.deb"))
        real = _run(["dpkg-deb", "-f", str(archive), "Version"], work).strip()
        return archive, real
    if source == "debsrc":
        return _download_debian_source(package, version, work)
    raise SystemExit(f"corpus.toml: {project['name']}: unknown source {source!r}")


def _apt_source_options() -> list[str]:
    """apt options for a private source index in the cache: the machine's own Debian archives
    (read from its apt configuration) as `deb-src` entries, so a Debian source package is found
    without touching the system's apt state. The index is updated once per process."""
    state = cache_dir() / ".apt-sources"
    parts, lists = state / "sources.list.d", state / "lists"
    options = [
        "-o",
        "Dir::Etc::SourceList=/dev/null",
        "-o",
        f"Dir::Etc::SourceParts={parts}",
        "-o",
        f"Dir::State::Lists={lists}",
    ]
    if not _APT_UPDATED:
        (lists / "partial").mkdir(parents=True, exist_ok=True)
        parts.mkdir(parents=True, exist_ok=True)
        system = Path("/etc/apt")
        deb822 = [
            f.read_text(encoding="utf-8").replace("Types: deb\n", "Types: deb-src\n")
            for f in sorted((system / "sources.list.d").glob("*.sources"))
        ]
        one_line = [
            "deb-src" + line[3:]
            for f in [system / "sources.list", *sorted((system / "sources.list.d").glob("*.list"))]
            if f.is_file()
            for line in f.read_text(encoding="utf-8").splitlines()
            if line.startswith("deb ")
        ]
        (parts / "corpus.sources").write_text("\n\n".join(deb822), encoding="utf-8")
        (parts / "corpus.list").write_text("\n".join(one_line) + "\n", encoding="utf-8")
        _run(["apt-get", "-q", *options, "update"], state)
        _APT_UPDATED.append(True)
    return options


_APT_UPDATED: list[bool] = []


def _download_debian_source(package: str, version: str, work: Path) -> tuple[Path, str]:
    """A Debian source package's upstream tarball (`.orig.tar.*`) and its Debian version."""
    options = _apt_source_options()
    command = ["apt-get", "-q", *options, "source", "--download-only"]
    try:
        _run([*command, f"{package}={version}"], work)
    except RuntimeError as exc:
        print(
            f"corpus: source {package}={version} not in the archive ({exc}); taking the candidate",
            file=sys.stderr,
        )
        _run([*command, package], work)
    (dsc,) = list(work.glob("*.dsc"))
    (orig,) = [p for p in work.iterdir() if ".orig.tar." in p.name]
    return orig, dsc.name.removeprefix(f"{package}_").removesuffix(".dsc")


def _unpack(archive: Path, into: Path) -> None:
    into.mkdir()
    name = archive.name
    if name.endswith(".deb"):
        _run(["dpkg-deb", "-x", str(archive), str(into)], into)
    elif name.endswith((".tar.gz", ".tgz", ".tar.xz", ".tar.bz2")):
        with tarfile.open(archive) as tar:
            tar.extractall(into, filter="data")
    elif name.endswith(".zip"):
        with zipfile.ZipFile(archive) as z:
            z.extractall(into)
    else:
        raise RuntimeError(f"cannot unpack {name}")


def _project_tree(project: dict[str, Any], unpacked: Path, work: Path) -> Path:
    """The folder that is the project: `root` (default: the archive's single top folder), or the
    unpacked `unzip` archive."""
    if "unzip" in project:
        inner = work / "inner"
        inner.mkdir()
        with zipfile.ZipFile(unpacked / project["unzip"]) as z:
            members = z.namelist()
            if "keep" in project:
                members = [m for m in members if any(m.startswith(k) for k in project["keep"])]
            z.extractall(inner, members)
        return inner
    if "root" in project:
        return unpacked / project["root"]
    tops = list(unpacked.iterdir())
    return tops[0] if len(tops) == 1 and tops[0].is_dir() else unpacked


def fetch(project: dict[str, Any]) -> str:
    name = project["name"]
    if is_fetched(project):
        return f"{name}: cached"
    cache = cache_dir()
    cache.mkdir(parents=True, exist_ok=True)
    dest = cache / name
    with tempfile.TemporaryDirectory(dir=cache, prefix=f".{name}.") as tmp:
        work = Path(tmp)
        archive, real_version = _download(project, work)
        _unpack(archive, work / "unpacked")
        tree = _project_tree(project, work / "unpacked", work)
        staged = work / "tree"
        if "keep" in project and "unzip" not in project:
            staged.mkdir()
            for sub in project["keep"]:
                if (tree / sub).exists():
                    (staged / sub).parent.mkdir(parents=True, exist_ok=True)
                    shutil.move(str(tree / sub), staged / sub)
        else:
            shutil.move(str(tree), staged)
        stamp_path(name).unlink(missing_ok=True)
        if dest.exists():
            shutil.rmtree(dest)
        staged.rename(dest)
    files = sum(1 for p in dest.rglob("*") if p.is_file())
    stamp = {"pinned": project["version"], "version": real_version, "files": files}
    stamp_path(name).write_text(json.dumps(stamp), encoding="utf-8")
    note = "" if real_version == project["version"] else f" (pinned {project['version']})"
    what = f"{project['source']} {project['package']} {real_version}{note}"
    return f"{name}: fetched {what}, {files} files"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    f = sub.add_parser("fetch", help="download projects (all, a family's, or the named ones)")
    f.add_argument("names", nargs="*")
    f.add_argument("--family")
    sub.add_parser("list", help="every project and whether it is fetched")
    p = sub.add_parser("path", help="print a fetched project's folder")
    p.add_argument("name")
    args = parser.parse_args(argv)

    projects = load_manifest()
    by_name = {p["name"]: p for p in projects}
    if args.command == "list":
        for project in projects:
            state = "fetched" if is_fetched(project) else "missing"
            print(
                f"{project['name']:18} {state:8} {project['source']:5} {project['package']} "
                f"{project['version']}  [{', '.join(project['languages'])}]"
            )
        return 0
    if args.command == "path":
        if args.name not in by_name or not is_fetched(by_name[args.name]):
            print(f"{args.name}: not fetched", file=sys.stderr)
            return 1
        print(cache_dir() / args.name)
        return 0

    unknown = [n for n in args.names if n not in by_name]
    if unknown:
        print(f"unknown corpus projects: {', '.join(unknown)} (see `list`)", file=sys.stderr)
        return 2
    chosen = [by_name[n] for n in args.names] if args.names else projects
    if args.family:
        chosen = [p for p in chosen if args.family in p["families"]]
    failures = 0
    # Debian downloads one at a time (apt's own locking); the others in parallel.
    debs = [p for p in chosen if p["source"] in ("deb", "debsrc")]
    others = [p for p in chosen if p["source"] not in ("deb", "debsrc")]
    with concurrent.futures.ThreadPoolExecutor(max_workers=4) as pool:
        futures = {pool.submit(fetch, p): p for p in others}
        for project in debs:
            try:
                print(fetch(project), flush=True)
            except Exception as exc:
                failures += 1
                print(f"{project['name']}: FAILED: {exc}", file=sys.stderr, flush=True)
        for future in concurrent.futures.as_completed(futures):
            try:
                print(future.result(), flush=True)
            except Exception as exc:
                failures += 1
                print(f"{futures[future]['name']}: FAILED: {exc}", file=sys.stderr, flush=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
