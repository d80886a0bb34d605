"""Where a run's kernels are when they are not on the host: a Jupyter Kernel Gateway or Enterprise
Gateway, given by URL and token.

Sources, later ones winning key by key: `[tool.livetools.eval]` in the root's pyproject.toml,
`[eval]` in the root's .livetools.toml, the environment (LIVETOOLS_EVAL_GATEWAY,
LIVETOOLS_EVAL_GATEWAY_TOKEN, LIVETOOLS_EVAL_GATEWAY_KERNELS), and the run options
`eval_gateway`, `eval_gateway_token`, `eval_gateway_kernels`. `eval_gateway=False` turns a
configured gateway off for the run. A bad value does not stop the run: the kernel's start fails
with a message naming the setting. Cheap: no network, no tornado."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from livetools.config import project_table
from livetools.options import OptionError

from .hookspecs import KernelSpec

ENV_URL = "LIVETOOLS_EVAL_GATEWAY"
ENV_TOKEN = "LIVETOOLS_EVAL_GATEWAY_TOKEN"
ENV_KERNELS = "LIVETOOLS_EVAL_GATEWAY_KERNELS"
DEFAULT_KERNELS = {"python": "python3"}
OPTION_NAMES = {
    "": "eval_gateway",
    "_token": "eval_gateway_token",
    "_kernels": "eval_gateway_kernels",
}
START_TIMEOUT = 120.0  # an Enterprise Gateway may start a pod for the kernel


@dataclass(frozen=True)
class GatewaySpec(KernelSpec):
    """A kernel started by a gateway: `url` (http or https, any base path), `token` (sent as
    `Authorization: token …`), `kernel_name` (the gateway's kernelspec). `token_from` and
    `url_from` name the settings they came from, for error messages. `problem`: a bad URL,
    reported when the kernel is needed; `notes`: settings that were ignored (shown by status)."""

    url: str = ""
    token: str = field(default="", repr=False)
    kernel_name: str = "python3"
    url_from: str = "eval_gateway"
    token_from: str = ""
    problem: str = ""
    notes: tuple[str, ...] = ()


@dataclass
class GatewaySettings:
    url: str = ""
    token: str = ""
    kernels: dict[str, str] = field(default_factory=lambda: dict(DEFAULT_KERNELS))
    url_from: str = ""
    token_from: str = ""
    problems: list[str] = field(default_factory=list)


def load(root: Path, options: Mapping[str, Any], environ: Mapping[str, str]) -> GatewaySettings:
    settings = GatewaySettings()
    # Untrusted, the project's files may not name a gateway: its kernels could call this run's
    # tools through the bridge (write files, start workers) as a program started here could.
    trusted = options.get("trust_project_config") is not False
    table = _toml_table(root / "pyproject.toml", ("tool", "livetools", "eval"), settings)
    if table and trusted:
        _apply(settings, table, "gateway", "pyproject.toml [tool.livetools.eval]")
    table = _toml_table(root / ".livetools.toml", ("eval",), settings)
    if table and trusted:
        _apply(settings, table, "gateway", ".livetools.toml [eval]")
    env = {
        key: environ[name]
        for key, name in (("", ENV_URL), ("_token", ENV_TOKEN), ("_kernels", ENV_KERNELS))
        if environ.get(name, "").strip()
    }
    if env:
        _apply(
            settings, env, "", "", names={"": ENV_URL, "_token": ENV_TOKEN, "_kernels": ENV_KERNELS}
        )
    opts = {k[len("eval_gateway") :]: v for k, v in options.items() if k.startswith("eval_gateway")}
    if opts.get("") is False:
        return GatewaySettings()
    if opts:
        _apply(settings, opts, "", "", names=OPTION_NAMES)
    return settings


def _apply(
    settings: GatewaySettings,
    table: Mapping[str, Any],
    prefix: str,
    where: str,
    names: Mapping[str, str] | None = None,
) -> None:
    """`table` keys are `gateway`, `gateway_token`, `gateway_kernels` (files) or the suffixes
    after the prefix (environment, options); `names` spell each setting for messages."""

    def name(suffix: str) -> str:
        if names and suffix in names:
            return names[suffix]
        return f"{prefix}{suffix} in {where}" if where else f"{prefix}{suffix}"

    get = {suffix: table.get(prefix + suffix) for suffix in ("", "_token", "_kernels")}
    if where:
        unknown = sorted(k for k in table if k.startswith(prefix) and k[len(prefix) :] not in get)
        if unknown:
            settings.problems.append(f"{where}: unknown key(s) {', '.join(unknown)}")
    if get[""] is not None:
        settings.url, settings.url_from = str(get[""]).strip(), name("")
    if get["_token"] is not None:
        settings.token, settings.token_from = str(get["_token"]).strip(), name("_token")
    kernels = get["_kernels"]
    if kernels is not None:
        parsed = _kernels(kernels)
        if parsed is None:
            settings.problems.append(
                f"{name('_kernels')}: expected a table language = kernelspec name, e.g. "
                '{python = "python3"} (environment: python=python3,r=ir)'
            )
        else:
            settings.kernels = parsed


def _kernels(value: Any) -> dict[str, str] | None:
    if isinstance(value, str):
        text = value.strip()
        if text.startswith("{"):
            try:
                value = json.loads(text)
            except ValueError:
                return None
        else:
            pairs = [p.partition("=") for p in text.split(",") if p.strip()]
            if not pairs or any(not sep for _, sep, _ in pairs):
                return None
            value = {k.strip(): v.strip() for k, _, v in pairs}
    if not isinstance(value, Mapping) or not value:
        return None
    if not all(isinstance(k, str) and isinstance(v, str) and k and v for k, v in value.items()):
        return None
    return {k.lower(): v for k, v in value.items()}


def _toml_table(path: Path, keys: tuple[str, ...], settings: GatewaySettings) -> dict[str, Any]:
    try:  # the parent table: `eval = false` (a run option, not a table) is not this file's error
        parent = project_table(path, keys[:-1])
    except OptionError as exc:
        settings.problems.append(str(exc))
        return {}
    data = (parent or {}).get(keys[-1])
    if not isinstance(data, dict):
        return {}
    return {k: v for k, v in data.items() if k.startswith("gateway")}


def url_problem(url: str, url_from: str) -> str:
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        return f"{url_from} is {url!r}, not an http(s) URL; give e.g. http://127.0.0.1:8888"
    return ""


def gateway_specs(settings: GatewaySettings) -> list[GatewaySpec]:
    """One spec per language the gateway serves (none when no URL is set)."""
    if not settings.url:
        return []
    problem = url_problem(settings.url, settings.url_from)
    from .installed import helpers_for

    specs = []
    for language, kernel_name in settings.kernels.items():
        helpers = None
        if language == "python":
            dialect = "ipython"
        elif language in ("javascript", "typescript"):
            dialect = "javascript"
        else:
            dialect, helpers = "none", helpers_for(language)
        specs.append(
            GatewaySpec(
                language=language,
                name=f"{kernel_name}@gateway",
                argv=(),
                dialect=dialect,  # type: ignore[arg-type]
                settle=0.02 if dialect == "javascript" else 0.0,
                start_timeout=START_TIMEOUT,
                helpers=helpers,
                origin=settings.url,
                url=settings.url.rstrip("/"),
                token=settings.token,
                kernel_name=kernel_name,
                url_from=settings.url_from,
                token_from=settings.token_from,
                problem=problem,
                notes=tuple(settings.problems),
            )
        )
    return specs
