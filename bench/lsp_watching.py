"""How much a look for files changed on disk costs: inotify against its anchor, the bounded walk.

Every `lsp` call first asks what changed on disk since the last one (workspace/
didChangeWatchedFiles). The walk stats every file of the server's kinds; with inotify only the
paths the kernel named are stat'ed. The tree is the fetched real-world corpus (every project of
scripts/corpus.toml that is fetched), copied `--copies` times into a temporary folder; before
each look one file is rewritten, and both ways must report exactly that change.

    uv run python bench/lsp_watching.py [--copies 2] [--looks 30]

Prints the median look of each, the first look (the walk that also sets the watches), the
watches taken and the ratio walk/inotify (higher: inotify saves more).
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from livetools_lsp import inotify
from livetools_lsp.watching import CHANGED, MAX_FILES, WatchedFiles

KINDS = frozenset({".py", ".pyi", ".ts", ".tsx", ".js", ".go", ".c", ".h", ".cc", ".cpp", ".rs"})


def corpus_root() -> Path:
    out = subprocess.run(
        [sys.executable, "scripts/corpus.py", "path", "click"], capture_output=True, text=True
    )
    if out.returncode != 0:
        sys.exit("fetch the corpus first: uv run python scripts/corpus.py fetch")
    return Path(out.stdout.strip()).parent


def looks(tree: Path, use_inotify: bool, count: int) -> tuple[float, list[float], int]:
    watched = WatchedFiles(tree, KINDS, use_inotify)
    began = time.perf_counter()
    watched.changes()
    first = time.perf_counter() - began
    taken = inotify.watches() if use_inotify else len(watched.snapshot or {})
    if watched.partial:
        sys.exit(f"the walk was cut at {MAX_FILES:,} files or its time bound: use fewer copies")
    files = sorted(p for p in watched.snapshot or {} if p.suffix == ".py")
    times = []
    for i in range(count):
        target = files[i * 7919 % len(files)]
        target.write_text(target.read_text() + f"\n# {i}\n")
        began = time.perf_counter()
        found = watched.changes()
        times.append(time.perf_counter() - began)
        assert found == [(target, CHANGED)], found
    assert watched.inotify is use_inotify, "the watch gave out: raise the watch limit"
    watched.close()
    return first, times, taken


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--copies", type=int, default=2)
    parser.add_argument("--looks", type=int, default=30)
    args = parser.parse_args()
    source = corpus_root()
    with tempfile.TemporaryDirectory() as tmp:
        tree = Path(tmp)
        for i in range(args.copies):
            shutil.copytree(source, tree / f"copy{i}", symlinks=True)
        walk_first, walk, counted = looks(tree, False, args.looks)
        ino_first, ino, taken = looks(tree, True, args.looks)
    w, n = statistics.median(walk), statistics.median(ino)
    print(f"tree: {counted:,} files of the watched kinds in {taken:,} folders (all watched)")
    print(f"first look   walk {walk_first * 1000:8.1f} ms   inotify {ino_first * 1000:8.1f} ms")
    print(f"median look  walk {w * 1000:8.2f} ms   inotify {n * 1000:8.2f} ms   ratio {w / n:.0f}x")


if __name__ == "__main__":
    main()
