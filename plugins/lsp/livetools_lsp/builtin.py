"""The built-in server specs, offered through the family hook like any third party's."""

from __future__ import annotations

from .spec import ServerSpec

PY_EXT = {".py": "python", ".pyi": "python"}
PY_MARKERS = (
    "pyproject.toml",
    "setup.cfg",
    "setup.py",
    "requirements.txt",
    "pyrightconfig.json",
    "Pipfile",
)
TS_EXT = {
    ".ts": "typescript",
    ".tsx": "typescriptreact",
    ".mts": "typescript",
    ".cts": "typescript",
    ".js": "javascript",
    ".jsx": "javascriptreact",
    ".mjs": "javascript",
    ".cjs": "javascript",
}
TS_MARKERS = ("tsconfig.json", "jsconfig.json", "package.json")
C_EXT = {
    ".c": "c",
    ".h": "c",
    ".cc": "cpp",
    ".cpp": "cpp",
    ".cxx": "cpp",
    ".hpp": "cpp",
    ".hh": "cpp",
    ".hxx": "cpp",
    ".m": "objective-c",
    ".mm": "objective-cpp",
}

# Only how far the server looks; its checking mode stays its own default (or the project's config),
# so `diagnostics` agrees with the server's CLI. Measured on click: pushing "standard" gave 1 and 4
# errors where `basedpyright --outputjson` reports 7 and 9. pyenv.py restores the search-path
# defaults any pushed `analysis` section would drop.
_PYRIGHT_ANALYSIS = {"diagnosticMode": "openFilesOnly"}

# Logged once the workspace's files are enumerated: a references answer before it searched only
# the open files (click: 1 of 286).
PYRIGHT_READY = r"Found \d+ source files?|No source files found"

BUILTIN: tuple[ServerSpec, ...] = (
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
        id="typescript-language-server",
        command=("typescript-language-server", "--stdio"),
        extensions=TS_EXT,
        markers=TS_MARKERS,
        # Rename the declaration, not a local alias ("import { A as B }") at the use site.
        init_options={"preferences": {"providePrefixAndSuffixTextForRename": False}},
        checker=("tsc", "--noEmit", "--pretty", "false"),
        checker_requires=("tsconfig.json",),
        warmup=12.0,
        await_progress=True,
        unchanged_after=1.5,
        first_diagnostics=15.0,
    ),
    ServerSpec(
        id="tsgo",
        command=("tsc", "--lsp", "--stdio"),
        # `--version` passes on TypeScript 5/6 too, whose tsc has no --lsp (TS5023, exit 1).
        # TypeScript 7 exits 0 at the end of its (empty) stdin; its `--lsp --help` exits 2.
        probe=("tsc", "--lsp", "--stdio"),
        extensions=TS_EXT,
        markers=TS_MARKERS,
        checker=("tsc", "--noEmit", "--pretty", "false"),
        checker_requires=("tsconfig.json",),
    ),
    ServerSpec(
        id="clangd",
        command=("clangd", "--log=error"),
        extensions=C_EXT,
        markers=("compile_commands.json", "compile_flags.txt", ".clangd"),
        checker=("clangd", "--log=error", "--check={file}"),
        rename_blockers=("pp_file_not_found",),
        rename_requires=("compile_commands.json",),
        symbol_limit=100,  # --limit-results default
    ),
    ServerSpec(
        id="gopls",
        command=("gopls",),
        probe=("gopls", "version"),
        extensions={".go": "go"},
        markers=("go.work", "go.mod"),
        checker=("go", "vet", "./..."),
        symbol_limit=100,
    ),
    ServerSpec(
        id="rust-analyzer",
        command=("rust-analyzer",),
        extensions={".rs": "rust"},
        markers=("Cargo.toml",),
        checker=("cargo", "check", "--quiet", "--message-format=short"),
        warmup=15.0,
        first_diagnostics=20.0,
    ),
    ServerSpec(
        id="dart",
        command=("dart", "language-server", "--protocol=lsp"),
        extensions={".dart": "dart"},
        markers=("pubspec.yaml",),
        checker=("dart", "analyze"),
    ),
    ServerSpec(
        id="bash-language-server",
        command=("bash-language-server", "start"),
        extensions={".sh": "shellscript", ".bash": "shellscript"},
        checker=("shellcheck", "-f", "gcc", "{file}"),
    ),
)
