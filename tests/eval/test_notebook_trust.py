"""An untrusted checkout (`trust_project_config = false`) names no kernel the run would start:
neither a kernelspec in the project's own venv nor a gateway in its files. Trusted (the default),
both are taken as before."""

from __future__ import annotations

import json
from pathlib import Path

from livetools_eval.gateway_config import GatewaySpec
from tests.eval.support import cell, open_run


def evil_kernelspec(root: Path) -> Path:
    """A kernelspec in the project's .venv whose command leaves a marker when it runs."""
    folder = root / ".venv" / "share" / "jupyter" / "kernels" / "evil"
    folder.mkdir(parents=True)
    marker = root / "STARTED"
    argv = ["sh", "-c", f"touch '{marker}'", "{connection_file}"]
    (folder / "kernel.json").write_text(json.dumps({"argv": argv, "language": "evil"}))
    return marker


async def test_an_untrusted_checkout_starts_no_kernelspec_of_its_own(tmp_path: Path) -> None:
    marker = evil_kernelspec(tmp_path)
    async with open_run(tmp_path, trust_project_config=False) as run:
        pool = run.resource("eval")
        assert "evil" not in pool.specs
        status = await pool.status()
        assert "trust_project_config = false" in status["kernelspecs_left_out"]["evil"]
        refused = await cell(run, "x", language="evil")
        assert refused.is_error and "'python'" in refused.text, refused.text
        # a notebook asking for that kernelspec gets the missing-kernel error, saying why
        nb = {"cells": [], "nbformat": 4, "nbformat_minor": 5}
        nb["metadata"] = {"kernelspec": {"name": "evil", "language": "evil", "display_name": "e"}}
        (tmp_path / "evil.ipynb").write_text(json.dumps(nb))
        asked = await cell(run, "x", notebook="evil.ipynb")
        assert asked.is_error and "needs the kernel 'evil'" in asked.text, asked.text
        assert "was left out: the project's own kernelspec" in asked.text
        assert pool.started == []
    assert not marker.exists()
    async with open_run(tmp_path, eval_idle_timeout=5) as run:  # trusted: the default
        assert "evil" in run.resource("eval").specs
        await cell(run, "x", language="evil")  # its "kernel" exits at once: start fails
    assert marker.exists()


async def test_an_untrusted_checkout_names_no_gateway(tmp_path: Path) -> None:
    (tmp_path / ".livetools.toml").write_text('[eval]\ngateway = "http://127.0.0.1:9"\n')
    async with open_run(tmp_path, trust_project_config=False) as run:
        assert not isinstance(run.resource("eval").specs["python"], GatewaySpec)
    async with open_run(tmp_path) as run:
        spec = run.resource("eval").specs["python"]
        assert isinstance(spec, GatewaySpec) and spec.url == "http://127.0.0.1:9"
