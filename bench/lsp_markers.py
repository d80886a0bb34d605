"""lsp status's sub-project search against its anchor, the glob walk it replaced (kept as the
oracle in tests/lsp/test_subprojects.py): CPU per status for every built-in server spec's
markers, on the load bench's project and on the same with N packages in node_modules.

    uv run python bench/lsp_markers.py [--packages 500] [--repeat 20]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from livetools_lsp.subprojects import Subprojects

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))  # the anchor lives with the tests
from tests.lsp.test_subprojects import MARKER_SETS, by_glob, touch  # noqa: E402

PROJECT = REPO / "tests" / "fixtures" / "projects" / "lsp" / "py"


def per_status(root: Path, repeat: int) -> tuple[float, float]:
    """Median CPU seconds of one status's marker search: the globs, then one listing."""
    sets = [m for m in MARKER_SETS if not any((root / n).exists() for n in m)]
    globs, listing = [], []
    for _ in range(repeat):
        t = time.process_time()
        for markers in sets:
            by_glob(root, markers)
        globs.append(time.process_time() - t)
        t = time.process_time()
        found = Subprojects(root)
        for markers in sets:
            found.first_with(markers)
        listing.append(time.process_time() - t)
    return statistics.median(globs), statistics.median(listing)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--packages", type=int, default=500)
    parser.add_argument("--repeat", type=int, default=20)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "proj"
        shutil.copytree(PROJECT, root)
        cases = [("the load bench's project", 0), (f"+ {args.packages} packages", args.packages)]
        for label, packages in cases:
            for i in range(packages):
                touch(root, f"node_modules/p{i}/package.json", f"node_modules/p{i}/index.js")
            glob_s, list_s = per_status(root, args.repeat)
            print(
                f"{label:32} globs {glob_s * 1000:7.2f} ms   listing {list_s * 1000:6.3f} ms"
                f"   ratio {list_s / glob_s:.3f}x"
            )


if __name__ == "__main__":
    main()
