"""The Python API's contract: `run.call` never raises for anything the caller did wrong, and an
approver that breaks is a refusal (fail closed). Errors are worded for the model: they name the
argument, cap what they echo and never show the absolute root."""

from __future__ import annotations

import os
from typing import Any

import pytest

import livetools_testkit
from livetools import ApprovalRequest, Host, Ports
from livetools.faces import harness


def host() -> Host:
    return Host(
        plugins=[("testkit", livetools_testkit), (harness.PLUGIN_NAME, harness)],
        entry_points=False,
    )


@pytest.mark.parametrize(
    "args",
    [1, "x", [["a", "b"]], [], 2.5, True, ("a",), {1: "x"}, {("a",): 1}],
    ids=repr,
)
async def test_wrong_shaped_arguments_are_usage_errors(tmp_path, args: Any):
    async with host().open_run(tmp_path) as run:
        out = await run.call("echo", args)
        assert out.is_error and out.data == {"error": "usage"}, out.text
        assert "echo" in out.text and "TypeError" not in out.text


@pytest.mark.parametrize("name", [1, None, ["echo"], {"a": 1}, "x" * 10_000])
async def test_wrong_tool_names_are_usage_errors(tmp_path, name: Any):
    async with host().open_run(tmp_path) as run:
        out = await run.call(name, {})
        assert out.is_error and "unknown tool" in out.text and len(out.text) < 1000


async def test_unhashable_surface_is_a_usage_error(tmp_path):
    async with host().open_run(tmp_path) as run:
        out = await run.call("echo", {"text": "x"}, surface=["agent"])  # type: ignore[arg-type]
        assert out.is_error and "surface" in out.text


async def test_lone_surrogate_names_the_field(tmp_path):
    async with host().open_run(tmp_path) as run:
        out = await run.call("write", {"path": "a.txt", "content": "ok \ud800 no"})
        assert out.is_error and out.text.startswith("invalid arguments for write: content:")
        assert "lone surrogate" in out.text and "character 4" in out.text
        nested = await run.call("echo", {"text": "x", "deep": [{"k": ["\udfff"]}]})
        assert nested.is_error  # unknown argument or the surrogate: either names the field
        assert "deep" in nested.text
        assert not (tmp_path / "a.txt").exists()


@pytest.mark.parametrize("sync", [True, False])
async def test_an_approver_that_raises_refuses(tmp_path, sync: bool):
    def broken(request: ApprovalRequest) -> bool:
        raise RuntimeError("card renderer crashed")

    async def broken_async(request: ApprovalRequest) -> bool:
        raise ValueError("socket closed")

    ports = Ports(approve=broken if sync else broken_async)
    async with host().open_run(tmp_path, ports=ports) as run:
        out = await run.call("write", {"path": "a.txt", "content": "x"})
        assert out.is_error and out.text.startswith("approval failed: ")
        assert ("card renderer crashed" if sync else "socket closed") in out.text
        assert not (tmp_path / "a.txt").exists()
        assert not (await run.call("echo", {"text": "read tools need no approval"})).is_error


async def test_internal_failure_keeps_the_generic_form_without_the_root(tmp_path):
    async with host().open_run(tmp_path) as run:
        tool = run.registry.get("echo")
        assert tool is not None

        async def boom(ctx: Any, args: Any) -> str:
            raise OSError(f"disk says no at {run.root.resolve()}/x")

        run.registry._tools["echo"] = type(tool)(**{**tool.__dict__, "handler": boom})
        out = await run.call("echo", {"text": "x"})
        assert out.is_error and out.text.startswith("echo failed: OSError: disk says no at ./x")
        assert str(tmp_path) not in out.text


# -- errors of the path arguments (write/edit of the harness; the same resolve_path for all) --


async def errors(tmp_path, tool: str, **args: Any) -> str:
    async with host().open_run(tmp_path) as run:
        out = await run.call(tool, args)
    assert out.is_error, out.text
    assert str(tmp_path.resolve()) not in out.text and str(tmp_path) not in out.text
    assert "Error:" not in out.text and "failed:" not in out.text, out.text
    assert len(out.text) < 600, out.text
    return out.text


async def test_huge_path_is_refused_briefly(tmp_path):
    for tool, extra in (("write", {"content": "x"}), ("edit", {"old": "a", "new": "b"})):
        text = await errors(tmp_path, tool, path="x" * 100_000, **extra)
        assert text.startswith("path: ") and "at most 255 bytes" in text
        deep = "/".join(["d" * 200] * 30)
        assert "4096-byte limit" in await errors(tmp_path, tool, path=deep, **extra)


async def test_symlink_loop_is_named_relative(tmp_path):
    os.symlink("b", tmp_path / "a")
    os.symlink("a", tmp_path / "b")
    text = await errors(tmp_path, "write", path="a/x.py", content="x")
    assert text.startswith("path: 'a/x.py' runs into a symbolic link loop")


async def test_edit_on_a_directory_says_what_it_takes(tmp_path):
    (tmp_path / "src").mkdir()
    text = await errors(tmp_path, "edit", path="src", old="a", new="b")
    assert text == "path: src is a directory; edit takes the path of a file"
    text = await errors(tmp_path, "write", path="src", content="x")
    assert text == "path: src is a directory; write takes the path of a file"


async def test_outside_root_echo_is_capped(tmp_path):
    text = await errors(tmp_path, "write", path="../" + "y" * 250, content="x")
    assert "outside the project root" in text and "more characters" in text


async def test_nul_and_missing(tmp_path):
    assert "NUL" in await errors(tmp_path, "write", path="a\x00b", content="x")
    text = await errors(tmp_path, "edit", path="nope/a.py", old="a", new="b")
    assert text == "path: no such file or directory: nope/a.py"
