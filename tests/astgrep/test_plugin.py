"""The family as a plugin: a third-party grammar through the hook, lazy imports, the schema
budget, rewrite rendering details."""

from __future__ import annotations

import functools
import json
import subprocess
import sys

import livetools_astgrep.plugin
from livetools import Host, hookimpl
from livetools_astgrep import Grammar
from livetools_astgrep.grammar import pack_language
from tests.astgrep.oracle import _ENGINE, compile_pattern, grammars, jobs_for
from tests.support import REPO


class StarlarkLike:
    """A third-party plugin: BUILD-ish files parsed with the Python grammar, and a grammar whose
    loader is a closure (cannot be shipped to workers: searched in-process)."""

    @hookimpl
    def livetools_grammars(self):
        return [
            Grammar(
                id="buildpy",
                extensions=(".bzlx",),
                loader=functools.partial(pack_language, "python"),
                metavar_char="µ",
                contexts=("{}",),
                tuned=True,
            ),
            Grammar(id="closure", extensions=(".clo",), loader=lambda: pack_language("python")),
        ]


async def test_third_party_grammar_is_searched(tmp_path):
    (tmp_path / "BUILD.bzlx").write_text('cc_library(name = "x", deps = [":y"])\n')
    (tmp_path / "f.clo").write_text("cc_library(name = 'z')\n")
    plugins = [("astgrep", livetools_astgrep.plugin), ("starlark", StarlarkLike())]
    host = Host(plugins=plugins, entry_points=False)
    options = {"astgrep": {"inline_bytes": 0}}
    async with host.open_run(tmp_path, options=options) as run:
        found = await run.call("ast_grep", {"pattern": "cc_library(name = $N, $$$)"})
        closure = await run.call("ast_grep", {"pattern": "cc_library($$$)", "language": "closure"})
        status = await run.resource("astgrep").status()
    assert [m["bindings"]["N"] for m in found.data["matches"]] == ['"x"']
    assert found.data["languages"]["buildpy"]["files"] == 1
    assert [m["file"] for m in closure.data["matches"]] == ["f.clo"]
    assert status["usable"] is True and status["grammars"] > 150


def test_plugin_import_and_tool_listing_stay_light():
    code = (
        "import sys, livetools_astgrep.plugin\n"
        "from livetools import Host\n"
        "import asyncio\n"
        "async def main():\n"
        "    host = Host(plugins=[('astgrep', livetools_astgrep.plugin)], entry_points=False)\n"
        "    async with host.open_run('.') as run:\n"
        "        run.schemas('agent')\n"
        "asyncio.run(main())\n"
        "print(sorted(m for m in sys.modules if m.startswith('tree_sitter')))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=REPO
    )
    assert out.stdout.strip() == "[]", out.stderr


def test_schema_budget():
    out = subprocess.run(
        [sys.executable, "-m", "livetools.faces.cli", "tools", "--format", "mcp"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=REPO,
    )
    tools = {t["name"]: t for t in json.loads(out.stdout)}
    ours = [tools[n] for n in ("ast_grep", "ast_edit", "resolve")]
    size = sum(len(json.dumps(t, separators=(",", ":"))) for t in ours)
    assert size <= 1800, size
    assert tools["ast_grep"]["annotations"]["readOnlyHint"] is True
    assert tools["ast_edit"]["_meta"]["livetools/tier"] == "write"


def rewrite(tmp_path, name, code, lang, pattern, template):
    path = tmp_path / name
    path.write_text(code)
    p = compile_pattern(lang, pattern)
    (out,) = _ENGINE.rewrite(jobs_for([path]), p, grammars()[lang].loader, template)
    assert out.status == "ok", out.note
    return out.new.decode() if out.new is not None else code


def test_multiline_string_in_a_capture_is_not_reindented(tmp_path):
    code = 'if x:\n    show(\n        """a\nb""",\n    )\n'
    got = rewrite(tmp_path, "a.py", code, "python", "show($A,)", "if True:\n    print($A)")
    assert got == 'if x:\n    if True:\n        print("""a\nb""")\n'


def test_empty_rewrite_deletes_whole_lines(tmp_path):
    code = "def f():\n    debug(1)\n    return 2\n"
    got = rewrite(tmp_path, "a.py", code, "python", "debug($A)", "")
    assert got == "def f():\n    return 2\n"


def test_go_rewrite_keeps_tabs(tmp_path):
    code = "package m\n\nfunc f() {\n\tif ok {\n\t\tfmt.Println(a,\n\t\t\tb)\n\t}\n}\n"
    got = rewrite(
        tmp_path,
        "m.go",
        code,
        "go",
        "fmt.Println($$$A)",
        "if debug {\n\tlog.Print($$$A)\n}",
    )
    assert got == (
        "package m\n\nfunc f() {\n\tif ok {\n\t\tif debug {\n\t\t\tlog.Print(a,\n"
        "\t\t\t\tb)\n\t\t}\n\t}\n}\n"
    )
