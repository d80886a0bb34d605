"""Python servers, the first usable answering: basedpyright, then pyright, pylsp,
jedi-language-server, ty, pyrefly; ruff's server lints beside whichever answers."""

from __future__ import annotations

from ..spec import ServerSpec

PY_EXT = {".py": "python", ".pyi": "python"}
PY_MARKERS = (
    "pyproject.toml",
    "setup.cfg",
    "setup.py",
    "requirements.txt",
    "pyrightconfig.json",
    "Pipfile",
)
# `NAME:TEXT` matches a file NAME that holds TEXT.
RUFF_MARKERS = ("ruff.toml", ".ruff.toml", "pyproject.toml:[tool.ruff")
# Only how far the server looks; its checking mode stays its own default (or the project's config),
# so `diagnostics` agrees with the server's CLI. Measured on click: pushing "standard" gave 1 and 4
# errors where `basedpyright --outputjson` reports 7 and 9. pyenv.py restores the search-path
# defaults any pushed `analysis` section would drop.
_PYRIGHT_ANALYSIS = {"diagnosticMode": "openFilesOnly"}

# Logged once the workspace's files are enumerated: a references answer before it searched only
# the open files (click: 1 of 286).
PYRIGHT_READY = r"Found \d+ source files?|No source files found"

SERVERS: tuple[ServerSpec, ...] = (
    ServerSpec(
        id="basedpyright",
        command=("basedpyright-langserver", "--stdio"),
        probe=("basedpyright", "--version"),
        extensions=PY_EXT,
        markers=PY_MARKERS,
        settings={"basedpyright": {"analysis": _PYRIGHT_ANALYSIS}},
        checker=("basedpyright",),
        python_env=True,
        ready_log=PYRIGHT_READY,
    ),
    ServerSpec(
        id="pyright",
        command=("pyright-langserver", "--stdio"),
        probe=("pyright", "--version"),
        extensions=PY_EXT,
        markers=PY_MARKERS,
        settings={"python": {"analysis": _PYRIGHT_ANALYSIS}},
        checker=("pyright",),
        python_env=True,
        ready_log=PYRIGHT_READY,
    ),
    ServerSpec(
        id="pylsp",
        command=("pylsp",),
        extensions=PY_EXT,
        markers=PY_MARKERS,
        settings={"pylsp": {"plugins": {"pycodestyle": {"enabled": False}}}},
        checker=("pyflakes", "."),
    ),
    ServerSpec(
        id="jedi-language-server",
        command=("jedi-language-server",),
        extensions=PY_EXT,
        markers=PY_MARKERS,
    ),
    ServerSpec(
        id="ty",
        command=("ty", "server"),
        extensions=PY_EXT,
        markers=PY_MARKERS,
        checker=("ty", "check", "--output-format", "concise"),
    ),
    ServerSpec(
        id="pyrefly",
        # Its default indexes in the background and answers meanwhile from what is indexed so
        # far: `str` references on click were 294 at first, 895 five seconds later.
        command=("pyrefly", "lsp", "--indexing-mode", "lazy-blocking"),
        extensions=PY_EXT,
        markers=PY_MARKERS,
        checker=("pyrefly", "check", "--output-format", "min-text"),
    ),
    # Lints only where the project configures ruff (its defaults elsewhere would be noise).
    ServerSpec(
        id="ruff",
        command=("ruff", "server"),
        extensions=PY_EXT,
        markers=RUFF_MARKERS,
        checker=("ruff", "check", "--output-format", "concise"),
        linter=True,
    ),
)
