"""A resource is a live thing a plugin connects for one run. Connecting is cheap; whatever
process stands behind it starts at call time and stops at `aclose()`."""

from __future__ import annotations

from typing import Any


class Resource:
    """Base class for resources. Subclasses set `key` (what tools name in `Tool.resource`)."""

    key: str = ""

    async def status(self) -> dict[str, Any]:
        """What `livetools status` shows: usable or not and why, per server/adapter/kernel."""
        return {}

    async def aclose(self) -> None:
        """Stop everything this resource started. Must be bounded and idempotent."""
