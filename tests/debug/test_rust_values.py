"""Rust under real lldb with rustc's formatters: a crate nobody here wrote (semver, from Debian's
librust-semver-dev, its own test binary) and a small program using String, Vec and HashMap."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

from livetools_debug.rust import formatter_dir, frame_name
from tests.corpus import corpus_copy
from tests.support import missing, require_binary

from .conftest import line_of, require_lldb

PROGRAM = """\
use std::collections::HashMap;

fn main() {
    let greeting = String::from("héllo wörld");
    let squares: Vec<u64> = (1..=5).map(|i| i * i).collect();
    let mut counts: HashMap<String, u32> = HashMap::new();
    counts.insert("a".to_string(), 1);
    let item = Item { name: greeting.clone(), tags: vec!["x".to_string(), "y".to_string()] };
    let some: Option<u32> = Some(7);
    let none: Option<u32> = None;
    let first: Option<&u64> = squares.first();
    let named: Option<String> = Some("hi".to_string());
    let unnamed: Option<String> = None;
    println!("{:?} {:?}", named, unnamed);
    show(&item, some, none, first);
    let total = squares.len() + counts.len(); // stop here
    println!("{} {:?} {:?} {}", greeting, squares, counts, total);
}

struct Item {
    name: String,
    tags: Vec<String>,
}

fn show(item: &Item, some: Option<u32>, none: Option<u32>, first: Option<&u64>) {
    let count = item.tags.len(); // in show
    println!("{} {:?} {:?} {:?} {:?} {}", item.name, item.tags, some, none, first, count);
}
"""


def _cargo(root: Path, *args: str) -> None:
    require_binary("cargo", "install a Rust toolchain (rustup) providing cargo and rustc")
    if formatter_dir() is None:
        missing("rustc's lldb formatters not found: `rustc --print sysroot`/lib/rustlib/etc")
    subprocess.run(["cargo", *args, "--offline", "-q"], cwd=root, check=True, timeout=300)


async def _locals(dbg) -> list[dict]:
    stack = await dbg.ok("stack")
    scopes = await dbg.ok("scopes", frame_id=stack.data["frames"][0]["id"])
    ref = next(s["reference"] for s in scopes.data if s["name"] == "Locals")
    return (await dbg.ok("variables", reference=ref)).data["variables"]


def test_frame_names_lose_hashes_and_escapes() -> None:
    assert frame_name("demo::main::h8676246549aa33bf") == "demo::main"
    closure = "std::rt::lang_start::_$u7b$$u7b$closure$u7d$$u7d$::h6bbeecab1065ddbd"
    assert frame_name(closure) == "std::rt::lang_start::{{closure}}"
    assert frame_name("main") == "main" and frame_name("ns::f<int>") == "ns::f<int>"


async def test_strings_vecs_and_maps_read_like_rust(tmp_path: Path, open_debugger) -> None:
    require_lldb()
    root = tmp_path / "demo"
    (root / "src").mkdir(parents=True)
    (root / "Cargo.toml").write_text(
        '[package]\nname = "demo"\nversion = "0.1.0"\nedition = "2021"\n'
    )
    (root / "src" / "main.rs").write_text(PROGRAM)
    _cargo(root, "build")
    dbg = await open_debugger(root)
    main_rs = root / "src/main.rs"
    lines = [line_of(main_rs, "in show"), line_of(main_rs, "stop here")]
    await dbg.ok("breakpoints", file="src/main.rs", lines=lines)
    shown = await dbg.ok("launch", program="target/debug/demo")
    assert shown.data["stop"]["frame"]["name"] == "demo::show", shown.text
    # lldb 16 shows an Option as `{}`, Some and None alike; the variant is read from memory
    assert (await dbg.ok("evaluate", expression="some")).text.strip().startswith("Some(7)")
    assert (await dbg.ok("evaluate", expression="none")).text.strip().startswith("None")
    assert (await dbg.ok("evaluate", expression="first")).text.strip().startswith("Some(0x")
    # Rust's `.` through a reference, and a Vec's item (lldb's own parser refuses both)
    assert (await dbg.ok("evaluate", expression="item.tags[1]")).text.strip().startswith('"y"')

    launched = await dbg.ok("continue")
    value = {v["name"]: v["value"].strip() for v in await _locals(dbg)}
    assert (value["named"], value["unnamed"]) == ('Some("hi")', "None"), value
    assert launched.data["stop"]["frame"]["name"] == "demo::main", launched.text
    stack = await dbg.ok("stack")
    found = {v["name"]: v for v in await _locals(dbg)}
    assert found["greeting"]["value"].strip() == '"héllo wörld"', found
    assert found["squares"]["value"].strip() == "size=5", found
    assert found["counts"]["value"].strip() == "size=1", found
    items = await dbg.ok("variables", reference=found["squares"]["reference"])
    assert [v["value"] for v in items.data["variables"]] == ["1", "4", "9", "16", "25"]
    assert (await dbg.ok("evaluate", expression="greeting")).text.strip().startswith('"héllo')
    assert not any(re.search(r"::h[0-9a-f]{16}", f["name"]) for f in stack.data["frames"])
    done = await dbg.ok("continue")
    assert done.data["outcome"] == "exited", done.text


async def test_semver_test_binary_under_lldb(tmp_path: Path, open_debugger) -> None:
    require_lldb()
    root = corpus_copy("semver", tmp_path)
    root.chmod(0o755)
    for path in root.rglob("*"):
        path.chmod(0o755 if path.is_dir() else 0o644)
    # The optional serde dependency cannot be resolved offline, and is not used by the tests.
    manifest = root / "Cargo.toml"
    manifest.write_text(re.sub(r"\n\[dependencies\.serde\][^\[]*", "\n", manifest.read_text()))
    _cargo(root, "test", "--no-run", "--test", "test_version")
    binary = next((root / "target/debug/deps").glob("test_version-*[!.d]"))
    shutil.copy(binary, root / "test_version")
    util = root / "tests/util/mod.rs"
    dbg = await open_debugger(root)
    await dbg.ok(
        "breakpoints",
        file="tests/util/mod.rs",
        lines=[line_of(util, "Version::parse(text).unwrap()")],
    )
    launched = await dbg.ok(
        "launch", program="test_version", args=["test_parse", "--test-threads=1"]
    )
    stop = launched.data["stop"]
    assert stop["reason"] == "breakpoint", launched.text
    assert stop["frame"]["name"] == "test_version::util::version", launched.text
    stack = await dbg.ok("stack")
    assert not any(re.search(r"::h[0-9a-f]{16}", f["name"]) for f in stack.data["frames"])
    text = await dbg.ok("evaluate", expression="text")
    assert text.text.strip().startswith('"'), text.text  # a &str reads as its characters
    await dbg.ok("continue")
