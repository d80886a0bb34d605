"""Every tool of the agent surface together — all six families, vibe on, a human attached, plus the
faces' write/edit — costs the model less than 10 KB of compact JSON before the first call."""

from __future__ import annotations

import json

import pytest

from livetools import Host, Ports
from livetools.faces import harness
from livetools.questions import Answer, Question

BUDGET = 10 * 1024
FAMILIES = "lsp,astgrep,debug,eval,ask,vibe"


async def no_answer(question: Question) -> Answer:
    return Answer(skipped=True)


async def test_agent_surface_fits_the_budget(tmp_path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("LIVETOOLS_PLUGINS", FAMILIES)
    host = Host(plugins=[(harness.PLUGIN_NAME, harness)])
    ports = Ports(question=no_answer, target_space="test")
    async with host.open_run(tmp_path, ports=ports, options={"vibe": True}) as run:
        schemas = run.schemas("agent", format="mcp")
    size = len(json.dumps(schemas, separators=(",", ":")))
    per_tool = {s["name"]: len(json.dumps(s, separators=(",", ":"))) for s in schemas}
    assert size < BUDGET, f"{size} bytes: {per_tool}"


def test_optional_arguments_are_spelled_plainly():
    """`X | None = None` reaches the model as `X` (omitting it already means none); a real union
    keeps its `anyOf`, and validation still takes an explicit null."""
    from pydantic import BaseModel

    from livetools.tools import compact_schema

    class Args(BaseModel):
        a: str | None = None
        b: int | str | None = None
        c: str | None = "x"

    props = compact_schema(Args.model_json_schema())["properties"]
    assert props["a"] == {"type": "string"}
    assert "anyOf" in props["b"] and "anyOf" in props["c"]
    assert Args.model_validate({"a": None}).a is None
