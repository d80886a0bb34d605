"""C, C++ and Objective-C servers."""

from __future__ import annotations

from ..spec import ServerSpec

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

SERVERS: tuple[ServerSpec, ...] = (
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
        id="ccls",
        command=("ccls",),
        extensions=C_EXT,
        markers=("compile_commands.json", ".ccls"),
        # An empty cache directory keeps the index in memory: no .ccls-cache in the project.
        init_options={"cache": {"directory": ""}},
        rename_requires=("compile_commands.json",),
    ),
)
