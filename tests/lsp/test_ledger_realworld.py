"""The write's "new diagnostics" tell the truth on real C++ (issue 32 §3): CLI11's headers under
clangd, with a compile database turning warnings on so the headers have warnings of their own.

- a rename across headers (`split_names`, defined in Split.hpp, called in Option.hpp, which the
  run never opened) blames none of Option.hpp's warnings: they were there before;
- a header edit that breaks its includers (Option's `check` renamed) names their new errors, and
  writing the old text back, at once or after a pause, reports nothing new.

Oracles: clangd's own checker (`clangd --check=FILE`, which prints the errors it would publish;
clangd 14 prints no warnings there) for errors before/after, and a fresh raw clangd
(tests/lsp/differential.py's RawClient) for each file's full count of diagnostics."""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
from pathlib import Path

from tests.corpus import corpus_copy, realworld
from tests.lsp.conftest import lsp_run
from tests.lsp.differential import RawClient, binary, uri_of

pytestmark = realworld

MAIN = """#include <CLI/CLI.hpp>

#include <string>

int main(int argc, char **argv) {
    CLI::App app{"demo"};
    std::string name;
    int count = 0;
    app.add_option("-n,--name", name, "a name");
    app.add_option("-c,--count", count, "a count")->check(CLI::PositiveNumber);
    app.add_flag("-v,--verbose", "be loud");
    CLI11_PARSE(app, argc, argv);
    return count;
}
"""
# -Weverything (less the noise of C++98 compatibility and padding) gives CLI11's headers
# warnings of their own, as the reporter's had; -Wall -Wextra -Wconversion alone gives none.
FLAGS = [
    "c++",
    "-std=c++17",
    "-I.",
    "-Wall",
    "-Wextra",
    "-Wshadow",
    "-Wconversion",
    "-Weverything",
    "-Wno-c++98-compat",
    "-Wno-c++98-compat-pedantic",
    "-Wno-padded",
    "-c",
]
ERROR = re.compile(r"^E\[[\d:.]+\] \[(\w+)\] Line (\d+): (.*)$")
BOUND = 120.0
INCLUDERS = ("main.cpp", "CLI/App.hpp")
NEW_LINE = re.compile(r"^(\S+):(\d+): error \[\w+\]: (.*)$")


def _project(tmp_path: Path) -> Path:
    root = corpus_copy("cli11", tmp_path)
    (root / "main.cpp").write_text(MAIN)
    entry = {
        "directory": str(root),
        "file": str(root / "main.cpp"),
        "arguments": [*FLAGS, "main.cpp"],
    }
    (root / "compile_commands.json").write_text(json.dumps([entry]))
    return root


async def check_errors(clangd: str, root: Path, rel: str) -> list[str]:
    """The errors `clangd --check` finds in `rel` as it is on disk ("line: message")."""
    proc = await asyncio.create_subprocess_exec(
        clangd,
        f"--check={rel}",
        "--check-lines=1-1",
        cwd=root,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    out, _ = await asyncio.wait_for(proc.communicate(), BOUND)
    found = [m for line in out.decode().splitlines() if (m := ERROR.match(line))]
    return sorted(f"{m[2]}: {m[3]}" for m in found)


async def raw_counts(clangd: str, root: Path, rels: list[str]) -> dict[str, int]:
    """How many diagnostics a fresh clangd publishes for each file opened on its own."""
    raw = await RawClient.start([clangd], root)
    try:
        counts: dict[str, int] = {}
        for rel in rels:
            uri = uri_of(root / rel)
            await raw.open(root / rel, "cpp")
            loop = asyncio.get_running_loop()
            end = loop.time() + BOUND
            while uri not in raw.diagnostics and (left := end - loop.time()) > 0:
                raw.changed.clear()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(raw.changed.wait(), min(left, 1.0))
            assert uri in raw.diagnostics, f"no diagnostics for {rel} in {BOUND} s"
            counts[rel] = len(raw.diagnostics[uri])
        return counts
    finally:
        await raw.close()


async def test_a_rename_across_headers_blames_none_of_their_warnings(tmp_path: Path) -> None:
    clangd = binary("clangd", "apt-get install clangd")
    root = _project(tmp_path)
    files = ["CLI/Option.hpp", "CLI/Split.hpp", "main.cpp"]
    before = await raw_counts(clangd, root, files)
    errors_before = {f: await check_errors(clangd, root, f) for f in files}
    assert before["CLI/Option.hpp"] > 0, before  # the header has warnings of its own
    async with lsp_run(root, ["clangd"]) as run:
        r = await run.call(
            "lsp_rename",
            {
                "file": "CLI/Split.hpp",
                "line": 67,
                "symbol": "split_names",
                "new_name": "split_option_names",
            },
        )
        assert not r.is_error and "CLI/Option.hpp (1)" in r.text, r.text
        assert "new diagnostics after" not in r.text, r.text
    after = await raw_counts(clangd, root, files)
    errors_after = {f: await check_errors(clangd, root, f) for f in files}
    print(f"oracle before {before} {errors_before}, after {after} {errors_after}")
    assert after == before and errors_after == errors_before


def reported_new(text: str) -> list[str]:
    """The write's "new diagnostics" lines as "file:line: message" (nothing after the list)."""
    lines = text.splitlines()
    heads = [n for n, line in enumerate(lines) if line.startswith("new diagnostics after")]
    out: list[str] = []
    for line in lines[heads[0] + 1 :] if heads else []:
        m = NEW_LINE.match(line)
        if not m:
            break
        out.append(f"{m[1]}:{m[2]}: {m[3]}")
    return sorted(out)


async def check_all(clangd: str, root: Path) -> list[str]:
    """The oracle's errors in the includers, as "file:line: Message" (clangd capitalizes what it
    publishes; its checker prints clang's lower-case text)."""
    out: list[str] = []
    for rel in INCLUDERS:
        for error in await check_errors(clangd, root, rel):
            line, message = error.split(": ", 1)
            out.append(f"{rel}:{line}: {message[:1].upper()}{message[1:]}")
    return sorted(out)


async def test_a_header_edit_reports_its_includers_and_the_undo_nothing(tmp_path: Path) -> None:
    """Option's two `check` overloads renamed: main.cpp's call and App.hpp's three no longer
    compile, and the write says so; the old text written back (at once, then after a pause)
    reports nothing new, as the oracle finds those errors gone."""
    clangd = binary("clangd", "apt-get install clangd")
    root = _project(tmp_path)
    old = (root / "CLI" / "Option.hpp").read_text()
    broken = old.replace("Option *check(", "Option *check_it(")
    assert await check_all(clangd, root) == []
    async with lsp_run(root, ["clangd"]) as run:
        await run.call("lsp", {"action": "diagnostics", "file": "main.cpp"})
        for pause in (0.0, 2.0):
            r = await run.call("write", {"path": "CLI/Option.hpp", "content": broken})
            oracle = await check_all(clangd, root)
            assert len(oracle) == 4 and "main.cpp:10: No member named 'check'" in oracle[-1]
            assert reported_new(r.text) == oracle, (pause, r.text, oracle)
            await asyncio.sleep(pause)
            r = await run.call("write", {"path": "CLI/Option.hpp", "content": old})
            assert "new diagnostics after" not in r.text, (pause, r.text)
            assert await check_all(clangd, root) == []


async def test_the_undo_of_a_header_edit_blames_none_of_the_warnings_it_hid(
    tmp_path: Path,
) -> None:
    """A missing include in Option.hpp is fatal: App.hpp, which the write opens as an includer,
    loses its six warnings to "too many errors". Writing the old text back brings them back:
    there before the edit (the oracle counts the same), so said as "back again", not as new."""
    clangd = binary("clangd", "apt-get install clangd")
    root = _project(tmp_path)
    old = (root / "CLI" / "Option.hpp").read_text()
    broken = old.replace('#include "Error.hpp"', '#include "Error.hpp"\n#include "Missing.hpp"', 1)
    files = ["CLI/Option.hpp", "CLI/App.hpp", "main.cpp"]
    before = await raw_counts(clangd, root, files)
    assert before["CLI/App.hpp"] > 0, before
    async with lsp_run(root, ["clangd"]) as run:
        await run.call("lsp", {"action": "diagnostics", "file": "main.cpp"})
        r = await run.call("write", {"path": "CLI/Option.hpp", "content": broken})
        assert "CLI/Option.hpp:21: error [pp_file_not_found]" in r.text, r.text
        assert str(root.resolve()) not in r.text, r.text  # clangd's notes name files relative
        oracle = await check_errors(clangd, root, "main.cpp")
        assert any("'Missing.hpp' file not found" in e for e in oracle), oracle
        r = await run.call("write", {"path": "CLI/Option.hpp", "content": old})
        assert reported_new(r.text) == [] and "added no new diagnostics" in r.text, r.text
        assert "back again" in r.text and "CLI/App.hpp:" in r.text, r.text
    assert await raw_counts(clangd, root, files) == before
