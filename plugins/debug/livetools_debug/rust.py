"""Rust programs under lldb: rustc's own formatters and readable function names.

Without the formatters lldb shows a `String` as `alloc::string::String @ 0x…` and raw fields;
rustc ships them in its sysroot (`lib/rustlib/etc/lldb_lookup.py` + `lldb_commands`, what
`rust-lldb` loads), so a Rust program gets them at launch. Legacy-mangled names keep a
`::h<16 hex>` hash and `$u7b$`-style escapes that only make frames longer."""

from __future__ import annotations

import functools
import mmap
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

from .dap import DapError

# Every Rust binary with debug info names its standard library's sources by rustc's commit.
_RUST_MARK = b"/rustc/"
_OPTION_SUMMARY = Path(__file__).with_name("lldb_rust_option.py")
_HASH = re.compile(r"::h[0-9a-f]{16}(?=$|>|\s)")
_ESCAPES = {
    "$SP$": "@",
    "$BP$": "*",
    "$RF$": "&",
    "$LT$": "<",
    "$GT$": ">",
    "$LP$": "(",
    "$RP$": ")",
    "$C$": ",",
}
_SIZE = re.compile(r"^\s*size=(\d+)\s*$")
_PATH = re.compile(r"^[A-Za-z_]\w*(\.\w+|\[\d+\])*$")
_UNICODE = re.compile(r"\$u([0-9a-f]{2,6})\$")


def is_rust_binary(program: Path) -> bool:
    """True when `program` is a Rust executable (its debug info names rustc's library)."""
    try:
        with program.open("rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as data:
            return data.find(_RUST_MARK) >= 0
    except (OSError, ValueError):  # unreadable, empty, not a regular file
        return False


@functools.cache
def formatter_dir() -> Path | None:
    """rustc's `lib/rustlib/etc` holding the lldb formatters, or None (no rustc, none shipped)."""
    rustc = shutil.which("rustc")
    if rustc is None:
        return None
    try:
        done = subprocess.run(
            [rustc, "--print", "sysroot"], capture_output=True, text=True, timeout=30
        )
    except (OSError, subprocess.SubprocessError):
        return None
    etc = Path(done.stdout.strip()) / "lib" / "rustlib" / "etc"
    if done.returncode != 0 or not (etc / "lldb_lookup.py").is_file():
        return None
    return etc if (etc / "lldb_commands").is_file() else None


def init_commands(program: Path, visible: bool = True) -> list[str]:
    """The lldb commands that load rustc's formatters for a Rust `program` (none for other
    programs, or when the sysroot is not `visible` to the adapter, e.g. outside its sandbox)."""
    etc = formatter_dir()
    if etc is None or not visible or not is_rust_binary(program):
        return []
    return [
        f'command script import "{etc / "lldb_lookup.py"}"',
        f'command source -s 1 "{etc / "lldb_commands"}"',
        # which variant an Option is, where lldb 16 shows Some and None alike
        f'command script import "{_OPTION_SUMMARY}"',
        'type summary add -F lldb_rust_option.summary -x "^core::option::Option<.+>$" '
        "--category Rust",
    ]


def frame_name(name: str) -> str:
    """`demo::main::h8676246549aa33bf` → `demo::main`; `_$u7b$$u7b$closure$u7d$$u7d$` →
    `{{closure}}`. Names without these marks come back unchanged."""
    if "$" in name:
        for escape, char in _ESCAPES.items():
            name = name.replace(escape, char)
        name = _UNICODE.sub(lambda m: chr(int(m.group(1), 16)), name).replace("..", "::")
        name = name.replace("::_{", "::{")
    return _HASH.sub("", name)


def size(value: object) -> int | None:
    """N of a formatter's `size=N` summary (Vec, HashMap, slices): lldb-vscode hands out as many
    children as asked, reading memory past the last item, so the list is cut at N."""
    match = _SIZE.match(value) if isinstance(value, str) else None
    return int(match.group(1)) if match else None


def arrow_paths(expression: str) -> list[str]:
    """`item.tags[0]` → `item->tags[0]`, …: lldb's variable paths know a Vec's items (its
    expression parser does not), but need `->` through a reference where Rust writes `.`.
    Every mix of `.` and `->`, most arrows first; only for plain paths of up to three dots."""
    if not _PATH.match(expression) or not 0 < expression.count(".") <= 3:
        return []
    head, *members = expression.split(".")
    variants = []
    for mask in range(1, 2 ** len(members)):
        text = head
        for i, member in enumerate(members):
            text += ("->" if mask >> i & 1 else ".") + member
        variants.append(text)
    return sorted(variants, key=lambda v: -v.count("->"))


async def evaluate_path(
    client: Any, request: dict[str, Any], within: float
) -> dict[str, Any] | None:
    """The first `arrow_paths` variant of a refused expression that lldb evaluates, or None."""
    for variant in arrow_paths(str(request.get("expression", ""))):
        try:
            return await client.request(
                "evaluate", {**request, "expression": variant}, within=within
            )
        except DapError:
            continue
    return None
