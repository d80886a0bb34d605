"""Entry-point discovery without importlib.metadata.

Every `livetools` start (`tools`, `call`, a harness opening a run) discovers plugins, and
importing importlib.metadata costs about 45 ms here (email, zipfile, csv, ...), a fifth of the
start-up budget. The format is small: each installed distribution has a `<name>-<version>
.dist-info` (or `.egg-info`) folder on sys.path whose `entry_points.txt` is an INI file. As with
importlib.metadata, the first distribution of a name on sys.path wins.
"""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class EntryPoint:
    name: str
    value: str  # "module" or "module:attr"
    distribution: str
    version: str

    def load(self) -> object:
        module_name, _, attr = self.value.partition(":")
        target: object = importlib.import_module(module_name.strip())
        for part in filter(None, attr.strip().split(".")):
            target = getattr(target, part)
        return target


def _canonical(name: str) -> str:
    return name.replace("_", "-").replace(".", "-").lower()


def _group(text: str, group: str) -> Iterable[tuple[str, str]]:
    section = None
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line[0] in "#;":
            continue
        if line.startswith("[") and line.endswith("]"):
            section = line[1:-1].strip()
        elif section == group and "=" in line:
            name, _, value = line.partition("=")
            yield name.strip(), value.strip()


def entry_points(group: str, path: Iterable[str] | None = None) -> list[EntryPoint]:
    found: list[EntryPoint] = []
    seen: set[str] = set()
    for base in sys.path if path is None else path:
        try:
            entries = sorted(os.scandir(base or "."), key=lambda e: e.name)
        except OSError:
            continue  # a zip on sys.path, a folder that went away
        for entry in entries:
            stem, dot, suffix = entry.name.rpartition(".")
            if not dot or suffix not in ("dist-info", "egg-info"):
                continue
            dist, _, version = stem.partition("-")
            key = _canonical(dist)
            if key in seen:
                continue
            seen.add(key)
            try:
                with open(os.path.join(entry.path, "entry_points.txt"), encoding="utf-8") as f:
                    text = f.read()
            except OSError:
                continue
            found += [EntryPoint(n, v, key, version) for n, v in _group(text, group)]
    return found
