"""Calls generated from the tool schemas, as a hostile or buggy model sends them, through the
Python API, `livetools session` and `livetools serve`: lone surrogates, NUL, deep nesting, huge
and wrong-typed values, missing and unknown arguments, and lines that are no request at all.

What must hold: 0 face deaths, 0 unanswered requests, and 0 raw Python exceptions in results (the
generic "<tool> failed: <Type>: ..." is for true internal bugs, so it counts too). The figures are
printed (`pytest -s`). Cheap actions only: the generator never restarts a kernel or a language
server, never launches or attaches a debuggee and never spawns a worker, so the whole file stays
around a minute on a loaded machine; what those paths do with bad input is each family's test."""

from __future__ import annotations

import asyncio
import json
import queue
import random
import re
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from livetools import Host, Ports
from livetools.faces import harness
from livetools.questions import Answer, Question
from tests.support import plugin_env

FAMILIES = "lsp,astgrep,debug,eval,vibe,ask"
SEED = 20261202
API_CALLS = 3000
SESSION_CALLS = 1500
SERVE_CALLS = 1500
SLOW = 10.0  # seconds: an answer slower than this is printed
WAIT = 120.0  # seconds any single answer may take on a loaded machine (a server's first start)

# Enum values that are expensive (a process start per call) or spawn something: left out, along
# with the arguments that would make a call do real heavy work.
EXPENSIVE = {
    ("lsp", "action"): {"reload"},
    ("debug", "op"): {"launch", "attach"},
}
NEVER_TRUE = {("eval", "reset")}
SKIPPED_TOOLS = {"vibe_spawn", "ask_user"}

HOSTILE_STRINGS = [
    "\ud800",
    "a\udfffb",
    "nul\x00byte",
    "\x00",
    "A" * 100_000,
    "../" * 50 + "etc/passwd",
    "/",
    "*",
    "",
    " ",
    "\n" * 40,
    "é中\u202e",
    "$A",
    "$$$",
    "print($A)",
    "a.py",
    "pkg/b.ts",
    "x" * 5000 + "/" + "y" * 300,
]
VALID_STRINGS = ["a.py", "x", "print", "main", "1", "print($A)", "x = 1", "python"]
# Arguments a validator checks beyond their type: valid values often enough that the call runs.
FIELD_VALID = {
    ("eval", "description"): ["run a small cell to check things"],
    ("eval", "code"): [
        "1 + 1",
        "x = 21\nx * 2",
        "raise ValueError('no')",
        "import os; os.getpid()",
        "print('\\ud800')",
    ],
}
HUGE_INTS = [2**63, -(2**63) - 1, 10**100, -1, 0, 1]


def nested(depth: int) -> Any:
    value: Any = []
    for _ in range(depth):
        value = [value]
    return value


WRONG_TYPED: list[Any] = [
    None,
    True,
    1.5,
    float("nan"),
    float("inf"),
    {"a": {"b": "\ud800"}},
    [1, "2", None],
    nested(300),
    {"$ref": "#"},
    list(range(2000)),
]


class Generator:
    """Arguments for one tool from its JSON schema: mostly valid-looking, often hostile."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)

    def string(self, enum: list[Any] | None = None) -> Any:
        r = self.rng.random()
        if enum:
            if r < 0.6:
                return self.rng.choice(enum)
            if r < 0.7:
                return self.rng.choice(enum).upper()
        if r < 0.5:
            return self.rng.choice(HOSTILE_STRINGS)
        if r < 0.85:
            return self.rng.choice(VALID_STRINGS)
        return self.rng.choice(WRONG_TYPED + HUGE_INTS)

    def value(self, tool: str, name: str, schema: dict[str, Any]) -> Any:
        kind = schema.get("type")
        r = self.rng.random()
        if (tool, name) in FIELD_VALID and r < 0.5:
            return self.rng.choice(FIELD_VALID[tool, name])
        if kind == "string" or "enum" in schema:
            enum = [e for e in schema.get("enum", []) if e not in EXPENSIVE.get((tool, name), ())]
            return self.string(enum or None)
        if kind == "integer":
            if r < 0.5:
                return self.rng.choice([1, 2, 3, 5, 10])
            if r < 0.8:
                return self.rng.choice(HUGE_INTS)
            return self.rng.choice(WRONG_TYPED + HOSTILE_STRINGS[:4])
        if kind == "number":
            return self.rng.choice([0.1, 1, -1, 1e308, float("nan"), "5", None, 10**100])
        if kind == "boolean":
            if (tool, name) in NEVER_TRUE:
                return self.rng.choice([False, "true", 1, None, "\ud800"])
            return self.rng.choice([True, False, "yes", 0, None])
        if kind == "array":
            if r < 0.4:
                items = schema.get("items", {})
                return [self.value(tool, name, items) for _ in range(self.rng.randint(0, 4))]
            if r < 0.6:
                return self.rng.choice([list(range(5000)), nested(200), [["\ud800"]]])
            return self.rng.choice(WRONG_TYPED + HOSTILE_STRINGS[:6])
        if kind == "object" or "properties" in schema:
            return self.args(tool, schema)
        return self.rng.choice(WRONG_TYPED + HOSTILE_STRINGS)

    def args(self, tool: str, schema: dict[str, Any]) -> dict[str, Any]:
        props: dict[str, Any] = schema.get("properties", {})
        required = set(schema.get("required", []))
        out: dict[str, Any] = {}
        for name, sub in props.items():
            if name in required or self.rng.random() < 0.5:
                out[name] = self.value(tool, name, sub)
        r = self.rng.random()
        if r < 0.05 and out:
            out.pop(self.rng.choice(sorted(out)))  # a required argument missing
        elif r < 0.1:
            out[self.rng.choice(["\ud800", "extra", "x" * 300, ""])] = 1  # unknown argument
        return out

    def call(self, schemas: list[dict[str, Any]]) -> tuple[str, Any]:
        r = self.rng.random()
        if r < 0.03:
            return self.rng.choice(["nope", "\ud800", "", "lsp\x00"]), {}
        tool = self.rng.choice(schemas)
        name = tool["name"]
        if name in EXPENSIVE_WHOLE and self.rng.random() < 0.9:
            tool = self.rng.choice([s for s in schemas if s["name"] not in EXPENSIVE_WHOLE])
            name = tool["name"]
        if r < 0.06:
            return name, self.rng.choice([[1], "x", 1, None, nested(100)])  # args not an object
        return name, self.args(name, tool["parameters"])


# Tools whose every valid call does real work in a live process; picked ten times less often.
EXPENSIVE_WHOLE = {"lsp_rename", "eval"}


# -- classifying a result ---------------------------------------------------------------------

GENERIC = re.compile(r"^\S+ failed: [A-Za-z_.]*(Error|Exception|Interrupt|Exit)\b")
BARE = re.compile(r"^[A-Z][A-Za-z]*(Error|Exception): ")
TRACEBACK = "Traceback (most recent call last)"
# These tools show a program's own output (a cell's traceback, a debuggee's exception).
SHOWS_PROGRAM_OUTPUT = {"eval", "debug"}


def is_raw(tool: str, text: str) -> bool:
    if GENERIC.search(text):
        return True
    if tool in SHOWS_PROGRAM_OUTPUT:
        return False
    return bool(BARE.search(text)) or TRACEBACK in text


@dataclass
class Tally:
    face: str
    calls: int = 0
    answered: int = 0
    deaths: int = 0
    raw: list[tuple[str, Any, str]] = field(default_factory=list)
    ok: Counter[str] = field(default_factory=Counter)
    seconds: float = 0.0

    def record(self, tool: str, args: Any, text: str, ok: bool = False) -> None:
        self.answered += 1
        self.ok[tool] += ok
        if is_raw(tool, text):
            self.raw.append((tool, _short(args), text[:300]))

    def check(self) -> None:
        print(
            f"\nfuzz {self.face}: {self.calls} calls, {self.answered} answered, {self.deaths} "
            f"face deaths, {len(self.raw)} raw exceptions, {self.seconds:.1f}s\n"
            f"  ok results per tool: {dict(self.ok)}"
        )
        kinds: dict[tuple[str, str], tuple[int, str]] = {}
        for tool, args, text in self.raw:
            kind = (tool, re.sub(r"[:(].*", "", text.split(": ", 2)[-2] if ": " in text else text))
            count, example = kinds.get(kind, (0, ""))
            kinds[kind] = (count + 1, example or f"{args} -> {text[:200]}")
        for (tool, kind), (count, example) in sorted(kinds.items()):
            print(f"  RAW x{count} {tool} {kind}: {example}")
        assert self.deaths == 0
        assert self.answered == self.calls, f"{self.calls - self.answered} unanswered"
        assert not self.raw, f"{len(self.raw)} raw exceptions, first: {self.raw[:3]}"


def _short(value: Any) -> str:
    try:
        text = json.dumps(value, default=str)
    except (ValueError, RecursionError):
        text = repr(value)
    return text[:160]


def project(root: Path) -> Path:
    (root / "a.py").write_text("def main():\n    x = 1\n    print(x)\n\nmain()\n")
    (root / "pkg").mkdir()
    (root / "pkg" / "b.ts").write_text("export const b = (n: number) => n + 1;\n")
    (root / "pyproject.toml").write_text('[project]\nname = "fz"\nversion = "0"\n')
    return root


CLI = [sys.executable, "-m", "livetools.faces.cli"]


def schema_list(surface: str, root: Path, *extra: str) -> list[dict[str, Any]]:
    out = subprocess.run(
        [*CLI, "tools", "--format", "json", "--root", str(root), "--surface", surface, *extra],
        env=plugin_env(LIVETOOLS_PLUGINS=FAMILIES),
        capture_output=True,
        text=True,
        timeout=WAIT,
        check=True,
    )
    return [s for s in json.loads(out.stdout) if s["name"] not in SKIPPED_TOOLS]


def generated(seed: int, schemas: list[dict[str, Any]], count: int) -> Iterator[tuple[str, Any]]:
    gen = Generator(seed)
    for _ in range(count):
        yield gen.call(schemas)


def to_line(obj: Any) -> str:
    """JSON as a buggy client writes it: surrogates escaped, NaN as the bare word."""
    return json.dumps(obj, allow_nan=True)


# -- the faces ----------------------------------------------------------------------------------


@pytest.fixture(autouse=True)
def only_fuzzed_families(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LIVETOOLS_PLUGINS", FAMILIES)


async def skip_every_question(question: Question) -> Answer:
    return Answer(skipped=True)


async def test_fuzz_python_api(tmp_path: Path) -> None:
    root = project(tmp_path)
    tally = Tally("api")
    host = Host(plugins=[(harness.PLUGIN_NAME, harness)])
    start = time.monotonic()
    # A human who skips every question at once, so ask_user's arguments get fuzzed too.
    ports = Ports(question=skip_every_question, target_space="fuzz")
    async with host.open_run(root, ports=ports, options={"vibe": True}) as run:
        skipped = SKIPPED_TOOLS - {"ask_user"}
        schemas = [s for s in run.schemas("agent", "json") if s["name"] not in skipped]
        calls = list(generated(SEED, schemas, API_CALLS))
        for batch in range(0, len(calls), 8):
            chunk = calls[batch : batch + 8]
            tally.calls += len(chunk)

            async def one(name: str, args: Any) -> None:
                try:
                    async with asyncio.timeout(WAIT):
                        result = await run.call(name, args)
                except Exception as exc:  # run.call must not raise for anything a caller sends
                    tally.record(name, args, f"raised {type(exc).__name__}: {exc}")
                    return
                tally.record(name, args, result.text, not result.is_error)

            await asyncio.gather(*(one(n, a) for n, a in chunk))
    tally.seconds = time.monotonic() - start
    tally.check()


class LinePipe:
    """A face subprocess fed lines; its stdout lines arrive on a queue, read on a thread."""

    def __init__(self, argv: list[str], root: Path) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "livetools.faces.cli", *argv, "--root", str(root)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=plugin_env(LIVETOOLS_PLUGINS=FAMILIES),
        )
        self.lines: queue.Queue[bytes] = queue.Queue()
        threading.Thread(target=self._pump, daemon=True).start()

    def _pump(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line)
        self.lines.put(b"")

    def send(self, line: str) -> None:
        self.last = line[:300]
        self.sent_at = time.monotonic()
        assert self.proc.stdin is not None
        self.proc.stdin.write(line.encode("utf-8", "surrogatepass") + b"\n")
        self.proc.stdin.flush()

    def reply(self) -> dict[str, Any] | None:
        """The next output line as JSON; None when the face died or fell silent for WAIT."""
        try:
            line = self.lines.get(timeout=WAIT)
        except queue.Empty:
            print(f"\nno answer within {WAIT:g}s to: {self.last}")
            return None
        if not line:
            print(f"\nthe face died after: {self.last}")
            return None
        took = time.monotonic() - self.sent_at
        if took > SLOW:
            print(f"\nslow ({took:.1f}s): {self.last}")
        return json.loads(line.decode("utf-8"))  # must be valid UTF-8 and JSON

    def close(self) -> int:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        try:
            return self.proc.wait(timeout=WAIT)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()


BAD_LINES = ["[" * 100_000, "not json", "42", "[]", '{"tool": 1}', "\udcff\udcfe", "{}"]


def test_fuzz_session(tmp_path: Path) -> None:
    root = project(tmp_path)
    schemas = schema_list("agent,-ask_user", root)
    tally = Tally("session")
    pipe = LinePipe(["session", "--surface", "agent,-ask_user"], root)
    start = time.monotonic()
    rng = random.Random(SEED + 1)
    try:
        for i, (name, args) in enumerate(generated(SEED + 1, schemas, SESSION_CALLS)):
            tally.calls += 1
            if rng.random() < 0.05:
                pipe.send(rng.choice(BAD_LINES))
                name, args = "(bad line)", None
            else:
                pipe.send(to_line({"tool": name, "args": args, "id": i}))
            reply = pipe.reply()
            if reply is None:
                tally.deaths += 1
                break
            assert reply.get("id", i) == i or name == "(bad line)"
            tally.record(name, args, reply["text"], reply.get("ok") is True)
        rc = pipe.close()
        tally.deaths += rc != 0
    finally:
        if pipe.proc.poll() is None:
            pipe.proc.kill()
    tally.seconds = time.monotonic() - start
    tally.check()


INITIALIZE = {
    "jsonrpc": "2.0",
    "id": "init",
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "fuzz", "version": "0"},
    },
}


def test_fuzz_serve(tmp_path: Path) -> None:
    root = project(tmp_path)
    schemas = schema_list("agent", root, "--serve")
    tally = Tally("serve")
    pipe = LinePipe(["serve"], root)
    start = time.monotonic()
    rng = random.Random(SEED + 2)
    try:
        pipe.send(json.dumps(INITIALIZE))
        assert (init := pipe.reply()) is not None and init["id"] == "init"
        pipe.send(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        for i, (name, args) in enumerate(generated(SEED + 2, schemas, SERVE_CALLS)):
            tally.calls += 1
            if rng.random() < 0.05:
                pipe.send(rng.choice(BAD_LINES[:5]))  # each of these gets an id-less error
                name, args = "(bad line)", None
            else:
                params = {"name": name, "arguments": args}
                pipe.send(
                    to_line({"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": params})
                )
            reply = pipe.reply()
            if reply is None:
                tally.deaths += 1
                break
            if "error" in reply:  # a JSON-RPC error is an answer, never a raw exception
                assert reply["id"] in (i, None), reply
                tally.answered += 1
                continue
            assert reply["id"] == i, reply
            text = "".join(c.get("text", "") for c in reply["result"]["content"])
            tally.record(name, args, text, not reply["result"].get("isError"))
        rc = pipe.close()
        tally.deaths += rc != 0
    finally:
        if pipe.proc.poll() is None:
            pipe.proc.kill()
    tally.seconds = time.monotonic() - start
    tally.check()


def test_generator_covers_the_hostile_shapes() -> None:
    """The generator really sends what the issue lists: surrogates, NUL, deep, huge, wrong types."""
    schemas = [
        {
            "name": "t",
            "parameters": {
                "properties": {
                    "s": {"type": "string"},
                    "n": {"type": "integer"},
                    "l": {"type": "array", "items": {"type": "integer"}},
                },
                "required": ["s"],
            },
        }
    ]
    seen = json.dumps([a for _, a in generated(SEED, schemas, 3000)], allow_nan=True)
    for needle in ("\\ud800", "\\u0000", "[[[[[[[[[[", "A" * 1000, "NaN", str(10**100), "null"):
        assert needle in seen, needle
