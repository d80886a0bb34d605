"""`livetools tools` stays cheap: discovering every installed plugin, opening a run and exporting
schemas imports none of the heavy libraries a family needs only once it is used."""

from __future__ import annotations

import json
import subprocess
import sys

HEAVY = (
    "mcp",
    "jupyter_client",
    "zmq",
    "IPython",
    "tree_sitter",
    "tree_sitter_language_pack",
    "debugpy",
    "pygls",
    "lsprotocol",
)

PROBE = """
import contextlib, io, json, sys
from livetools.faces import cli
with contextlib.redirect_stdout(io.StringIO()) as out:
    code = cli.main(["tools", "--format", "json", "--vibe"])
names = [t["name"] for t in json.loads(out.getvalue())]
print(json.dumps({"code": code, "tools": names, "modules": sorted(sys.modules)}))
"""


def test_tools_imports_no_heavy_library(tmp_path):
    out = subprocess.run(
        [sys.executable, "-c", PROBE], cwd=tmp_path, capture_output=True, text=True, timeout=60
    )
    report = json.loads(out.stdout)
    assert report["code"] == 0
    assert {"ast_grep", "eval", "debug", "vibe_spawn"} <= set(report["tools"])
    loaded = {m.split(".")[0] for m in report["modules"]}
    assert not loaded & set(HEAVY), sorted(loaded & set(HEAVY))
