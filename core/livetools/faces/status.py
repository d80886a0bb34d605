"""What a run has and why: one report for `livetools status` and the session's status line.

Per family its tools or why it has none, each server/adapter/kernel usable or why not, plugins
that failed or were blocked, the approval state (mode, counts, tools allowed for the rest of the
run) and the run's problems.
"""

from __future__ import annotations

import asyncio
from typing import Any

from ..host import Host
from ..options import describe
from ..run import Run

# Why a built-in family has no tools in a plain run: its resource needs a port or a mode the
# command line did not give. Third-party families fall back to the generic sentence.
ABSENT = {
    "ask": "no human attached (serve offers ask_user to clients that elicit; session asks "
    "through JSON lines; call asks on a terminal)",
    "vibe": "vibe mode is off (run with --vibe)",
}
ABSENT_DEFAULT = "no resource for this run (the plugin offered none)"


async def status_report(host: Host, run: Run) -> dict[str, Any]:
    resources = {}
    for key, resource in run.resources.items():
        try:
            resources[key] = await asyncio.wait_for(resource.status(), 30)
        except Exception as exc:
            resources[key] = {"usable": False, "error": f"{type(exc).__name__}: {exc}"}
    tools = run.tools("agent")
    plugins = []
    for p in host.plugins.loaded:
        names = [t.name for t in tools if t.plugin == p.name]
        entry: dict[str, Any] = {
            "name": p.name,
            "distribution": p.distribution,
            "version": p.version,
            "tools": names,
        }
        if p.name in run.unavailable:
            entry["unavailable"] = run.unavailable[p.name]
        elif not names:
            entry["reason"] = ABSENT.get(p.name, ABSENT_DEFAULT)
        plugins.append(entry)
    sandbox = run.sandbox
    return {
        "root": str(run.root),
        "sandbox": sandbox.describe() if sandbox is not None else None,
        "plugins": plugins,
        "failed": [{"name": f.name, "error": f.error} for f in host.plugins.failures],
        "blocked": sorted(set(host.plugins.blocked)),
        "resources": resources,
        "approval": run.approval.status(),
        "problems": run.problems,
        "unavailable": dict(run.unavailable),
        "options": describe(host.declared_options),
        "configured": _configured(run.option_sources),
    }


def _configured(sources: dict[str, str]) -> dict[str, str]:
    """Where each configured option came from, by option (a section's keys grouped under the
    section when they share a source: `lsp.servers.jdtls` rather than each of its keys)."""
    out: dict[str, str] = {}
    for name, label in sorted(sources.items()):
        parts = name.split(".")
        key = (
            ".".join(parts[:3])
            if parts[:2] in (["lsp", "servers"], ["debug", "adapters"])
            else name
        )
        out.setdefault(key, label)
    return out


def _verdict(info: dict[str, Any], name: str = "") -> str:
    if info.get("usable") is False:
        why = info.get("reason") or info.get("error") or "not usable"
        return f"no: {why}"
    extra = [
        f"{k} {v}"
        for k, v in info.items()
        if k not in ("usable", "reason", "root", "kernel", "command")
        and isinstance(v, str | int | float)
        and not isinstance(v, bool)
        and v not in ("", name)
    ]
    return "usable" + (f" ({', '.join(extra)})" if extra else "")


def _members(info: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """The servers / adapters / kernels inside a resource's status: any dict of dicts or list
    of dicts whose entries say `usable`."""
    out: list[tuple[str, dict[str, Any]]] = []
    for value in info.values():
        if isinstance(value, dict):
            out += [(str(k), v) for k, v in value.items() if isinstance(v, dict) and "usable" in v]
        elif isinstance(value, list):
            for item in value:
                if isinstance(item, dict) and "usable" in item:
                    name = next((v for v in item.values() if isinstance(v, str)), "?")
                    out.append((name, item))
    return out


def render_status(report: dict[str, Any]) -> str:
    """One line per family and one per server/adapter/kernel under it: usable, or why not."""
    lines = [f"root: {report['root']}"]
    if report.get("sandbox"):
        lines.append(f"sandbox: {report['sandbox']} (every process of the run starts there)")
    shown: set[str] = set()
    for p in report["plugins"]:
        what = ", ".join(p["tools"]) if p["tools"] else f"no tools: {p.get('reason')}"
        if p.get("unavailable"):
            what += f" (not available in this run: {p['unavailable']})"
        lines.append(f"{p['name']}: {what}")
        info = report["resources"].get(p["name"])
        if isinstance(info, dict):
            shown.add(p["name"])
            members = _members(info)
            if not members and info.get("usable") is not None:
                lines.append(f"  {_verdict(info)}")
            width = max((len(name) for name, _ in members), default=0)
            for name, member in members:
                lines.append(f"  {name:<{width}}  {_verdict(member, name)}")
    for key, info in report["resources"].items():
        if key not in shown:
            lines.append(f"{key}: {_verdict(info) if isinstance(info, dict) else 'connected'}")
    for f in report["failed"]:
        lines.append(f"{f['name']}: FAILED to load: {f['error']}")
    for name in report["blocked"]:
        lines.append(f"{name}: blocked by LIVETOOLS_DISABLE_PLUGINS / LIVETOOLS_PLUGINS")
    approval = report.get("approval")
    if approval:
        always = ", ".join(approval["always"]) or "none"
        lines.append(
            f"approval: {approval['mode']} (asked {approval['asked']}, refused "
            f"{approval['refused']}; allowed for the rest of this run: {always})"
        )
    for name, label in report.get("configured", {}).items():
        if label != "run option":
            lines.append(f"configured: {name} from {label}")
    lines += [f"problem: {problem}" for problem in report["problems"]]
    return "\n".join(lines)
