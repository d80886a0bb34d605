"""The host side of `tool()` / `tools()` in a cell: each request re-enters the run's registry
through `ctx.call`, i.e. with the surface and approval of the call that ran the cell, so a cell
can do exactly what its caller could and no more."""

from __future__ import annotations

import asyncio
import base64
from collections.abc import Awaitable, Callable
from typing import Any

from livetools import CallContext, Result

MAX_BATCH = 64
CONCURRENCY = 16


def reply_of(result: Result) -> dict[str, Any]:
    return {
        "ok": not result.is_error,
        "text": result.text,
        "data": result.data,
        "images": [base64.b64encode(png).decode("ascii") for png in result.images],
    }


def failure(text: str) -> dict[str, Any]:
    return {"ok": False, "text": text, "data": None, "images": []}


def make_bridge(ctx: CallContext) -> Callable[[dict[str, Any]], Awaitable[dict[str, Any]]]:
    limit = asyncio.Semaphore(CONCURRENCY)

    async def one(call: Any) -> dict[str, Any]:
        if not (isinstance(call, list) and len(call) == 2):
            return failure(f"a tool call is [name, args], got {call!r:.100}")
        name, args = call
        if not isinstance(name, str) or not isinstance(args, dict):
            return failure(
                f"tool(name, args) needs a str name and a dict of args, got {call!r:.100}"
            )
        async with limit:
            return reply_of(await ctx.call(name, args))

    async def answer(payload: dict[str, Any]) -> dict[str, Any]:
        if "call" in payload:
            return await one(payload["call"])
        if "batch" in payload:
            batch = payload["batch"]
            if not isinstance(batch, list):
                return {"results": [failure("tools() takes a list of (name, args) pairs")]}
            if len(batch) > MAX_BATCH:
                too_many = failure(f"tools() takes at most {MAX_BATCH} calls; split the batch")
                return {"results": [too_many] * len(batch)}
            return {"results": list(await asyncio.gather(*(one(c) for c in batch)))}
        return failure(f"unknown bridge request {sorted(payload)!r}")

    return answer
